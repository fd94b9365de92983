/** Commands on clients: registration (operator route, CLI, demo client) and deletion. */
import type { EventMetadata } from '../eventstore/port.ts';
import { runCommand, type CommandPorts } from '../eventstore/streams.ts';
import type { Runtime } from '../domain/runtime.ts';
import type { ClientCredentials } from '../../schemas/clients.ts';
import { formatAmount, parseAmount } from '../domain/money.ts';
import { clientStreamType } from './decider.ts';
import { clientStream } from './events.ts';
import { generateApiKey, generateClientSecret, hashSecret } from './credentials.ts';

/** Registers a client; answers its credentials (shown once) when the read models have it. */
export async function registerClient(
  ports: CommandPorts, runtime: Runtime, name: string, metadata: EventMetadata, clientId = runtime.newId(),
): Promise<ClientCredentials> {
  const clientSecret = generateClientSecret();
  const key = generateApiKey();
  const [secretHash, apiKeyHash] = await Promise.all([hashSecret(clientSecret), hashSecret(key.secret)]);
  await runCommand(ports, clientStreamType, clientStream(clientId), {
    type: 'RegisterClient', clientId, name: name.trim(), apiKeyId: key.keyId, apiKeyHash, secretHash, now: runtime.now(),
  }, { ...metadata, clientId });
  return { clientId, clientSecret, apiKey: key.apiKey, name: name.trim() };
}

export async function deleteClient(ports: CommandPorts, runtime: Runtime, clientId: string, metadata: EventMetadata): Promise<void> {
  await runCommand(ports, clientStreamType, clientStream(clientId), { type: 'DeleteClient', now: runtime.now() }, { ...metadata, clientId });
}

/** A USD amount as stored: canonical at the scale of USD. */
const inUsd = (amount: string) => formatAmount(parseAmount(amount, 'USD'), 'USD');

/** Sets the client's review thresholds (USD-equivalent decimal strings); another client's or none is not found. */
export async function setReviewThresholds(
  ports: CommandPorts, runtime: Runtime, clientId: string, thresholds: { basicUsd: string; standardUsd: string }, metadata: EventMetadata,
): Promise<void> {
  await runCommand(ports, clientStreamType, clientStream(clientId),
    { type: 'SetReviewThresholds', basicUsd: inUsd(thresholds.basicUsd), standardUsd: inUsd(thresholds.standardUsd), now: runtime.now() },
    { ...metadata, clientId });
}
