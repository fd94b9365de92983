/**
 * Webhooks: endpoint registration, the delivery log, the events feed, and the payloads themselves (written from
 * the interface's Events section: exactly its fields, null where a field does not apply).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { pageOf, pageQueryProperties } from './common.ts';

/** Every webhook event type of the interface. Endpoints may subscribe to any of them, also to those not emitted yet. */
export const webhookEventTypes = [
  'transaction.status_changed',
  'payment.expired', 'payment.settled', 'payment.unsettled', 'payment.requiresReview',
  'payment.reviewApproved', 'payment.reviewRejected', 'payment.reviewResolved',
  'payment.refund.created', 'payment.refund.settled', 'payment.refund.failed',
  'purchase.attempted', 'purchase.pendingAssignment', 'purchase.underpaid', 'purchase.overpaid',
  'customer.levelChanged',
  'test_clock.ready',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/** The type of the signed ping of `POST /webhooks/{id}/test`; never in the feed. */
export const TEST_EVENT_TYPE = 'webhook.test';

export const deliveryStatuses = ['PENDING', 'DELIVERED', 'DROPPED'] as const;

const eventTypeSchema = { type: 'string', enum: webhookEventTypes } as const;
const urlSchema = {
  type: 'string', minLength: 1, maxLength: 2048, examples: ['https://shop.example.com/hooks/payments'],
  description: 'http or https, without credentials or fragment; private and loopback addresses are refused unless the service runs with WEBHOOK_ALLOW_PRIVATE=true',
} as const;
const secretKeySchema = {
  type: 'string', minLength: 16, maxLength: 256, pattern: '^[\\x21-\\x7e]+$', examples: ['my-own-secret-of-32-chars-or-so'],
  description: 'the secret deliveries are signed with (16 to 256 printable ASCII characters); generated when omitted, in the ' +
    'Standard Webhooks form `whsec_<base64 of 32 random bytes>`. One starting with `whsec_` must have that form (base64 of ' +
    '24 to 64 bytes): its Standard Webhooks key is the decoded bytes; for any other, it is the secret’s own bytes',
} as const;
const eventsSchema = {
  type: 'array', items: eventTypeSchema, minItems: 1, maxItems: webhookEventTypes.length, uniqueItems: true,
  description: 'the event types to receive; omitted: all of them, including types added later',
} as const;
const description = { type: 'string', minLength: 1, maxLength: 500 } as const;

export const createWebhookSchema = {
  title: 'CreateWebhook',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: urlSchema, secretKey: secretKeySchema, events: eventsSchema, description },
} as const;
export type CreateWebhook = FromSchema<typeof createWebhookSchema>;

export const updateWebhookSchema = {
  title: 'UpdateWebhook',
  description: 'The secret changes only through POST /webhooks/{id}/rotate-secret.',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    url: urlSchema,
    events: { ...eventsSchema, type: ['array', 'null'], description: 'the event types to receive; null: all of them, including types added later' },
    description: { ...description, type: ['string', 'null'] },
    enabled: { type: 'boolean', description: 'false: no new deliveries are made for it, and pending ones wait until it is enabled again' },
  },
} as const;
export type UpdateWebhook = FromSchema<typeof updateWebhookSchema>;

export const rotateSecretSchema = {
  title: 'RotateWebhookSecret',
  type: 'object',
  additionalProperties: false,
  properties: { secretKey: secretKeySchema },
} as const;
export type RotateSecret = FromSchema<typeof rotateSecretSchema>;

export const webhookSchema = {
  title: 'Webhook',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'url', 'events', 'description', 'enabled', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' },
    url: { type: 'string' },
    events: { type: ['array', 'null'], items: { type: 'string' }, description: 'null: every event type' },
    description: { type: ['string', 'null'] },
    enabled: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    secretKey: {
      type: 'string',
      description: 'only in the answer of the creation and of a rotation: shown once, never again. A `whsec_…` one verifies ' +
        'with `new Webhook(secretKey)` of the standardwebhooks libraries; one of your own with `new Webhook(secretKey, { format: ' +
        '"raw" })`',
    },
  },
} as const;
export type WebhookRecord = FromSchema<typeof webhookSchema>;
export const webhookPageSchema = pageOf(webhookSchema);

