/**
 * The webhooks' read models and the emitter. From the feed it keeps:
 * - `webhook_endpoints`: each client's endpoints (the sealed secret with them, for the dispatcher);
 * - `webhook_payments`: what a payment's payloads carry (projections/webhookMappings.ts), so a status change's payload
 *   is built from the feed alone;
 * - `webhook_events`: every webhook event in feed order, the source of `GET /events` (kept WEBHOOK_DELIVERY_RETENTION_DAYS:
 *   the retention job cuts its oldest end, src/webhooks/retention.ts);
 * and writes a delivery into the outbox (`webhook_deliveries`, in the main schema, outside this projector's
 * versioned tables) for every endpoint of the client that subscribes to the event's type. An endpoint gets the
 * events that come after its registration in the feed: the emitter meets them in that order.
 *
 * Nothing is sent twice by a replay: a delivery's key (endpoint, event, event type) is unique, so a second
 * emission of it adds nothing; and a version that rebuilds beside the active one writes no delivery for events
 * the active version has already passed (its checkpoint is the floor), so a bump that changes the mapping does not
 * send old history under new types either.
 */
import { CompiledQuery, sql, type ColumnType, type Generated, type Insertable, type Kysely, type Selectable } from 'kysely';
import { defineProjector, type LaterWrites, type Projector } from '../src/projection/projector.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import { deterministicId } from '../src/eventstore/deterministicId.ts';
import { handlerOf, isOneOf, type EventHandlers } from '../src/eventstore/typedEvents.ts';
import type { RecordedStoredEvent, StoredEventData, StoredEventType } from '../src/storedEvents/registry.ts';
import { paymentIdOf, type Emission, type Mapped, type PaymentFacts } from './webhookMappings.ts';
import { webhookEventSchemas } from '../src/webhooks/events.ts';
import type { DeliveryRecord, WebhookEventType } from '../schemas/webhooks.ts';
import type { Instant, Json } from './columns.ts';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';
import { PREPARED } from '../src/db/preparedStatements.ts';
import { createTableSql, insertJsonRowsSql } from '../src/db/jsonRows.ts';

export const WEBHOOKS_PROJECTOR = 'webhooks';
/** Rows per INSERT statement: a bounded statement (a delivery's takes a parameter per value, well under Postgres' 65,535). */
const ROWS_PER_INSERT = 500;

export const webhookDeliveryId = (endpointId: string, webhookEventId: string) => deterministicId('webhook-delivery', endpointId, webhookEventId);

/** A client's endpoint, with its sealed secret (for the dispatcher). */
export interface WebhookEndpointsTable {
  endpoint_id: string;
  client_id: string;
  url: string;
  /** The event types it subscribes to; null: all of them. */
  events: ColumnType<string[] | null, string | null, string | null>;
  description: string | null;
  enabled: boolean;
  secret_key_id: string;
  secret_sealed: string;
  /** Its registration's feed position (bigint: written and read back as a decimal string). */
  registered_commit: string;
  registered_prepare: string;
  created_at: Instant;
  updated_at: Instant;
}

/** What a payment's payloads carry, kept from its earlier events. */
export interface WebhookPaymentsTable {
  payment_id: string;
  facts: Json<PaymentFacts>;
}

/** Every webhook event in feed order (`feed_commit`, `feed_prepare`, `ordinal`): the source of `GET /events`. */
export interface WebhookEventsTable {
  event_id: string;
  client_id: string;
  feed_commit: string;
  feed_prepare: string;
  ordinal: number;
  event_type: WebhookEventType;
  object_id: string;
  /** bigint: written as a number, read back as a decimal string. */
  sequence: ColumnType<string, number, number>;
  occurred_at: Instant;
  /** The exact bytes of the payload, as delivered. */
  body: string;
}

