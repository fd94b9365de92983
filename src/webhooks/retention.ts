/**
 * Retention of the webhooks' history outside the event store: the outbox's delivered and dropped deliveries (the
 * delivery log) and the webhook events of `GET /events` are kept WEBHOOK_DELIVERY_RETENTION_DAYS, then purged by
 * the `purge-webhook-history` job (RETENTION_CRON). Pending deliveries are never purged, however old. The event
 * store keeps everything: a purged delivery or webhook event can always be told from the events it came from.
 *
 * Bounds: each statement deletes at most PURGE_BATCH_ROWS rows (one short transaction), and a run makes at most
 * PURGE_MAX_BATCHES statements per table, then waits for the next run. Any number of processes may run it at
 * once: deliveries are taken with `FOR UPDATE SKIP LOCKED` (two purges never take the same row), and the webhook
 * events, which are cut as a prefix of the feed, by one process at a time (a transaction-level advisory lock; the
 * others skip that table for the run).
 */
import type { Database } from '../db/database.ts';

/** Rows deleted per statement. */
export const PURGE_BATCH_ROWS = 1_000;
/** Statements per table and run: at most 1,000,000 rows of each table per run and process. */
export const PURGE_MAX_BATCHES = 1_000;

const DAY_MS = 86_400_000;

/** The instant before which a delivery's end, or a webhook event, is past its retention. */
export function retentionHorizon(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * DAY_MS);
}

/**
 * One batch of delivered and dropped deliveries that ended at or before `horizon`, deleted; answers how many. Rows
 * another purge holds are skipped (it deletes them), so each is deleted once.
 */
export async function purgeEndedDeliveries(database: Database, horizon: Date, limit = PURGE_BATCH_ROWS): Promise<number> {
  const { rowCount } = await database.query(`
    DELETE FROM webhook_deliveries WHERE delivery_id IN (
      SELECT delivery_id FROM webhook_deliveries
       WHERE status <> 'PENDING' AND coalesce(delivered_at, dropped_at) <= $1
       ORDER BY coalesce(delivered_at, dropped_at) LIMIT $2 FOR UPDATE SKIP LOCKED)`, [horizon, limit]);
  return rowCount ?? 0;
}

/** The advisory lock that lets one process at a time cut the webhook events' feed. */
const EVENTS_PURGE_LOCK = 'retention:webhook_events';

/**
 * One batch of the events feed's oldest webhook events, deleted: a prefix of the feed, up to the first event newer
 * than `horizon` (so no event after the cut is ever missing), and the cut recorded in `retention_state` in the
 * same transaction. Answers how many were deleted; 0 also when another process is cutting it now.
 */
export async function purgeOldWebhookEvents(database: Database, horizon: Date, limit = PURGE_BATCH_ROWS): Promise<number> {
  const { rows } = await database.query<{ deleted: string | null }>(`
    WITH locked AS (SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':' || $3)) AS held),
    head AS (
      SELECT h.event_id, h.feed_commit, h.feed_prepare, h.ordinal,
             bool_and(h.occurred_at <= $1) OVER (ORDER BY h.feed_commit, h.feed_prepare, h.ordinal) AS old
        FROM (SELECT event_id, feed_commit, feed_prepare, ordinal, occurred_at FROM webhook_events
               WHERE (SELECT held FROM locked)
               ORDER BY feed_commit, feed_prepare, ordinal LIMIT $2) h
    ), gone AS (
      DELETE FROM webhook_events w USING head WHERE w.event_id = head.event_id AND head.old
      RETURNING w.feed_commit, w.feed_prepare, w.ordinal
    ), last AS (
      SELECT feed_commit, feed_prepare, ordinal FROM gone ORDER BY feed_commit DESC, feed_prepare DESC, ordinal DESC LIMIT 1
    ), cut AS (
      INSERT INTO retention_state (name, feed_commit, feed_prepare, ordinal, purged_before, updated_at)
      SELECT 'webhook_events', feed_commit, feed_prepare, ordinal, $1, now() FROM last
      ON CONFLICT (name) DO UPDATE SET feed_commit = excluded.feed_commit, feed_prepare = excluded.feed_prepare,
        ordinal = excluded.ordinal, purged_before = excluded.purged_before, updated_at = excluded.updated_at
       WHERE (retention_state.feed_commit, retention_state.feed_prepare, retention_state.ordinal)
           < (excluded.feed_commit, excluded.feed_prepare, excluded.ordinal)
    )
    SELECT (SELECT count(*) FROM gone)::text AS deleted`, [horizon, limit, EVENTS_PURGE_LOCK]);
  return Number(rows[0]?.deleted ?? 0);
}

/** Where the events feed was cut: every webhook event at or before this position is purged, every one after it kept. */
export interface FeedCut {
  commit: string;
  prepare: string;
  ordinal: number;
  /** The events purged were at least this old. */
  purgedBefore: Date;
}

export async function webhookEventsCut(database: Database): Promise<FeedCut | null> {
  const { rows } = await database.query<{ c: string; p: string; ordinal: number; purged_before: Date }>(
    `SELECT feed_commit::text AS c, feed_prepare::text AS p, ordinal, purged_before FROM retention_state WHERE name = 'webhook_events'`);
  const row = rows[0];
  return row ? { commit: row.c, prepare: row.p, ordinal: row.ordinal, purgedBefore: row.purged_before } : null;
}

export interface PurgeResult {
  deliveries: number;
  events: number;
}

/** The job: deliveries and webhook events past their retention, in batches until none is left or the run's bound. */
export async function purgeWebhookHistory(database: Database, now: Date, retentionDays: number): Promise<PurgeResult> {
  const horizon = retentionHorizon(now, retentionDays);
  const result: PurgeResult = { deliveries: 0, events: 0 };
  for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
    const deleted = await purgeEndedDeliveries(database, horizon);
    result.deliveries += deleted;
    if (deleted < PURGE_BATCH_ROWS) break;
  }
  for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
    const deleted = await purgeOldWebhookEvents(database, horizon);
    result.events += deleted;
    if (deleted < PURGE_BATCH_ROWS) break;
  }
  return result;
}
