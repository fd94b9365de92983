/** Commands on clients: registration (operator route, CLI, demo client) and deletion. */
import type { EventStore, EventMetadata } from '../eventstore/port.ts';
import { handleCommand } from '../eventstore/commandHandler.ts';
import type { Position } from '../eventstore/position.ts';
import type { Runtime } from '../domain/runtime.ts';
import type { ClientCredentials } from '../../schemas/clients.ts';
import { formatAmount, parseAmount } from '../domain/money.ts';
import { clientDecider } from './decider.ts';
import { clientStream } from './events.ts';
import { generateApiKey, generateClientSecret, hashSecret } from './credentials.ts';

export interface RegisteredClient {
  credentials: ClientCredentials;
  position: Position;
}

export async function registerClient(
  store: EventStore, runtime: Runtime, name: string, metadata: EventMetadata, clientId = runtime.newId(),
): Promise<RegisteredClient> {
  const clientSecret = generateClientSecret();
  const key = generateApiKey();
  const [secretHash, apiKeyHash] = await Promise.all([hashSecret(clientSecret), hashSecret(key.secret)]);
  const result = await handleCommand(store, clientStream(clientId), clientDecider, {
    type: 'RegisterClient', clientId, name: name.trim(), apiKeyId: key.keyId, apiKeyHash, secretHash, now: runtime.now(),
  }, { ...metadata, clientId });
  return { credentials: { clientId, clientSecret, apiKey: key.apiKey, name: name.trim() }, position: result.position! };
}

export async function deleteClient(
  store: EventStore, runtime: Runtime, clientId: string, metadata: EventMetadata,
): Promise<Position> {
  const result = await handleCommand(store, clientStream(clientId), clientDecider,
    { type: 'DeleteClient', now: runtime.now() }, { ...metadata, clientId });
  return result.position!;
}

/** A USD amount as stored: canonical at the scale of USD. */
const inUsd = (amount: string) => formatAmount(parseAmount(amount, 'USD'), 'USD');

/** Sets the client's review thresholds (USD-equivalent decimal strings); another client's or none is not found. */
export async function setReviewThresholds(
  store: EventStore, runtime: Runtime, clientId: string, thresholds: { basicUsd: string; standardUsd: string }, metadata: EventMetadata,
): Promise<Position> {
  const result = await handleCommand(store, clientStream(clientId), clientDecider,
    { type: 'SetReviewThresholds', basicUsd: inUsd(thresholds.basicUsd), standardUsd: inUsd(thresholds.standardUsd), now: runtime.now() },
    { ...metadata, clientId });
  return result.position!;
}
