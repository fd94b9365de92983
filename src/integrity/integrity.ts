/**
 * Tamper evidence for the Postgres event stores (embedded PGlite and PostgreSQL). With EventStoreDB as the
 * store the same chain lives in each event's metadata (src/eventstore/esdb/chain.ts) and `verifyStorageIntegrity`
 * checks it there; the feed digests below are the Postgres stores' (EventStoreDB's log is append-only by
 * construction: it has no way to edit an event in place).
 *
 * - Every event appended records `chain_hash = sha256(previous chain_hash in its stream || content digest)`,
 *   computed by the append statement itself (src/eventstore/postgres/appendSql.ts). Editing an event breaks its own hash; deleting one
 *   leaves a gap in its stream's revisions.
 * - The feed is sealed by digests: `recordFeedDigest` appends a `FeedDigestRecorded` event to the
 *   `integrity-digests` stream, chaining sha256 over the content digests of every event since the previous
 *   digest, in feed order (every event but the digests themselves, which chain to each other through
 *   `previousDigest` and their stream's hashes; so an idle store records no new digest). The first one (the genesis digest) covers every event recorded before the chain
 *   existed, which have no chain hash. A digest also catches what a stream's chain alone cannot: the deletion
 *   of a stream's last events, or of a whole stream.
 * - `verifyIntegrity` recomputes all of it in this process (it does not trust the database to hash) and names
 *   each event that breaks it.
 *
 * What this proves: that nobody changed the history without also rewriting every later hash and digest. An
 * attacker with the database superuser's rights can rewrite both; the defence is to keep copies of the
 * digests outside the database (`verify integrity --json` prints the latest), which a rewrite cannot match.
 */
import { createHash } from 'node:crypto';
import type { Database } from '../db/database.ts';
import type { EventStore } from '../eventstore/port.ts';
import { runCommand, storeOnly } from '../eventstore/streams.ts';
import type { Storage } from '../storage.ts';
import { digestStreamType } from './decider.ts';
import { DIGEST_STREAM, type FeedDigestRecordedData } from './events.ts';
/** Events a digest covers at most; a longer backlog is sealed by the following runs. */
export const MAX_EVENTS_PER_DIGEST = 100_000;
/** Rows read per round trip while hashing. */
const PAGE_ROWS = 5_000;
const SEPARATOR = '\u001f';

interface EventRow {
  stream: string;
  revision: string;
  id: string;
  type: string;
  schema_version: string;
  data: string;
  metadata: string;
  micros: string;
  chain_hash: Buffer | Uint8Array | null;
  commit_position: string;
  prepare_position: string;
}

const ROW_COLUMNS = `stream, revision::text AS revision, id::text AS id, type, schema_version::text AS schema_version,
  data::text AS data, metadata::text AS metadata, (extract(epoch FROM recorded_at) * 1000000)::bigint::text AS micros,
  chain_hash, transaction_id::text AS commit_position, global_position::text AS prepare_position`;

/** The digest of one event's content, exactly as the append statement hashes it. */
export function contentDigest(row: Pick<EventRow, 'id' | 'stream' | 'revision' | 'type' | 'schema_version' | 'data' | 'metadata' | 'micros'>): Buffer {
  return createHash('sha256')
    .update([row.id, row.stream, row.revision, row.type, row.schema_version, row.data, row.metadata, row.micros].join(SEPARATOR), 'utf8')
    .digest();
}

function chainOf(previous: Buffer | null, content: Buffer): Buffer {
  return createHash('sha256').update(previous ?? Buffer.alloc(0)).update(content).digest();
}

const asBuffer = (value: Buffer | Uint8Array | null): Buffer | null => (value === null ? null : Buffer.from(value));

export type IntegrityProblem =
  | { kind: 'altered'; stream: string; revision: string; eventId: string; message: string }
  | { kind: 'missing'; stream: string; revision: string; message: string }
  | { kind: 'unchained'; stream: string; revision: string; eventId: string; message: string }
  | { kind: 'digest'; sequence: number; fromPosition: string | null; toPosition: string; message: string };

export interface IntegrityReport {
  ok: boolean;
  events: number;
  streams: number;
  /** Events recorded before the chain existed (no chain hash): covered only by digests. */
  unchainedEvents: number;
  digests: number;
  /** The newest digest: keep a copy of it outside the database. */
  latestDigest: FeedDigestRecordedData | null;
  /** Events appended after the newest digest: their streams' chains cover them, no digest yet. */
  eventsAfterLatestDigest: number;
  problems: IntegrityProblem[];
}

export interface VerifyOptions {
  /**
   * Called as rows are checked: `done` of `total` (two passes: the streams, then the digests' ranges); `total`
   * is null where the store cannot count its events beforehand (EventStoreDB).
   */
  onProgress?(done: number, total: number | null, phase: 'streams' | 'digests'): void;
  /** Problems reported at most (the check goes on counting). */
  maxProblems?: number;
}