/** The two tables' columns, as created (src/db/jsonRows.ts): a row of each is written from JSON, as text for jsonb. */
const webhookPaymentColumns = {
  payment_id: 'text PRIMARY KEY',
  facts: 'jsonb NOT NULL',
} as const satisfies Record<keyof WebhookPaymentsTable, string>;
const webhookEventColumns = {
  event_id: 'text PRIMARY KEY',
  client_id: 'text NOT NULL',
  feed_commit: 'bigint NOT NULL',
  feed_prepare: 'bigint NOT NULL',
  ordinal: 'integer NOT NULL',
  event_type: 'text NOT NULL',
  object_id: 'text NOT NULL',
  sequence: 'bigint NOT NULL',
  occurred_at: 'timestamptz NOT NULL',
  // Text, not jsonb: the exact bytes of the payload, as delivered.
  body: 'text NOT NULL',
} as const satisfies Record<keyof WebhookEventsTable, string>;
const UPSERT_PAYMENT_FACTS_SQL = insertJsonRowsSql('webhook_payments', webhookPaymentColumns,
  'ON CONFLICT (payment_id) DO UPDATE SET facts = EXCLUDED.facts');
const INSERT_FEED_EVENTS_SQL = insertJsonRowsSql('webhook_events', webhookEventColumns);

export type WebhookTables = { webhook_endpoints: WebhookEndpointsTable; webhook_payments: WebhookPaymentsTable; webhook_events: WebhookEventsTable };

/**
 * The outbox (migration 0007_webhook_outbox in src/db/migrations.ts): in the main schema, outside the projector's
 * versioned tables. Its timestamps are written as Dates (the emitter's and the dispatcher's clock, not an event's).
 */
export interface WebhookDeliveriesTable {
  delivery_id: string;
  endpoint_id: string;
  client_id: string;
  event_id: string;
  /** The domain event it comes from; null for a test ping. */
  source_event_id: string | null;
  /** A webhook event type, or `webhook.test` for a ping. */
  event_type: string;
  object_id: string | null;
  /** bigint: written as a number, read back as a decimal string. */
  sequence: ColumnType<string | null, number | null | undefined, number | null>;
  body: string;
  status: DeliveryRecord['status'];
  attempts: Generated<number>;
  attempt_log: ColumnType<DeliveryRecord['attemptLog'], string | undefined, string>;
  created_at: Date;
  source_recorded_at: Date | null;
  next_attempt_at: Date | null;
  first_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  dropped_at: Date | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
}

export type WebhookOutboxTables = { webhook_deliveries: WebhookDeliveriesTable };
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

interface Subscriber {
  endpointId: string;
  events: string[] | null;
  enabled: boolean;
}

/** What each domain event type becomes (./webhookMappings.ts). */
type Mappings = EventHandlers<StoredEventData, [facts: PaymentFacts | null], Mapped>;

/** The endpoints' own events (src/webhooks/events.ts): the keys of their schemas, each a stored event type. */
const ENDPOINT_EVENTS = Object.keys(webhookEventSchemas) as (keyof typeof webhookEventSchemas)[];
type EndpointEvent = RecordedStoredEvent<(typeof ENDPOINT_EVENTS)[number]>;

/**
 * What a batch starts from, in one round trip: the facts kept of these payments, the endpoints of these clients (the
 * clients its events were recorded for: every one of them is answered, with no endpoint or some), and the floor: the
 * active version's checkpoint when another version than `version` is active (no delivery at or before it).
 */
async function batchStart(
  trx: Kysely<WebhookTables>, version: number, paymentIds: readonly string[], clientIds: readonly string[],
): Promise<{ floor: Position | null; facts: Map<string, PaymentFacts>; subscribers: Map<string, Subscriber[]> }> {
  const { rows } = await sql<{
    payment_id: string | null; facts: PaymentFacts | null; version: number | null; c: string | null; p: string | null;
    client_id: string | null; endpoint_id: string | null; events: string[] | null; enabled: boolean | null;
  }>`${sql.raw(PREPARED)}
    SELECT NULL::text AS payment_id, NULL::jsonb AS facts, version, checkpoint_commit::text AS c, checkpoint_prepare::text AS p,
           NULL::text AS client_id, NULL::text AS endpoint_id, NULL::jsonb AS events, NULL::boolean AS enabled
      FROM projection_state WHERE name = ${WEBHOOKS_PROJECTOR} AND status = 'active'
    UNION ALL
    SELECT payment_id, facts, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM webhook_payments WHERE payment_id = ANY(${paymentIds}::text[])
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, client_id, endpoint_id, events, enabled FROM webhook_endpoints
     WHERE client_id = ANY(${clientIds}::text[])`.execute(trx);
  const facts = new Map<string, PaymentFacts>();
  const subscribers = new Map<string, Subscriber[]>(clientIds.map((id) => [id, []]));
  let floor: Position | null = null;
  for (const row of rows) {
    if (row.payment_id !== null) facts.set(row.payment_id, row.facts!);
    else if (row.endpoint_id !== null) subscribers.get(row.client_id!)!.push({ endpointId: row.endpoint_id, events: row.events, enabled: row.enabled! });
    else if (row.version !== version && row.c !== null) floor = { commit: BigInt(row.c), prepare: BigInt(row.p!) };
  }
  return { floor, facts, subscribers };
}

