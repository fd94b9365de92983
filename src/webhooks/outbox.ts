/**
 * The webhook outbox (`webhook_deliveries`, migration 0007): what the dispatcher claims and records, and what
 * the delivery log shows. The emitter (projections/webhooks.ts) inserts; the retention job (./retention.ts) deletes
 * delivered and dropped deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS.
 *
 * A claim is one statement: the due deliveries of endpoints that are enabled, at most `perEndpoint` of each
 * endpoint and `limit` in all, locked with `FOR UPDATE SKIP LOCKED` (so two dispatchers claiming at once take
 * different rows) and leased to the claimer for `leaseMs` (so no other dispatcher takes them while they are
 * being sent; a dispatcher that dies mid-delivery leaves a lease that runs out, and the delivery is sent again:
 * at least once). A result is recorded only under the claim's own lease token.
 *
 * Due times are the service's clock (`now`, which tests move forward); leases are the database's clock. A lease
 * bounds how long an attempt may really take, so it is measured by the one clock every dispatcher shares and that
 * nothing moves: a clock moved forward (a test's, or a machine's stepped or running ahead of another's) would
 * otherwise end leases whose attempts are still in flight, and the delivery would be claimed and sent again.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import type { SealedSecret } from './events.ts';
import { TEST_EVENT_TYPE } from '../../schemas/webhooks.ts';

/** First retry after a failed attempt; each later one waits twice as long as the one before, up to the cap. */
export const FIRST_RETRY_MS = 30_000;
export const MAX_RETRY_MS = 3_600_000;
/** A delivery whose next attempt would come later than this after its first attempt is dropped instead. */
export const DELIVERY_WINDOW_MS = 24 * 3_600_000;
/** Attempts kept in a delivery's log (about 30 fit in the 24-hour window; the cap is a bound, not a policy). */
const MAX_LOGGED_ATTEMPTS = 100;
/** Longest error text kept per attempt, in characters. */
const MAX_ERROR_CHARS = 300;

export function retryDelayMs(failedAttempts: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(failedAttempts - 1, 0), MAX_RETRY_MS);
}

export interface ClaimedDelivery {
  deliveryId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  sequence: number | null;
  body: string;
  attempts: number;
  firstAttemptAt: Date | null;
  sourceRecordedAt: Date | null;
  leaseToken: string;
  url: string;
  secret: SealedSecret;
}

export interface ClaimRequest {
  /** What is due by this time (the service's clock) is claimed. */
  now: Date;
  /** How long the claim is leased, in ms of the database's clock. */
  leaseMs: number;
  /** Deliveries the claimer holds already (being sent, waiting for a slot, or being recorded): never claimed again by it. */
  held: readonly string[];
  /** At most this many in all. */
  limit: number;
  /** At most this many of one endpoint, less what `busy` says is in flight there already. */
  perEndpoint: number;
  busy: ReadonlyMap<string, number>;
  /** Identifies the claimer in lease tokens (logs, the delivery log's diagnosis). */
  owner: string;
}

