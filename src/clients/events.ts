/** Events of a client (tenant). Stream: `client-<clientId>`. Secrets appear only as hashes. */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const clientEventSchemas = {
  ClientRegistered: closed({
    clientId: textSchema,
    name: textSchema,
    /** Public part of the API key, used to find the client; the secret part is only stored hashed. */
    apiKeyId: textSchema,
    apiKeyHash: textSchema,
    secretHash: textSchema,
    registeredAt: instantSchema,
  }),
  ClientDeleted: closed({ clientId: textSchema, deletedAt: instantSchema }),
} as const;

type Schemas = typeof clientEventSchemas;

export interface ClientRegistered {
  type: 'ClientRegistered';
  data: FromSchema<Schemas['ClientRegistered']>;
}

export interface ClientDeleted {
  type: 'ClientDeleted';
  data: FromSchema<Schemas['ClientDeleted']>;
}

export type ClientEvent = ClientRegistered | ClientDeleted;

export const clientEvents: ContextEvents = { schemas: clientEventSchemas };

export const clientStream = (clientId: string) => `client-${clientId}`;
