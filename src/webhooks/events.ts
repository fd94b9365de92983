/**
 * Events of a webhook endpoint. Stream: `webhook-<endpointId>`. The endpoint's secret is stored only sealed
 * (AES-256-GCM under the service's webhook key, src/webhooks/secrets.ts): deliveries are signed with it, so it
 * cannot be a one-way hash, and the event log never holds it in the clear.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

/** A secret sealed under the webhook key: what is needed to open it again, and nothing readable. */
const sealedSecretSchema = closed({
  /** Which key sealed it (`env` for WEBHOOK_SECRETS_KEY, `db` for the key kept in the database). */
  keyId: textSchema,
  /** base64 of nonce (12 bytes) ‖ ciphertext ‖ GCM tag (16 bytes). */
  sealed: textSchema,
});
export type SealedSecret = FromSchema<typeof sealedSecretSchema>;

/** The webhook event types an endpoint receives; null means all of them, including types added later. */
const subscribedEventsSchema = { type: ['array', 'null'], items: textSchema } as const;

const endpointChangesSchema = closed({
  url: textSchema,
  events: subscribedEventsSchema,
  description: nullableTextSchema,
  enabled: { type: 'boolean' },
}, ['url', 'events', 'description', 'enabled']);
export type EndpointChanges = FromSchema<typeof endpointChangesSchema>;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const webhookEventSchemas = {
  WebhookEndpointRegistered: closed({
    endpointId: textSchema,
    clientId: textSchema,
    url: textSchema,
    events: subscribedEventsSchema,
    description: nullableTextSchema,
    secret: sealedSecretSchema,
    registeredAt: instantSchema,
  }),
  WebhookEndpointUpdated: closed({ endpointId: textSchema, changes: endpointChangesSchema, updatedAt: instantSchema }),
  WebhookSecretRotated: closed({ endpointId: textSchema, secret: sealedSecretSchema, rotatedAt: instantSchema }),
  WebhookEndpointDeleted: closed({ endpointId: textSchema, deletedAt: instantSchema }),
} as const;

type Data<K extends keyof typeof webhookEventSchemas> = FromSchema<(typeof webhookEventSchemas)[K]>;

export type WebhookEndpointRegisteredData = Data<'WebhookEndpointRegistered'>;

export type WebhookEvent =
  | { type: 'WebhookEndpointRegistered'; data: WebhookEndpointRegisteredData }
  /** Only the fields that changed. */
  | { type: 'WebhookEndpointUpdated'; data: Data<'WebhookEndpointUpdated'> }
  | { type: 'WebhookSecretRotated'; data: Data<'WebhookSecretRotated'> }
  | { type: 'WebhookEndpointDeleted'; data: Data<'WebhookEndpointDeleted'> };

export const webhookEvents = { schemas: webhookEventSchemas } satisfies ContextEvents;

export const webhookStream = (endpointId: string) => `webhook-${endpointId}`;
