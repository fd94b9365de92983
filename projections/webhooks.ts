/**
 * The webhooks' read models and the emitter. From the feed it keeps:
 * - `webhook_endpoints`: each client's endpoints (the sealed secret with them, for the dispatcher);
 * - `webhook_payments`: what a payment's payloads carry (src/webhooks/mapping.ts), so a status change's payload
 *   is built from the feed alone;
 * - `webhook_events`: every webhook event in feed order, the source of `GET /events`;
 * and writes a delivery into the outbox (`webhook_deliveries`, in the main schema, outside this projector's
 * versioned tables) for every endpoint of the client that subscribes to the event's type. An endpoint gets the
 * events that come after its registration in the feed: the emitter meets them in that order.
 *
 * Nothing is sent twice by a replay: a delivery's key (endpoint, event, event type) is unique, so a second
 * emission of it adds nothing; and a version that rebuilds beside the active one writes no delivery for events
 * the active version has already passed (its checkpoint is the floor), so a bump that changes the mapping does not
 * send old history under new types either.
 */
import { sql, type Kysely } from 'kysely';
import type { Projector } from '../src/projection/projector.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import { deterministicId } from '../src/eventstore/deterministicId.ts';
import { webhookMappings, paymentIdOf, type Emission, type Mapping, type PaymentFacts } from '../src/webhooks/mapping.ts';
import type { WebhookEvent } from '../src/webhooks/events.ts';
import { webhookEventSchemas } from '../src/webhooks/events.ts';

export const WEBHOOKS_PROJECTOR = 'webhooks';
/** Rows per INSERT statement (well under Postgres' 65,535 parameters). */
const ROWS_PER_INSERT = 500;

export const webhookDeliveryId = (endpointId: string, webhookEventId: string) => deterministicId('webhook-delivery', endpointId, webhookEventId);

interface Subscriber {
  endpointId: string;
  events: string[] | null;
  enabled: boolean;
}

type Data<T extends WebhookEvent['type']> = Extract<WebhookEvent, { type: T }>['data'];

/** The active version's checkpoint when another version than `version` is active: no delivery at or before it. */
async function emissionFloor(trx: Kysely<any>, version: number): Promise<Position | null> {
  const { rows } = await sql<{ version: number; c: string | null; p: string | null }>`
    SELECT version, checkpoint_commit AS c, checkpoint_prepare AS p FROM projection_state
     WHERE name = ${WEBHOOKS_PROJECTOR} AND status = 'active'`.execute(trx);
  const active = rows[0];
  if (!active || active.version === version) return null;
  return active.c === null ? null : { commit: BigInt(active.c), prepare: BigInt(active.p!) };
}

async function applyEndpointEvent(trx: Kysely<any>, event: RecordedEvent): Promise<void> {
  const typed = { type: event.type, data: event.data } as WebhookEvent;
  switch (typed.type) {
    case 'WebhookEndpointRegistered': {
      const d = typed.data;
      await trx.insertInto('webhook_endpoints').values({
        endpoint_id: d.endpointId, client_id: d.clientId, url: d.url, events: d.events === null ? null : JSON.stringify(d.events),
        description: d.description, enabled: true, secret_key_id: d.secret.keyId, secret_sealed: d.secret.sealed,
        registered_commit: String(event.position.commit), registered_prepare: String(event.position.prepare),
        created_at: d.registeredAt, updated_at: d.registeredAt,
      }).execute();
      return;
    }
    case 'WebhookEndpointUpdated': {
      const { changes, endpointId, updatedAt } = typed.data as Data<'WebhookEndpointUpdated'>;
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
      const d = typed.data;
      await trx.updateTable('webhook_endpoints').set({ secret_key_id: d.secret.keyId, secret_sealed: d.secret.sealed, updated_at: d.rotatedAt })
        .where('endpoint_id', '=', d.endpointId).execute();
      return;
    }
    case 'WebhookEndpointDeleted':
      await trx.deleteFrom('webhook_endpoints').where('endpoint_id', '=', typed.data.endpointId).execute();
  }
}

async function insertChunked(trx: Kysely<any>, table: string, rows: Record<string, unknown>[], ignoreConflicts: boolean): Promise<void> {
  for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
    let insert = trx.insertInto(table).values(rows.slice(from, from + ROWS_PER_INSERT));
    if (ignoreConflicts) insert = insert.onConflict((oc) => oc.doNothing());
    await insert.execute();
  }
}