export async function claimDue(database: Database, request: ClaimRequest): Promise<ClaimedDelivery[]> {
  if (request.limit <= 0) return [];
  const token = `${request.owner}:${randomUUID()}`;
  const { rows } = await database.query(`
    WITH slots AS (
      -- Per enabled endpoint with room left in this dispatcher, its first due delivery: one probe of the index
      -- each, however long the queue. Endpoints at their limit are left out before the LIMIT, so a slow one
      -- holding its slots never takes the place of another.
      SELECT e.endpoint_id, f.first_due, $5::int - coalesce(busy.n, 0) AS free
        FROM webhook_endpoints e
        LEFT JOIN unnest($6::text[], $7::int[]) AS busy(endpoint_id, n) ON busy.endpoint_id = e.endpoint_id,
        LATERAL (
          SELECT d.next_attempt_at AS first_due FROM webhook_deliveries d
           WHERE d.endpoint_id = e.endpoint_id AND d.status = 'PENDING' AND d.next_attempt_at <= $1
             AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now()) AND d.delivery_id <> ALL($8::text[])
           ORDER BY d.next_attempt_at LIMIT 1) f
       WHERE e.enabled AND $5::int - coalesce(busy.n, 0) > 0
       ORDER BY f.first_due LIMIT $4
    ), picked AS (
      SELECT c.delivery_id FROM slots, LATERAL (
        SELECT delivery_id, next_attempt_at FROM webhook_deliveries d
         WHERE d.endpoint_id = slots.endpoint_id AND d.status = 'PENDING' AND d.next_attempt_at <= $1
           AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now()) AND d.delivery_id <> ALL($8::text[])
         ORDER BY d.next_attempt_at LIMIT slots.free FOR UPDATE SKIP LOCKED) c
       ORDER BY c.next_attempt_at LIMIT $4
    )
    UPDATE webhook_deliveries w SET lease_token = $3, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
      FROM picked, webhook_endpoints e
     WHERE w.delivery_id = picked.delivery_id AND e.endpoint_id = w.endpoint_id
    RETURNING w.delivery_id, w.endpoint_id, w.event_id, w.event_type, w.sequence, w.body, w.attempts, w.first_attempt_at,
              w.source_recorded_at, e.url, e.secret_key_id, e.secret_sealed`,
  [request.now, request.leaseMs, token, request.limit, request.perEndpoint, [...request.busy.keys()], [...request.busy.values()], request.held]);
  return rows.map((r) => ({
    deliveryId: r.delivery_id, endpointId: r.endpoint_id, eventId: r.event_id, eventType: r.event_type,
    sequence: r.sequence === null ? null : Number(r.sequence), body: r.body, attempts: r.attempts,
    firstAttemptAt: r.first_attempt_at, sourceRecordedAt: r.source_recorded_at, leaseToken: token, url: r.url,
    secret: { keyId: r.secret_key_id, sealed: r.secret_sealed },
  }));
}