export const listWebhooksQuerySchema = {
  type: 'object', additionalProperties: false, properties: { ...pageQueryProperties },
} as const;

const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

export const deliverySchema = {
  title: 'WebhookDelivery',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'webhookId', 'eventId', 'eventType', 'status', 'sequence', 'attempts', 'createdAt', 'firstAttemptAt',
    'lastAttemptAt', 'nextAttemptAt', 'deliveredAt', 'droppedAt', 'lastStatusCode', 'lastError', 'attemptLog', 'payload'],
  properties: {
    id: { type: 'string', description: 'sent as X-Webhook-Id: the same on every attempt' },
    webhookId: { type: 'string' },
    eventId: { type: 'string', description: 'the event’s id in GET /events (the same for every endpoint)' },
    eventType: { type: 'string' },
    status: { type: 'string', enum: deliveryStatuses, description: 'DROPPED: not delivered within 24 hours of the first attempt' },
    sequence: { type: ['integer', 'null'], description: 'X-Webhook-Sequence: grows with every event of the same payment or customer' },
    attempts: { type: 'integer', minimum: 0 },
    createdAt: { type: 'string', format: 'date-time' },
    firstAttemptAt: nullableTime,
    lastAttemptAt: nullableTime,
    nextAttemptAt: { ...nullableTime, description: 'when it is tried next; null once delivered or dropped' },
    deliveredAt: nullableTime,
    droppedAt: nullableTime,
    lastStatusCode: { type: ['integer', 'null'] },
    lastError: { type: ['string', 'null'] },
    attemptLog: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['at', 'durationMs', 'statusCode', 'error'],
        properties: {
          at: { type: 'string', format: 'date-time' },
          durationMs: { type: 'integer', minimum: 0 },
          statusCode: { type: ['integer', 'null'], description: 'null when no answer came (refused, timed out after 10 s)' },
          error: { type: ['string', 'null'] },
        },
      },
    },
    payload: { type: 'object', description: 'the body as delivered' },
  },
} as const;
export type DeliveryRecord = FromSchema<typeof deliverySchema>;
export const deliveryPageSchema = pageOf(deliverySchema);

export const listDeliveriesQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: deliveryStatuses },
    eventType: { type: 'string', enum: [...webhookEventTypes, TEST_EVENT_TYPE] },
    ...pageQueryProperties,
  },
} as const;

export const deliveryParamsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'deliveryId'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' },
    deliveryId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' },
  },
} as const;

/** `<commit>-<prepare>-<n>`: after which event of the feed a page starts. */
const cursorSchema = {
  type: 'string', pattern: '^\\d{1,19}-\\d{1,19}-\\d{1,3}$', examples: ['0-0-0'],
  description: 'the `next` of a previous page; omitted: from the first event',
} as const;

export const listEventsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    cursor: cursorSchema,
    type: { ...eventTypeSchema, description: 'only events of this type' },
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50, description: 'page size (at most 500)' },
  },
} as const;

export const feedEventSchema = {
  title: 'FeedEvent',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'eventType', 'sequence', 'occurredAt', 'payload'],
  properties: {
    id: { type: 'string', description: 'the same as X-Webhook-Event-Id on its deliveries' },
    eventType: eventTypeSchema,
    sequence: { type: 'integer', description: 'grows with every event of the same payment or customer' },
    occurredAt: { type: 'string', format: 'date-time' },
    payload: { type: 'object', description: 'exactly the body a webhook delivery of it carries' },
  },
} as const;