export async function verifyIntegrity(database: Database, options: VerifyOptions = {}): Promise<IntegrityReport> {
  const maxProblems = options.maxProblems ?? 100;
  const problems: IntegrityProblem[] = [];
  const report = (problem: IntegrityProblem) => { if (problems.length < maxProblems) problems.push(problem); };
  const total = Number((await database.query<{ n: string }>('SELECT count(*)::text AS n FROM events')).rows[0]!.n);

  // Pass 1: every stream's revisions and chain, in (stream, revision) order. The ORDER BY names the table's
  // columns: a bare `revision` would sort by the text column of that name the SELECT prints (10 before 2).
  let events = 0;
  let streams = 0;
  let unchained = 0;
  let previous = null as { stream: string; revision: bigint; chain: Buffer | null } | null;
  let after: [string, string] | null = null;
  for (;;) {
    const { rows }: { rows: EventRow[] } = await database.query<EventRow>(after
      ? `SELECT ${ROW_COLUMNS} FROM events WHERE (stream, revision) > ($1, $2::bigint) ORDER BY events.stream, events.revision LIMIT ${PAGE_ROWS}`
      : `SELECT ${ROW_COLUMNS} FROM events ORDER BY events.stream, events.revision LIMIT ${PAGE_ROWS}`, after ?? []);
    for (const row of rows) {
      events++;
      const revision = BigInt(row.revision);
      const chain = asBuffer(row.chain_hash);
      const sameStream: boolean = previous?.stream === row.stream;
      if (!sameStream) streams++;
      const expected: bigint = sameStream ? previous!.revision + 1n : 0n;
      if (revision !== expected) {
        report({ kind: 'missing', stream: row.stream, revision: String(expected),
          message: `stream ${row.stream}: ${revision - expected === 1n ? `revision ${expected} is` : `revisions ${expected} to ${revision - 1n} are`} missing (deleted), before event ${row.id}` });
      } else if (chain === null) {
        unchained++;
        if (sameStream && previous!.chain !== null) {
          report({ kind: 'unchained', stream: row.stream, revision: row.revision, eventId: row.id,
            message: `event ${row.id} (${row.stream} revision ${row.revision}) has no chain hash although the event before it has one` });
        }
      } else if (!chainOf(sameStream ? previous!.chain : null, contentDigest(row)).equals(chain)) {
        report({ kind: 'altered', stream: row.stream, revision: row.revision, eventId: row.id,
          message: `event ${row.id} (${row.stream} revision ${row.revision}, ${row.type}) was altered: its content does not match its chain hash` });
      }
      previous = { stream: row.stream, revision, chain };
    }
    options.onProgress?.(events, total, 'streams');
    if (rows.length < PAGE_ROWS) break;
    const last: EventRow = rows[rows.length - 1]!;
    after = [last.stream, last.revision];
  }

  // Pass 2: every digest against the events of its range, as they are now.
  const digests = await readDigests(database);
  let checked = 0;
  let previousDigest: string | null = null;
  for (const digest of digests) {
    const recomputed = await digestRange(database, previousDigest, digest.fromPosition, digest.toPosition, Number.MAX_SAFE_INTEGER,
      (n) => options.onProgress?.(checked + n, total, 'digests'));
    checked += recomputed.events;
    if (digest.previousDigest !== previousDigest) {
      report({ kind: 'digest', sequence: digest.sequence, fromPosition: digest.fromPosition, toPosition: digest.toPosition,
        message: `digest ${digest.sequence} does not follow digest ${digest.sequence - 1}: a digest was removed or altered` });
    } else if (recomputed.events !== digest.events || recomputed.digest !== digest.digest) {
      report({ kind: 'digest', sequence: digest.sequence, fromPosition: digest.fromPosition, toPosition: digest.toPosition,
        message: `digest ${digest.sequence} (feed after ${digest.fromPosition ?? 'the start'} up to ${digest.toPosition}) covered ` +
          `${digest.events} events; ${recomputed.events} are there now${recomputed.events === digest.events ? ', and one of them differs' : ''}` });
    }
    previousDigest = digest.digest;
  }
  const latest = digests.at(-1) ?? null;
  const tail = latest ? await countAfter(database, latest.toPosition) : events;
  return {
    ok: problems.length === 0, events, streams, unchainedEvents: unchained, digests: digests.length,
    latestDigest: latest, eventsAfterLatestDigest: tail, problems,
  };
}