async function applyEndpointEvent(trx: Kysely<WebhookTables>, event: EndpointEvent): Promise<void> {
  switch (event.type) {
    case 'WebhookEndpointRegistered': {
      const d = event.data;
      await trx.insertInto('webhook_endpoints').values({
        endpoint_id: d.endpointId, client_id: d.clientId, url: d.url, events: d.events === null ? null : JSON.stringify(d.events),
        description: d.description, enabled: true, secret_key_id: d.secret.keyId, secret_sealed: d.secret.sealed,
        registered_commit: String(event.position.commit), registered_prepare: String(event.position.prepare),
        created_at: d.registeredAt, updated_at: d.registeredAt,
      }).execute();
      return;
    }
    case 'WebhookEndpointUpdated': {
      const { changes, endpointId, updatedAt } = event.data;
      await trx.updateTable('webhook_endpoints').set({
        ...(changes.url !== undefined ? { url: changes.url } : {}),
        ...(changes.events !== undefined ? { events: changes.events === null ? null : JSON.stringify(changes.events) } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
        updated_at: updatedAt,
      }).where('endpoint_id', '=', endpointId).execute();
      return;
    }
    case 'WebhookSecretRotated': {
      const d = event.data;
      await trx.updateTable('webhook_endpoints').set({ secret_key_id: d.secret.keyId, secret_sealed: d.secret.sealed, updated_at: d.rotatedAt })
        .where('endpoint_id', '=', d.endpointId).execute();
      return;
    }
    case 'WebhookEndpointDeleted':
      await trx.deleteFrom('webhook_endpoints').where('endpoint_id', '=', event.data.endpointId).execute();
  }
}

/** `rows` in slices of at most ROWS_PER_INSERT, one INSERT each. */
function* chunksOf<Row>(rows: readonly Row[]): Generator<Row[]> {
  for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) yield rows.slice(from, from + ROWS_PER_INSERT);
}

