/** Events of a client (tenant). Stream: `client-<clientId>`. Secrets appear only as hashes. */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, textSchema } from '../../schemas/events/common.ts';
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
  /** The USD-equivalent amounts from which this client's payments are reviewed (BASIC and STANDARD payers). */
  ClientReviewThresholdsSet: closed({ clientId: textSchema, basicUsd: amountSchema, standardUsd: amountSchema, setAt: instantSchema }),
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

export interface ClientReviewThresholdsSet {
  type: 'ClientReviewThresholdsSet';
  data: FromSchema<Schemas['ClientReviewThresholdsSet']>;
}

export type ClientEvent = ClientRegistered | ClientDeleted | ClientReviewThresholdsSet;

export const clientEvents = { schemas: clientEventSchemas } satisfies ContextEvents;

export const clientStream = (clientId: string) => `client-${clientId}`;
