/**
 * The webhook outbox (`webhook_deliveries`, migration 0007): what the dispatcher claims and records, and what
 * the delivery log shows. The emitter (projections/webhooks.ts) inserts; the retention job (./retention.ts) deletes
 * delivered and dropped deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS.
 *
 * A claim is one statement: the due deliveries of endpoints that are enabled, at most `perEndpoint` of each
 * endpoint and `limit` in all, locked with `FOR UPDATE SKIP LOCKED` (so two dispatchers claiming at once take
 * different rows) and leased to the claimer until `leaseUntil` (so no other dispatcher takes them while they are
 * being sent; a dispatcher that dies mid-delivery leaves a lease that runs out, and the delivery is sent again:
 * at least once). A result is recorded only under the claim's own lease token.
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
  now: Date;
  leaseUntil: Date;
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
             AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
           ORDER BY d.next_attempt_at LIMIT 1) f
       WHERE e.enabled AND $5::int - coalesce(busy.n, 0) > 0
       ORDER BY f.first_due LIMIT $4
    ), picked AS (
      SELECT c.delivery_id FROM slots, LATERAL (
        SELECT delivery_id, next_attempt_at FROM webhook_deliveries d
         WHERE d.endpoint_id = slots.endpoint_id AND d.status = 'PENDING' AND d.next_attempt_at <= $1
           AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
         ORDER BY d.next_attempt_at LIMIT slots.free FOR UPDATE SKIP LOCKED) c
       ORDER BY c.next_attempt_at LIMIT $4
    )
    UPDATE webhook_deliveries w SET lease_token = $3, lease_expires_at = $2
      FROM picked, webhook_endpoints e
     WHERE w.delivery_id = picked.delivery_id AND e.endpoint_id = w.endpoint_id
    RETURNING w.delivery_id, w.endpoint_id, w.event_id, w.event_type, w.sequence, w.body, w.attempts, w.first_attempt_at,
              w.source_recorded_at, e.url, e.secret_key_id, e.secret_sealed`,
  [request.now, request.leaseUntil, token, request.limit, request.perEndpoint, [...request.busy.keys()], [...request.busy.values()]]);
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

/** Records one attempt under the claim's lease; answers what became of the delivery. */
export async function recordAttempt(database: Database, claimed: ClaimedDelivery, result: AttemptResult): Promise<AttemptOutcome> {
  const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const attempts = claimed.attempts + 1;
  const firstAttemptAt = claimed.firstAttemptAt ?? result.startedAt;
  const nextAttemptAt = new Date(result.startedAt.getTime() + retryDelayMs(attempts));
  const dropped = !delivered && nextAttemptAt.getTime() - firstAttemptAt.getTime() > DELIVERY_WINDOW_MS;
  const status = delivered ? 'DELIVERED' : dropped ? 'DROPPED' : 'PENDING';
  const error = result.error === null ? null : result.error.slice(0, MAX_ERROR_CHARS);
  const logEntry = JSON.stringify({ at: result.startedAt.toISOString(), durationMs: Math.round(result.durationMs), statusCode: result.statusCode, error });
  const { rowCount } = await database.query(`
    UPDATE webhook_deliveries SET
      status = $3, attempts = $4, first_attempt_at = $5, last_attempt_at = $6, last_status_code = $7, last_error = $8,
      next_attempt_at = $9, delivered_at = $10, dropped_at = $11, lease_token = NULL, lease_expires_at = NULL,
      attempt_log = CASE WHEN jsonb_array_length(attempt_log) >= $13 THEN attempt_log - 0 ELSE attempt_log END || jsonb_build_array($12::jsonb)
    WHERE delivery_id = $1 AND lease_token = $2 AND status = 'PENDING'`,
  [claimed.deliveryId, claimed.leaseToken, status, attempts, firstAttemptAt, result.startedAt, result.statusCode, error,
    status === 'PENDING' ? nextAttemptAt : null, delivered ? result.startedAt : null, dropped ? result.startedAt : null,
    logEntry, MAX_LOGGED_ATTEMPTS]);
  if (rowCount === 0) return 'lease_lost';
  return delivered ? 'delivered' : dropped ? 'dropped' : 'retrying';
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