async function apply(
  trx: Kysely<WebhookTables>, events: readonly RecordedStoredEvent[], version: number, mappings: Mappings, later: LaterWrites,
): Promise<void> {
  const outbox = trx.withTables<WebhookOutboxTables>();
  const paymentIds = [...new Set(events.map(paymentIdOf).filter((id): id is string => id !== null))];
  const clientIds = [...new Set(events.flatMap((event) => typeof event.metadata.clientId === 'string' ? [event.metadata.clientId] : []))];
  const { floor, facts, subscribers } = await batchStart(trx, version, paymentIds, clientIds);
  const changedFacts = new Set<string>();
  // A client not read with the batch's start (an emission for another client than its event's) is read when met.
  const subscribersOf = async (clientId: string): Promise<Subscriber[]> => {
    let found = subscribers.get(clientId);
    if (!found) {
      const rows = await trx.selectFrom('webhook_endpoints').select(['endpoint_id', 'events', 'enabled']).where('client_id', '=', clientId).execute();
      found = rows.map((r) => ({ endpointId: r.endpoint_id, events: r.events, enabled: r.enabled }));
      subscribers.set(clientId, found);
    }
    return found;
  };
  const feedRows: Insertable<WebhookEventsTable>[] = [];
  const deliveries: Insertable<WebhookDeliveriesTable>[] = [];
  const now = new Date();

  for (const event of events) {
    if (isOneOf(event, ENDPOINT_EVENTS)) {
      await applyEndpointEvent(trx, event);
      // Subscribers are read again after any change to endpoints (rare): whichever client the change was recorded for.
      subscribers.clear();
      if (event.type === 'WebhookEndpointDeleted' && (floor === null || comparePositions(event.position, floor) > 0)) {
        const dropped = { status: 'DROPPED' as const, dropped_at: now, next_attempt_at: null, last_error: 'the webhook was deleted' };
        await outbox.updateTable('webhook_deliveries').set(dropped)
          .where('endpoint_id', '=', event.data.endpointId).where('status', '=', 'PENDING').execute();
        // Those of this batch are not written yet: dropped too, or they would wait for good for an endpoint gone.
        for (const delivery of deliveries) if (delivery.endpoint_id === event.data.endpointId) Object.assign(delivery, dropped);
      }
      continue;
    }
    const mapping = handlerOf<StoredEventData, [facts: PaymentFacts | null], Mapped, StoredEventType>(mappings, event.type);
    if (!mapping) continue;
    const paymentId = paymentIdOf(event);
    const mapped = mapping(event, paymentId ? facts.get(paymentId) ?? null : null);
    if (mapped.facts) {
      facts.set(mapped.facts.id, mapped.facts);
      changedFacts.add(mapped.facts.id);
    }
    const emitting = floor === null || comparePositions(event.position, floor) > 0;
    for (const [ordinal, item] of mapped.emissions.entries()) {
      feedRows.push(feedRow(event, ordinal, item));
      if (!emitting) continue;
      for (const subscriber of await subscribersOf(item.clientId)) {
        if (!subscriber.enabled || (subscriber.events !== null && !subscriber.events.includes(item.eventType))) continue;
        deliveries.push(deliveryRow(event, subscriber.endpointId, item, now));
      }
    }
  }

  // The batch's last writes: nothing here reads them back, so they go with the transaction's COMMIT when shared.
  if (changedFacts.size > 0) {
    const rows = [...changedFacts].map((id) => ({ payment_id: id, facts: JSON.stringify(facts.get(id)) }));
    for (const chunk of chunksOf(rows)) await later.add(CompiledQuery.raw(UPSERT_PAYMENT_FACTS_SQL, [JSON.stringify(chunk)]));
  }
  for (const chunk of chunksOf(feedRows)) await later.add(CompiledQuery.raw(INSERT_FEED_EVENTS_SQL, [JSON.stringify(chunk)]));
  for (const chunk of chunksOf(deliveries)) await later.add(outbox.insertInto('webhook_deliveries').values(chunk).onConflict((oc) => oc.doNothing()));
}

function feedRow(event: RecordedEvent, ordinal: number, item: Emission): Insertable<WebhookEventsTable> {
  return {
    event_id: item.id, client_id: item.clientId, feed_commit: String(event.position.commit), feed_prepare: String(event.position.prepare),
    ordinal, event_type: item.eventType, object_id: item.objectId, sequence: item.sequence, occurred_at: item.occurredAt, body: item.body,
  };
}

function deliveryRow(event: RecordedEvent, endpointId: string, item: Emission, now: Date): Insertable<WebhookDeliveriesTable> {
  return {
    delivery_id: webhookDeliveryId(endpointId, item.id), endpoint_id: endpointId, client_id: item.clientId, event_id: item.id,
    source_event_id: event.id, event_type: item.eventType, object_id: item.objectId, sequence: item.sequence, body: item.body,
    status: 'PENDING', created_at: now, source_recorded_at: event.recordedAt, next_attempt_at: now,
  };
}

/**
 * The emitter at `version`, with `mappings`: every context's entries, gathered from their manifests (a test bumps
 * it, with a changed mapping, to see history is not resent).
 */
export function createWebhooksProjector(version: number, mappings: Mappings): Projector {
  return defineProjector<WebhookTables, StoredEventData>({
    name: WEBHOOKS_PROJECTOR,
    version,
    tables: ['webhook_endpoints', 'webhook_payments', 'webhook_events'],
    writesOutside: true,
    // Endpoints are read back right after they change; GET /events is a feed polled with a cursor and deliveries are
    // sent after the fact: a write waits for this projector only when it changed an endpoint (reads of the feed and
    // of a delivery log wait for it instead, src/webhooks/routes.ts).
    awaitedFor: ENDPOINT_EVENTS,
    // The mappings are keyed by stored event type (`Mappings`).
    handles: [...ENDPOINT_EVENTS, ...Object.keys(mappings) as StoredEventType[]],
    setup,
    apply: (trx, events, later) => apply(trx, events, version, mappings, later),
  });
}

