/**
 * The embedded mode's demo client, created on the first start so `npm start` is usable at once. Its id is
 * fixed and it is appended with `no_stream`, so only the very first start creates it; its credentials are
 * shown that one time and never again.
 */
import { deterministicId } from '../eventstore/deterministicId.ts';
import { WrongExpectedRevisionError } from '../eventstore/errors.ts';
import type { CommandPorts } from '../eventstore/streams.ts';
import type { Runtime } from '../domain/runtime.ts';
import { DomainError } from '../domain/errors.ts';
import type { ClientCredentials } from '../../schemas/clients.ts';
import { registerClient } from './handlers.ts';
import { clientStream } from './events.ts';

export const DEMO_CLIENT_ID = deterministicId('payments-ledger', 'demo-client');

/** The demo client's credentials, once the read models have it; null when it exists already. */
export async function ensureDemoClient(ports: CommandPorts, runtime: Runtime): Promise<ClientCredentials | null> {
  // Usual case first, without hashing credentials only to find the client exists.
  if ((await ports.storage.store.readStream(clientStream(DEMO_CLIENT_ID), { limit: 1 })).length > 0) return null;
  try {
    return await registerClient(ports, runtime, 'Demo merchant', { actor: 'system' }, DEMO_CLIENT_ID);
  } catch (error) {
    if (error instanceof DomainError || error instanceof WrongExpectedRevisionError) return null;
    throw error;
  }
}

export function describeCredentials(c: ClientCredentials): string {
  return [
    'Demo client created. These credentials are shown once; keep them:',
    `  clientId:     ${c.clientId}`,
    `  clientSecret: ${c.clientSecret}`,
    `  apiKey:       ${c.apiKey}`,
  ].join('\n');
}