async function apply(
  trx: Kysely<any>, events: readonly RecordedEvent[], version: number, mappings: Readonly<Record<string, Mapping>>,
): Promise<void> {
  const floor = await emissionFloor(trx, version);
  const paymentIds = [...new Set(events.map(paymentIdOf).filter((id): id is string => id !== null))];
  const facts = new Map<string, PaymentFacts>();
  if (paymentIds.length > 0) {
    const rows = await trx.selectFrom('webhook_payments').select(['payment_id', 'facts']).where('payment_id', 'in', paymentIds).execute();
    for (const row of rows) facts.set(row.payment_id as string, row.facts as PaymentFacts);
  }
  const changedFacts = new Set<string>();
  const subscribers = new Map<string, Subscriber[]>();
  const subscribersOf = async (clientId: string): Promise<Subscriber[]> => {
    let found = subscribers.get(clientId);
    if (!found) {
      const rows = await trx.selectFrom('webhook_endpoints').select(['endpoint_id', 'events', 'enabled']).where('client_id', '=', clientId).execute();
      found = rows.map((r) => ({ endpointId: r.endpoint_id as string, events: r.events as string[] | null, enabled: r.enabled as boolean }));
      subscribers.set(clientId, found);
    }
    return found;
  };
  const feedRows: Record<string, unknown>[] = [];
  const deliveries: Record<string, unknown>[] = [];
  const now = new Date();

  for (const event of events) {
    if (event.type in webhookEventSchemas) {
      await applyEndpointEvent(trx, event);
      // An endpoint's subscribers are read again after any change to its client's endpoints.
      const clientId = event.metadata.clientId;
      if (typeof clientId === 'string') subscribers.delete(clientId);
      else subscribers.clear();
      if (event.type === 'WebhookEndpointDeleted' && (floor === null || comparePositions(event.position, floor) > 0)) {
        await trx.updateTable('webhook_deliveries')
          .set({ status: 'DROPPED', dropped_at: now, next_attempt_at: null, last_error: 'the webhook was deleted' })
          .where('endpoint_id', '=', (event.data as Data<'WebhookEndpointDeleted'>).endpointId).where('status', '=', 'PENDING').execute();
      }
      continue;
    }
    const mapping = mappings[event.type];
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

  if (changedFacts.size > 0) {
    const rows = [...changedFacts].map((id) => ({ payment_id: id, facts: JSON.stringify(facts.get(id)) }));
    for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
      await trx.insertInto('webhook_payments').values(rows.slice(from, from + ROWS_PER_INSERT))
        .onConflict((oc) => oc.column('payment_id').doUpdateSet((eb) => ({ facts: eb.ref('excluded.facts') }))).execute();
    }
  }
  await insertChunked(trx, 'webhook_events', feedRows, false);
  await insertChunked(trx, 'webhook_deliveries', deliveries, true);
}

function feedRow(event: RecordedEvent, ordinal: number, item: Emission): Record<string, unknown> {
  return {
    event_id: item.id, client_id: item.clientId, feed_commit: String(event.position.commit), feed_prepare: String(event.position.prepare),
    ordinal, event_type: item.eventType, object_id: item.objectId, sequence: item.sequence, occurred_at: item.occurredAt, body: item.body,
  };
}

function deliveryRow(event: RecordedEvent, endpointId: string, item: Emission, now: Date): Record<string, unknown> {
  return {
    delivery_id: webhookDeliveryId(endpointId, item.id), endpoint_id: endpointId, client_id: item.clientId, event_id: item.id,
    source_event_id: event.id, event_type: item.eventType, object_id: item.objectId, sequence: item.sequence, body: item.body,
    status: 'PENDING', created_at: now, source_recorded_at: event.recordedAt, next_attempt_at: now,
  };
}

/** The emitter at `version`, with `mappings` (a test bumps it, with a changed mapping, to see history is not resent). */
export function createWebhooksProjector(version: number, mappings: Readonly<Record<string, Mapping>> = webhookMappings): Projector {
  return {
    name: WEBHOOKS_PROJECTOR,
    version,
    tables: ['webhook_endpoints', 'webhook_payments', 'webhook_events'],
    writesOutside: true,
    handles: [...Object.keys(webhookEventSchemas), ...Object.keys(mappings)],
    setup,
    apply: (trx, events) => apply(trx, events, version, mappings),
  };
}

export const webhooksProjector = createWebhooksProjector(1);

async function setup(trx: Kysely<any>): Promise<void> {
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
  await trx.schema.createTable('webhook_payments')
    .addColumn('payment_id', 'text', (c) => c.primaryKey())
    .addColumn('facts', 'jsonb', (c) => c.notNull())
    .execute();
  await trx.schema.createTable('webhook_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('feed_commit', 'bigint', (c) => c.notNull())
    .addColumn('feed_prepare', 'bigint', (c) => c.notNull())
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text', (c) => c.notNull())
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    // Text, not jsonb: the exact bytes of the payload, as delivered.
    .addColumn('body', 'text', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX webhook_events_feed ON webhook_events (client_id, feed_commit, feed_prepare, ordinal)`.execute(trx);
  await sql`CREATE INDEX webhook_events_feed_type ON webhook_events (client_id, event_type, feed_commit, feed_prepare, ordinal)`.execute(trx);
}

export interface WebhookEndpointRow {
  endpoint_id: string;
  client_id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  secret_key_id: string;
  secret_sealed: string;
  created_at: Date;
  updated_at: Date;
}
