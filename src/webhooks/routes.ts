/** Webhook endpoints, their delivery log, and the events feed (DESIGN section 16). */
import type { Request } from 'express';
import type { Kysely } from 'kysely';
import { idParamSchema } from '../../schemas/common.ts';
import {
  createWebhookSchema, deliveryPageSchema, deliveryParamsSchema, deliverySchema, eventsPageSchema, listDeliveriesQuerySchema,
  listEventsQuerySchema, listWebhooksQuerySchema, rotateSecretSchema, updateWebhookSchema, webhookPageSchema, webhookSchema,
  type DeliveryRecord, type WebhookRecord,
} from '../../schemas/webhooks.ts';
import {
  deliveriesPage, deliveryOfEndpoint, feedEventsAfter, webhookEndpointsPage, type WebhookDeliveryRow, type WebhookEndpointRow,
} from '../../projections/webhooks.ts';
import type { ReadModels } from '../../projections/readModels.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { HttpError, invalidParam, notFound } from '../http/errors.ts';
import {
  deleteWebhook, pingWebhook, registerWebhook, retryWebhookDelivery, rotateWebhookSecret, updateWebhook,
} from './handlers.ts';
import { webhookEventsCut, type FeedCut } from './retention.ts';
import { ownedWebhook } from '../../projections/webhooks.queries.ts';

const tags = ['Webhooks'];
const errorRef = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such webhook for this client; another client’s webhook answers the same, and nothing changes', schema: errorRef } as const;

const SIGNING = 'Each delivery is a POST of the event’s JSON payload with the headers `X-Webhook-Signature` (hex HMAC-SHA256 of ' +
  'the raw body under the secretKey), `X-Webhook-Timestamp` (Unix seconds of the attempt), `X-Webhook-Signature-Timestamped` ' +
  '(hex HMAC-SHA256 of `<timestamp>.<raw body>`, for replay protection), `X-Webhook-Id` (the delivery: the same on every ' +
  'attempt), `X-Webhook-Event-Id` (the event, as in GET /events), `X-Webhook-Event-Type` and `X-Webhook-Sequence` (grows with ' +
  'every event of one payment or customer); and the Standard Webhooks headers `webhook-id` (= X-Webhook-Id), ' +
  '`webhook-timestamp` (= X-Webhook-Timestamp) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of ' +
  '"<webhook-id>.<webhook-timestamp>.<raw body>">`), which the standardwebhooks libraries verify: a generated secretKey ' +
  '(`whsec_<base64>`) is already in their form, `new Webhook(secretKey)`; for one of your own the key is its bytes, ' +
  '`new Webhook(secretKey, { format: "raw" })`. A 2xx answer within 10 s delivers it; otherwise it is retried 30 s later, doubling ' +
  'up to 1 h, and dropped when the next attempt would come more than 24 h after the first. An endpoint receives the events ' +
  'recorded after its registration.';

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());

function webhookRecord(row: WebhookEndpointRow, secretKey?: string): WebhookRecord {
  return {
    id: row.endpoint_id, url: row.url, events: row.events, description: row.description, enabled: row.enabled,
    createdAt: iso(row.created_at)!, updatedAt: iso(row.updated_at)!, ...(secretKey !== undefined ? { secretKey } : {}),
  };
}

function deliveryRecord(row: WebhookDeliveryRow): DeliveryRecord {
  return {
    id: row.delivery_id, webhookId: row.endpoint_id, eventId: row.event_id, eventType: row.event_type, status: row.status,
    sequence: row.sequence === null ? null : Number(row.sequence), attempts: row.attempts, createdAt: iso(row.created_at)!,
    firstAttemptAt: iso(row.first_attempt_at), lastAttemptAt: iso(row.last_attempt_at), nextAttemptAt: iso(row.next_attempt_at),
    deliveredAt: iso(row.delivered_at), droppedAt: iso(row.dropped_at), lastStatusCode: row.last_status_code, lastError: row.last_error,
    attemptLog: row.attempt_log, payload: JSON.parse(row.body),
  };
}