/** `verifyIntegrity` on the store the service uses: the Postgres stores, or EventStoreDB's chains. */
export async function verifyStorageIntegrity(storage: Pick<Storage, 'mode' | 'database' | 'store'>, options: VerifyOptions = {}): Promise<IntegrityReport> {
  if (storage.mode !== 'eventstoredb') return verifyIntegrity(storage.database, options);
  // Loaded only in this mode, as the storage does: the gRPC client is heavy.
  const { EventStoreDbEventStore } = await import('../eventstore/esdb/eventStoreDbEventStore.ts');
  if (!(storage.store instanceof EventStoreDbEventStore)) throw new Error('storage mode eventstoredb without an EventStoreDB store');
  const checked = await storage.store.verifyChains({
    ...(options.maxProblems === undefined ? {} : { maxProblems: options.maxProblems }),
    onProgress: (events) => options.onProgress?.(events, null, 'streams'),
  });
  const problems: IntegrityProblem[] = checked.problems.map((problem) => (problem.kind === 'missing'
    ? { kind: 'missing', stream: problem.stream, revision: problem.revision, message: problem.message }
    : { kind: problem.kind, stream: problem.stream, revision: problem.revision, eventId: problem.eventId ?? '', message: problem.message }));
  return {
    ok: problems.length === 0, events: checked.events, streams: checked.streams, unchainedEvents: checked.unchainedEvents,
    digests: 0, latestDigest: null, eventsAfterLatestDigest: checked.events, problems,
  };
}

async function readDigests(database: Database): Promise<FeedDigestRecordedData[]> {
  const { rows } = await database.query<{ data: FeedDigestRecordedData }>(
    `SELECT data FROM events WHERE stream = $1 AND type = 'FeedDigestRecorded' ORDER BY revision`, [DIGEST_STREAM]);
  return rows.map((r) => r.data);
}

const splitPosition = (position: string): [string, string] => {
  const [commit, prepare] = position.split('-');
  return [commit!, prepare!];
};

async function countAfter(database: Database, position: string): Promise<number> {
  const { rows } = await database.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM events WHERE (transaction_id, global_position) > ($1::text::xid8, $2::bigint) AND stream <> $3`,
    [...splitPosition(position), DIGEST_STREAM]);
  return Number(rows[0]!.n);
}

/**
 * The digest of the visible feed after `from` (exclusive) up to `to` (inclusive, or as far as `limit` events
 * reach when `to` is null), chained onto `previous`.
 */
async function digestRange(
  database: Database, previous: string | null, from: string | null, to: string | null, limit: number,
  onProgress?: (events: number) => void,
): Promise<{ events: number; digest: string; last: string | null }> {
  const hash = createHash('sha256');
  if (previous) hash.update(Buffer.from(previous, 'hex'));
  let events = 0;
  let cursor = from;
  let last: string | null = null;
  const upTo = to ? splitPosition(to) : null;
  while (events < limit) {
    const params: unknown[] = [];
    const where = ['transaction_id < pg_snapshot_xmin(pg_current_snapshot())', 'stream <> $1'];
    params.push(DIGEST_STREAM);
    if (cursor) {
      params.push(...splitPosition(cursor));
      where.push(`(transaction_id, global_position) > ($${params.length - 1}::text::xid8, $${params.length}::bigint)`);
    }
    if (upTo) {
      params.push(...upTo);
      where.push(`(transaction_id, global_position) <= ($${params.length - 1}::text::xid8, $${params.length}::bigint)`);
    }
    const { rows } = await database.query<EventRow>(
      `SELECT ${ROW_COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY transaction_id, global_position LIMIT ${Math.min(PAGE_ROWS, limit - events)}`,
      params);
    for (const row of rows) hash.update(contentDigest(row));
    events += rows.length;
    onProgress?.(events);
    if (rows.length === 0) break;
    const tail = rows[rows.length - 1]!;
    last = cursor = `${tail.commit_position}-${tail.prepare_position}`;
    if (rows.length < PAGE_ROWS) break;
  }
  return { events, digest: hash.digest('hex'), last };
}

/**
 * Seals the events recorded since the previous digest (at most MAX_EVENTS_PER_DIGEST) with a new digest event.
 * Safe on several instances at once: the digest stream's expected revision lets one of them record it.
 * Answers the digest recorded, or null when there was nothing new (or another instance recorded it).
 */
export async function recordFeedDigest(database: Database, store: EventStore, now: Date): Promise<FeedDigestRecordedData | null> {
  const digests = await readDigests(database);
  const latest = digests.at(-1) ?? null;
  const range = await digestRange(database, latest?.digest ?? null, latest?.toPosition ?? null, null, MAX_EVENTS_PER_DIGEST);
  if (range.events === 0 || range.last === null) return null;
  const data: FeedDigestRecordedData = {
    sequence: (latest?.sequence ?? 0) + 1,
    fromPosition: latest?.toPosition ?? null,
    toPosition: range.last,
    events: range.events,
    digest: range.digest,
    previousDigest: latest?.digest ?? null,
    recordedAt: now.toISOString(),
  };
  const { events } = await runCommand(storeOnly(store), digestStreamType, DIGEST_STREAM, { type: 'RecordDigest', digest: data },
    { actor: 'integrity' }, { expectNewStream: digests.length === 0 });
  return events.length > 0 ? data : null;
}