export interface AttemptResult {
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

export type AttemptOutcome = 'delivered' | 'retrying' | 'dropped' | 'lease_lost';

/**
 * Records attempts under their claims' leases, one statement for all of them; answers what became of each
 * delivery, in order ('lease_lost' when the claim was taken over meanwhile, or the delivery is no longer pending).
 */
export async function recordAttempts(
  database: Database, attempts: ReadonlyArray<{ claimed: ClaimedDelivery; result: AttemptResult }>,
): Promise<AttemptOutcome[]> {
  if (attempts.length === 0) return [];
  const rows = attempts.map(({ claimed, result }, n) => {
    const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const count = claimed.attempts + 1;
    const firstAttemptAt = claimed.firstAttemptAt ?? result.startedAt;
    const nextAttemptAt = new Date(result.startedAt.getTime() + retryDelayMs(count));
    const dropped = !delivered && nextAttemptAt.getTime() - firstAttemptAt.getTime() > DELIVERY_WINDOW_MS;
    const status = delivered ? 'DELIVERED' : dropped ? 'DROPPED' : 'PENDING';
    const error = result.error === null ? null : result.error.slice(0, MAX_ERROR_CHARS);
    return {
      n, delivery_id: claimed.deliveryId, lease_token: claimed.leaseToken, status, attempts: count,
      first_attempt_at: firstAttemptAt.toISOString(), last_attempt_at: result.startedAt.toISOString(), last_status_code: result.statusCode,
      last_error: error, next_attempt_at: status === 'PENDING' ? nextAttemptAt.toISOString() : null,
      delivered_at: delivered ? result.startedAt.toISOString() : null, dropped_at: dropped ? result.startedAt.toISOString() : null,
      entry: { at: result.startedAt.toISOString(), durationMs: Math.round(result.durationMs), statusCode: result.statusCode, error },
    };
  });
  const { rows: recorded } = await database.query<{ n: number }>(`
    UPDATE webhook_deliveries w SET
      status = x.status, attempts = x.attempts, first_attempt_at = x.first_attempt_at, last_attempt_at = x.last_attempt_at,
      last_status_code = x.last_status_code, last_error = x.last_error, next_attempt_at = x.next_attempt_at,
      delivered_at = x.delivered_at, dropped_at = x.dropped_at, lease_token = NULL, lease_expires_at = NULL,
      attempt_log = CASE WHEN jsonb_array_length(w.attempt_log) >= $2 THEN w.attempt_log - 0 ELSE w.attempt_log END || jsonb_build_array(x.entry)
      FROM jsonb_to_recordset($1::jsonb) AS x(n integer, delivery_id text, lease_token text, status text, attempts integer,
        first_attempt_at timestamptz, last_attempt_at timestamptz, last_status_code integer, last_error text,
        next_attempt_at timestamptz, delivered_at timestamptz, dropped_at timestamptz, entry jsonb)
     WHERE w.delivery_id = x.delivery_id AND w.lease_token = x.lease_token AND w.status = 'PENDING'
       -- The ids again as an array: the planner knows how few they are and looks each up by its key. Joined to the
       -- recordset alone (which it guesses at a hundred rows), it read the whole outbox on every call while that
       -- held some tens of thousands of rows: three quarters of the outbox's time in the database.
       AND w.delivery_id = ANY($3::text[])
    RETURNING x.n`, [JSON.stringify(rows), MAX_LOGGED_ATTEMPTS, rows.map((row) => row.delivery_id)]);
  const kept = new Set(recorded.map((row) => row.n));
  return rows.map((row) => (!kept.has(row.n) ? 'lease_lost' : row.status === 'DELIVERED' ? 'delivered' : row.status === 'DROPPED' ? 'dropped' : 'retrying'));
}

/** Gives a claim back unsent (the dispatcher is stopping, or its secret could not be opened). */
export async function releaseClaim(database: Database, claimed: ClaimedDelivery, error: string | null, retryAt: Date | null): Promise<void> {
  await database.query(`
    UPDATE webhook_deliveries SET lease_token = NULL, lease_expires_at = NULL,
           last_error = coalesce($3, last_error), next_attempt_at = coalesce($4, next_attempt_at)
     WHERE delivery_id = $1 AND lease_token = $2`, [claimed.deliveryId, claimed.leaseToken, error, retryAt]);
}

/** Pending deliveries of enabled endpoints, and the creation time of the oldest. */
export async function outboxDepth(database: Database): Promise<{ pending: number; oldestCreatedAt: Date | null }> {
  const { rows } = await database.query(`
    SELECT count(*) AS n, min(d.created_at) AS oldest FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.endpoint_id = d.endpoint_id AND e.enabled WHERE d.status = 'PENDING'`);
  return { pending: Number(rows[0]?.n ?? 0), oldestCreatedAt: rows[0]?.oldest ?? null };
}

/**
 * Sends a delivery again from now: a pending one at once, a delivered or dropped one as a new round (its log
 * kept, its 24-hour window starting again). False when the endpoint has no such delivery.
 */
export async function retryDelivery(database: Database, endpointId: string, deliveryId: string, now: Date): Promise<boolean> {
  const { rowCount } = await database.query(`
    UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = $3, first_attempt_at = NULL, delivered_at = NULL, dropped_at = NULL
     WHERE delivery_id = $1 AND endpoint_id = $2`, [deliveryId, endpointId, now]);
  return (rowCount ?? 0) > 0;
}

/** A signed ping to the endpoint, through the outbox like any delivery. Answers the delivery's id. */
export async function enqueueTestPing(database: Database, endpointId: string, clientId: string, now: Date): Promise<string> {
  const deliveryId = randomUUID();
  const body = JSON.stringify({ eventType: TEST_EVENT_TYPE, timestamp: now.toISOString(), webhook: { id: endpointId } });
  await database.query(`
    INSERT INTO webhook_deliveries (delivery_id, endpoint_id, client_id, event_id, event_type, body, status, created_at, next_attempt_at)
    VALUES ($1, $2, $3, $1, $4, $5, 'PENDING', $6, $6)`, [deliveryId, endpointId, clientId, TEST_EVENT_TYPE, body, now]);
  return deliveryId;
}