export const eventsPageSchema = {
  title: 'EventsPage',
  type: 'object',
  additionalProperties: false,
  required: ['results', 'next', 'hasMore'],
  properties: {
    results: { type: 'array', items: feedEventSchema },
    next: { ...cursorSchema, description: 'pass as `cursor` for the following events; also when this page is empty or the last (poll with it later)' },
    hasMore: { type: 'boolean', description: 'true when more events follow now' },
  },
} as const;

// ---- The payloads delivered (and listed by GET /events), from the interface's Events section.

const nullableString = { type: ['string', 'null'] } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
const nullableIsoTime = { type: ['string', 'null'], format: 'date-time' } as const;

export const transactionEventPayloadSchema = {
  title: 'TransactionWebhookPayload',
  type: 'object',
  additionalProperties: false,
  required: ['eventType', 'timestamp', 'transaction', 'identity'],
  properties: {
    eventType: { type: 'string', enum: webhookEventTypes.filter((t) => t !== 'customer.levelChanged' && t !== 'test_clock.ready') },
    timestamp: isoTime,
    transaction: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'externalId', 'status', 'totalAmount', 'currency', 'type', 'parentPaymentId', 'relatedPaymentId', 'customerId',
        'settledAt', 'expiredAt', 'unsettledAt', 'unsettledReason', 'settlementBatchId', 'documentationStatus'],
      properties: {
        id: { type: 'string' },
        externalId: { type: 'string' },
        status: { type: 'string' },
        totalAmount: { type: 'string', pattern: '^\\d+(\\.\\d+)?$' },
        currency: { type: 'string' },
        type: { type: 'string' },
        parentPaymentId: nullableString,
        relatedPaymentId: nullableString,
        customerId: nullableString,
        settledAt: nullableIsoTime,
        expiredAt: nullableIsoTime,
        unsettledAt: nullableIsoTime,
        unsettledReason: nullableString,
        settlementBatchId: nullableString,
        documentationStatus: nullableString,
      },
    },
    identity: {
      type: 'object', additionalProperties: false, required: ['id', 'email'],
      properties: {
        id: { ...nullableString, description: 'null while a deposit awaits assignment, and on the refund child of an expired deposit (no identity owns that money)' },
        email: nullableString,
      },
    },
  },
} as const;

export const customerEventPayloadSchema = {
  title: 'CustomerWebhookPayload',
  type: 'object',
  additionalProperties: false,
  required: ['eventType', 'timestamp', 'customer'],
  properties: {
    eventType: { const: 'customer.levelChanged' },
    timestamp: isoTime,
    customer: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'clientId', 'firstName', 'lastName', 'email', 'documentNumber', 'operationLevel', 'autoCreated', 'documentsCount'],
      properties: {
        id: { type: 'string' },
        clientId: { type: 'string' },
        firstName: nullableString,
        lastName: nullableString,
        email: nullableString,
        documentNumber: nullableString,
        operationLevel: { type: 'string' },
        autoCreated: { type: 'boolean' },
        documentsCount: { type: 'integer', minimum: 0 },
      },
    },
  },
} as const;

export const testClockEventPayloadSchema = {
  title: 'TestClockWebhookPayload',
  type: 'object',
  additionalProperties: false,
  required: ['eventType', 'timestamp', 'testClock'],
  properties: {
    eventType: { const: 'test_clock.ready' },
    timestamp: { ...isoTime, description: 'the clock’s time (every effect due up to it is recorded)' },
    testClock: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'name', 'frozenTime', 'status'],
      properties: { id: { type: 'string' }, name: nullableString, frozenTime: isoTime, status: { const: 'ready' } },
    },
  },
} as const;

export const testEventPayloadSchema = {
  title: 'TestWebhookPayload',
  type: 'object',
  additionalProperties: false,
  required: ['eventType', 'timestamp', 'webhook'],
  properties: {
    eventType: { const: TEST_EVENT_TYPE },
    timestamp: isoTime,
    webhook: { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string' } } },
  },
} as const;