/** How far back the delivery log and the events feed go, as their descriptions say it. */
const RETENTION = 'Delivered and dropped deliveries, and the events of GET /events, are kept WEBHOOK_DELIVERY_RETENTION_DAYS ' +
  '(default 30) after they ended (were recorded), then purged (hourly by default, RETENTION_CRON); pending deliveries are kept ' +
  'until they end, however old.';

async function deliveryOf(db: Kysely<ReadModels>, endpointId: string, deliveryId: string): Promise<DeliveryRecord> {
  const row = await deliveryOfEndpoint(db, endpointId, deliveryId);
  if (!row) throw notFound(`delivery ${deliveryId} of webhook ${endpointId} not found`);
  return deliveryRecord(row);
}

/** An endpoint of this client, as the API shows it (with its secretKey when it is shown this once). */
async function recordOf(services: Services, req: Request, endpointId: string, secretKey?: string): Promise<WebhookRecord> {
  return webhookRecord(await ownedWebhook(services.readModels, tenantOf(req), endpointId), secretKey);
}

// A table of 10 routes, long only by the documentation the OpenAPI document shows (descriptions, responses).
export function webhookRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/webhooks', operationId: 'createWebhook', summary: 'Register a webhook endpoint', tags, access: 'client',
      description: `${SIGNING} The answer carries the secretKey (the one sent, or a generated one) this once; it is never shown ` +
        'again (see rotate-secret). A client may register several endpoints.',
      schemas: { body: createWebhookSchema }, secretFields: ['secretKey'],
      responses: { 201: { description: 'the webhook, with its secretKey', schema: webhookSchema } },
      handler: (input) => createWebhook(services, input),
    }),
    defineRoute({
      method: 'get', path: '/webhooks', operationId: 'listWebhooks', summary: 'List webhook endpoints', tags, access: 'client',
      description: 'Newest first; secrets are never shown.', schemas: { query: listWebhooksQuerySchema },
      responses: { 200: { description: 'a page of webhooks', schema: webhookPageSchema } },
      handler: (input) => listWebhooks(services, input),
    }),
    defineRoute({
      method: 'get', path: '/webhooks/:id', operationId: 'getWebhook', summary: 'Get a webhook endpoint', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the webhook', schema: webhookSchema }, 404: notFoundResponse },
      handler: (input) => getWebhook(services, input),
    }),
    defineRoute({
      method: 'patch', path: '/webhooks/:id', operationId: 'updateWebhook', summary: 'Change a webhook’s URL, events, description, or enable/disable it',
      tags, access: 'client', schemas: { params: idParamSchema, body: updateWebhookSchema },
      description: 'A disabled endpoint gets no deliveries for events recorded while it is disabled; its pending ones wait.',
      responses: { 200: { description: 'the webhook', schema: webhookSchema }, 404: notFoundResponse },
      handler: (input) => onUpdateWebhook(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/webhooks/:id', operationId: 'deleteWebhook', summary: 'Delete a webhook endpoint', tags, access: 'client',
      description: 'Its pending deliveries are dropped.',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted (no body)' }, 404: notFoundResponse },
      handler: (input) => onDeleteWebhook(services, input),
    }),
    defineRoute({
      method: 'post', path: '/webhooks/:id/rotate-secret', operationId: 'rotateWebhookSecret', summary: 'Replace a webhook’s secret',
      description: 'The new secretKey (the one sent, or a generated one) is answered this once. Attempts made from now on are ' +
        'signed with it, also those of deliveries queued before.',
      tags, access: 'client', schemas: { params: idParamSchema, body: rotateSecretSchema }, secretFields: ['secretKey'],
      responses: { 200: { description: 'the webhook, with its new secretKey', schema: webhookSchema }, 404: notFoundResponse },
      handler: (input) => onRotateWebhookSecret(services, input),
    }),
    defineRoute({
      method: 'get', path: '/webhooks/:id/deliveries', operationId: 'listWebhookDeliveries', summary: 'The delivery log of a webhook',
      description: 'Newest first, each with its attempts (time, duration, status code or error), its next attempt, and its payload. ' +
        `${RETENTION} \`cursor\` (or \`offset\`) counts from the newest delivery, so it never points before the retention; a page past ` +
        'the end is empty.',
      tags, access: 'client', schemas: { params: idParamSchema, query: listDeliveriesQuerySchema },
      responses: { 200: { description: 'a page of deliveries', schema: deliveryPageSchema }, 404: notFoundResponse },
      handler: (input) => listWebhookDeliveries(services, input),
    }),
    defineRoute({
      method: 'post', path: '/webhooks/:id/deliveries/:deliveryId/retry', operationId: 'retryWebhookDelivery',
      summary: 'Send a delivery again now',
      description: 'A pending delivery is tried at once; a delivered or dropped one is sent again as a new round (its log kept, ' +
        'a new 24-hour window).',
      tags, access: 'client', schemas: { params: deliveryParamsSchema },
      responses: { 202: { description: 'queued; the delivery as it is now', schema: deliverySchema }, 404: { description: 'no such webhook or delivery for this client', schema: errorRef } },
      handler: (input) => onRetryWebhookDelivery(services, input),
    }),
    defineRoute({
      method: 'post', path: '/webhooks/:id/test', operationId: 'testWebhook', summary: 'Send a signed test ping',
      description: 'Queues a delivery of `{"eventType": "webhook.test", "timestamp", "webhook": {"id"}}`, signed like every other; ' +
        'follow it in the delivery log.',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 202: { description: 'queued', schema: deliverySchema }, 404: notFoundResponse },
      handler: (input) => testWebhook(services, input),
    }),
    defineRoute({
      method: 'get', path: '/events', operationId: 'listEvents', summary: 'The events feed: every webhook event of the client, in order',
      description: 'The same payloads as the webhook deliveries, oldest first, whether or not any endpoint receives them, so a ' +
        'client can catch up on anything it missed: page with `cursor` = the previous page’s `next`, and keep `next` to poll later. ' +
        `${RETENTION} Without a cursor the feed starts at the oldest event kept; a cursor from before the oldest purged event ` +
        '(events after it may be gone) is refused with 410: read again without a cursor.',
      tags, access: 'client', schemas: { query: listEventsQuerySchema },
      responses: {
        200: { description: 'a page of events', schema: eventsPageSchema },
        410: { description: 'the cursor is older than what the feed keeps (events after it were purged): read again without a cursor', schema: errorRef },
      },
      handler: (input) => listEvents(services, input),
    }),
  ];
}