/**
 * 2: refund children (payment.refund.*, and the facts of each child): rebuilt, so a child created before has its facts.
 * 3: the feed-order index the retention's purge of webhook_events walks (src/webhooks/retention.ts); the companion's
 * CANCELLED and EXPIRED ends.
 */
export const WEBHOOKS_PROJECTOR_VERSION = 3;

async function setup(trx: Kysely<WebhookTables>): Promise<void> {
  await trx.schema.createTable('webhook_endpoints')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'jsonb')
    .addColumn('description', 'text')
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .addColumn('secret_key_id', 'text', (c) => c.notNull())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('registered_commit', 'bigint', (c) => c.notNull())
    .addColumn('registered_prepare', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX webhook_endpoints_client ON webhook_endpoints (client_id, created_at DESC, endpoint_id DESC)`.execute(trx);
  await sql.raw(createTableSql('webhook_payments', webhookPaymentColumns)).execute(trx);
  await sql.raw(createTableSql('webhook_events', webhookEventColumns)).execute(trx);
  await sql`CREATE INDEX webhook_events_feed ON webhook_events (client_id, feed_commit, feed_prepare, ordinal)`.execute(trx);
  await sql`CREATE INDEX webhook_events_feed_type ON webhook_events (client_id, event_type, feed_commit, feed_prepare, ordinal)`.execute(trx);
  // The retention's purge cuts the feed from its oldest end (src/webhooks/retention.ts).
  await sql`CREATE INDEX webhook_events_feed_order ON webhook_events (feed_commit, feed_prepare, ordinal)`.execute(trx);
}

/** One page of a client's webhook endpoints, newest first (ties broken by id), and how many there are. */
export async function webhookEndpointsPage<DB extends WebhookTables>(
  db: Kysely<DB>, clientId: string, page: PageWindow,
): Promise<{ rows: WebhookEndpointRow[]; total: number }> {
  const endpoints = scopedTo(db as unknown as Kysely<WebhookTables>, 'webhook_endpoints', clientId);
  return newestFirstPage(endpoints, 'endpoint_id', page);
}

/** The filters of an endpoint's delivery log: exact matches. */
export interface DeliveryFilters { status?: WebhookDeliveriesTable['status']; eventType?: string }

/** One page of an endpoint's deliveries, newest first (ties broken by id), and how many match the filters. */
export async function deliveriesPage<DB extends WebhookOutboxTables>(
  db: Kysely<DB>, endpointId: string, filters: DeliveryFilters, page: PageWindow,
): Promise<{ rows: WebhookDeliveryRow[]; total: number }> {
  let filtered = (db as unknown as Kysely<WebhookOutboxTables>).selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (filters.status) filtered = filtered.where('status', '=', filters.status);
  if (filters.eventType) filtered = filtered.where('event_type', '=', filters.eventType);
  return newestFirstPage(filtered, 'delivery_id', page);
}

/** One delivery of an endpoint, if the endpoint has it. */
export async function deliveryOfEndpoint<DB extends WebhookOutboxTables>(
  db: Kysely<DB>, endpointId: string, deliveryId: string,
): Promise<WebhookDeliveryRow | undefined> {
  return (db as unknown as Kysely<WebhookOutboxTables>).selectFrom('webhook_deliveries').selectAll()
    .where('endpoint_id', '=', endpointId).where('delivery_id', '=', deliveryId).executeTakeFirst();
}

/**
 * A client's events of the feed after a position (its commit, prepare and ordinal, as decimal text), in the feed's order,
 * at most `limit` (events), of one type when `type` names one.
 */
export async function feedEventsAfter<DB extends WebhookTables>(
  db: Kysely<DB>, clientId: string, [commit, prepare, ordinal]: readonly [string, string, string], type: WebhookEventsTable['event_type'] | undefined,
  limit: number,
): Promise<Array<Selectable<WebhookEventsTable>>> {
  let filtered = (db as unknown as Kysely<WebhookTables>).selectFrom('webhook_events').selectAll().where('client_id', '=', clientId)
    .where(sql<boolean>`(feed_commit, feed_prepare, ordinal) > (${commit}::bigint, ${prepare}::bigint, ${ordinal}::int)`);
  if (type) filtered = filtered.where('event_type', '=', type);
  return filtered.orderBy('feed_commit').orderBy('feed_prepare').orderBy('ordinal').limit(limit).execute();
}