/** Whether a cursor's position comes before the cut of the feed. */
function before([commit, prepare, ordinal]: [string, string, string], cut: FeedCut): boolean {
  const a = [BigInt(commit), BigInt(prepare), BigInt(ordinal)];
  const b = [BigInt(cut.commit), BigInt(cut.prepare), BigInt(cut.ordinal)];
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

function cursorPurged(cut: FeedCut): HttpError {
  return new HttpError(410, 'invalidParam', `cursor: the events feed keeps the events of the last WEBHOOK_DELIVERY_RETENTION_DAYS; `
    + `those recorded before ${cut.purgedBefore.toISOString()} up to position ${cut.commit}-${cut.prepare}-${cut.ordinal} were purged, and `
    + 'this cursor is older: read again without a cursor, from the oldest event kept');
}

/** Postgres `bigint`'s largest value: the feed positions are stored as bigint. */
const MAX_FEED_POSITION = 9_223_372_036_854_775_807n;

/** The cursor's three parts; its pattern bounds their digits, this bounds their values to what the feed can hold. */
function feedCursorOf(cursor: string | undefined): [string, string, string] {
  const [commit, prepare, ordinal] = (cursor ?? '0-0-0').split('-') as [string, string, string];
  if (BigInt(commit) > MAX_FEED_POSITION || BigInt(prepare) > MAX_FEED_POSITION) {
    throw invalidParam(`cursor: its positions are at most ${MAX_FEED_POSITION}; pass the \`next\` of a previous page`);
  }
  return [commit, prepare, ordinal];
}

async function createWebhook(
  services: Services, { body, req }: HandlerInput<{ body: typeof createWebhookSchema }>,
): Promise<HandlerResult> {
  const { endpointId, secretKey } = await registerWebhook(services, clientIdOf(req), body, commandMetadata(req));
  return { status: 201, body: await recordOf(services, req, endpointId, secretKey) };
}

async function listWebhooks(
  services: Services, { query, req }: HandlerInput<{ query: typeof listWebhooksQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const page = pageRequest(query);
  const { rows, total } = await webhookEndpointsPage(db, clientIdOf(req), page);
  return { status: 200, body: pageOfResults(rows.map((row) => webhookRecord(row)), total, page) };
}

async function getWebhook(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  return { status: 200, body: await recordOf(services, req, params.id) };
}

async function onUpdateWebhook(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof updateWebhookSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await updateWebhook(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 200, body: await recordOf(services, req, id) };
}

async function onDeleteWebhook(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await deleteWebhook(services, tenantOf(req), params.id, commandMetadata(req));
  return { status: 200 };
}

async function onRotateWebhookSecret(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof rotateSecretSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  const secretKey = await rotateWebhookSecret(services, tenantOf(req), id, body ?? {}, commandMetadata(req));
  return { status: 200, body: await recordOf(services, req, id, secretKey) };
}

async function listWebhookDeliveries(
  services: Services, { params, query, req }: HandlerInput<{ params: typeof idParamSchema; query: typeof listDeliveriesQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  await ownedWebhook(db, tenantOf(req), id);
  const page = pageRequest(query);
  const { rows, total } = await deliveriesPage(db, id, query, page);
  return { status: 200, body: pageOfResults(rows.map(deliveryRecord), total, page) };
}

async function onRetryWebhookDelivery(
  services: Services, { params, req }: HandlerInput<{ params: typeof deliveryParamsSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id, deliveryId } = params;
  await retryWebhookDelivery(services, tenantOf(req), id, deliveryId);
  return { status: 202, body: await deliveryOf(db, id, deliveryId) };
}

async function testWebhook(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  const deliveryId = await pingWebhook(services, tenantOf(req), id);
  return { status: 202, body: await deliveryOf(db, id, deliveryId) };
}

async function listEvents(
  services: Services, { query, req }: HandlerInput<{ query: typeof listEventsQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const limit = query.limit ?? 50;
  const [commit, prepare, ordinal] = feedCursorOf(query.cursor);
  const cut = await webhookEventsCut(services.storage.database);
  if (cut && query.cursor !== undefined && before([commit, prepare, ordinal], cut)) throw cursorPurged(cut);
  // Events at or before the cut are gone, and hidden where a rebuild brought them back until the next purge.
  const [fromCommit, fromPrepare, fromOrdinal] = cut && before([commit, prepare, ordinal], cut)
    ? [cut.commit, cut.prepare, String(cut.ordinal)] : [commit, prepare, ordinal];
  // One more than the page: whether there are more.
  const rows = await feedEventsAfter(db, clientIdOf(req), [fromCommit, fromPrepare, fromOrdinal], query.type, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    status: 200,
    body: {
      results: page.map((row) => ({
        id: row.event_id, eventType: row.event_type, sequence: Number(row.sequence), occurredAt: iso(row.occurred_at)!,
        payload: JSON.parse(row.body),
      })),
      next: last ? `${last.feed_commit}-${last.feed_prepare}-${last.ordinal}` : `${fromCommit}-${fromPrepare}-${fromOrdinal}`,
      hasMore: rows.length > limit,
    },
  };
}
