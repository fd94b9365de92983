/**
 * The Postgres event store adapter. Runs unchanged on real Postgres and on PGlite (the same SQL over the
 * same pg.Pool interface); only the wake-up channel differs (LISTEN/NOTIFY across processes on Postgres).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/sql.ts';
import { DuplicateEventIdError, WrongExpectedRevisionError } from '../errors.ts';
import type {
  AppendResult, EventStore, ExpectedRevision, NewEvent, ReadAllOptions, ReadStreamOptions, RecordedEvent,
} from '../port.ts';
import { MAX_READ_LIMIT } from '../port.ts';
import type { Position } from '../position.ts';
import { toBigInt } from '../position.ts';
import { noUpcasting, type UpcasterRegistry } from '../upcasting.ts';
import {
  appendStatements, EVENTS_BY_ID_SQL, HEAD_POSITION_SQL, READ_ALL_AFTER_SQL, READ_ALL_FROM_START_SQL,
  READ_STREAM_BACKWARDS_SQL, READ_STREAM_FORWARDS_SQL, STREAM_EVENTS_BY_ID_SQL,
} from './appendSql.ts';
import { PostgresWakeups } from './wakeups.ts';

/** Retries for 'any' and 'stream_exists' when a concurrent writer took the same revision first. */
const MAX_APPEND_RETRIES = 20;
export const MAX_EVENTS_PER_APPEND = 1_000;

interface FeedRow {
  commit_position: string;
  prepare_position: string;
  id: string;
  stream: string;
  revision: string;
  type: string;
  schema_version: number;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at: Date;
}

interface AppendRow {
  met: boolean;
  current_revision: string | null;
  last_revision: string | null;
  last_position: string | null;
  transaction_id: string;
}

export interface PostgresEventStoreOptions {
  upcasters?: UpcasterRegistry;
  /** Listen for appends made by other processes (real Postgres only). Default: true on Postgres. */
  crossProcessWakeups?: boolean;
  /**
   * Record each event's chain hash (tamper evidence, src/integrity/integrity.ts). Default true, and the service
   * never turns it off: false exists so the benchmark can measure what the hash costs an append in the same run.
   * Events appended without it are reported by `verify integrity` as unchained.
   */
  hashChain?: boolean;
}

const CHAINED = appendStatements(true);
const UNCHAINED = appendStatements(false);

export class PostgresEventStore implements EventStore {
  readonly kind: 'postgres' | 'pglite';
  private readonly upcasters: UpcasterRegistry;
  private readonly local = new EventEmitter();
  private readonly wakeups: PostgresWakeups | null;
  private readonly statements: { one: { name: string; text: string }; many: { name: string; text: string } };

  constructor(private readonly database: Database, options: PostgresEventStoreOptions = {}) {
    this.kind = database.kind;
    this.upcasters = options.upcasters ?? noUpcasting;
    this.local.setMaxListeners(0);
    const chained = options.hashChain ?? true;
    const sql = chained ? CHAINED : UNCHAINED;
    // Prepared statements are named per connection: the unchained ones need names of their own.
    const suffix = chained ? '' : '_unchained';
    this.statements = {
      one: { name: `events_append_one${suffix}`, text: sql.one },
      many: { name: `events_append${suffix}`, text: sql.many },
    };
    const crossProcess = options.crossProcessWakeups ?? database.kind === 'postgres';
    this.wakeups = crossProcess && database.connectionString
      ? new PostgresWakeups(database.connectionString, `events_${database.schema}`, () => this.local.emit('appended'))
      : null;
  }

  /** Tail of the queue of this process's 'any'/'stream_exists' appends, per stream. */
  private readonly streamQueues = new Map<string, Promise<unknown>>();

  async append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (expected !== 'any' && expected !== 'stream_exists') return this.appendOnce(stream, events, expected);
    // Appends that must not fail on a race are queued per stream inside the process, so writers of one
    // process never race each other; the retry below only has to absorb other processes.
    const previous = this.streamQueues.get(stream) ?? Promise.resolve();
    const mine = previous.catch(() => undefined).then(() => this.appendOnce(stream, events, expected));
    this.streamQueues.set(stream, mine);
    try {
      return await mine;
    } finally {
      if (this.streamQueues.get(stream) === mine) this.streamQueues.delete(stream);
    }
  }

  private async appendOnce(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (stream.length === 0 || stream.length > 200) throw new RangeError('stream name must have 1 to 200 characters');
    if (events.length === 0) throw new RangeError('append needs at least one event');
    if (events.length > MAX_EVENTS_PER_APPEND) throw new RangeError(`at most ${MAX_EVENTS_PER_APPEND} events per append`);
    const rows = events.map((event) => ({
      id: event.id ?? randomUUID(),
      type: event.type,
      schema_version: this.upcasters.currentVersion(event.type),
      data: event.data ?? null,
      metadata: event.metadata ?? {},
    }));
    const [kind, exact] = typeof expected === 'bigint' ? ['exact', expected.toString()] : [expected, null];
    const only = rows.length === 1 ? rows[0]! : null;
    const [statement, params] = only
      ? [this.statements.one, [stream, kind, exact, only.id, only.type,
        only.schema_version, JSON.stringify(only.data), JSON.stringify(only.metadata)]]
      : [this.statements.many, [stream, kind, exact, JSON.stringify(rows)]];

    for (let attempt = 0; ; attempt++) {
      let row: AppendRow;
      try {
        const result = await this.database.query<AppendRow>(statement, params);
        row = result.rows[0]!;
      } catch (error) {
        if (isUniqueViolation(error, 'events_stream_revision')) {
          // Someone else appended to the stream between our read of its revision and our insert.
          if ((expected === 'any' || expected === 'stream_exists') && attempt < MAX_APPEND_RETRIES) {
            // Writers racing on one hot stream retry together; jitter spreads them out.
            await new Promise((r) => setTimeout(r, Math.random() * Math.min(1 + attempt, 10)));
            continue;
          }
          // A concurrent twin of this very append (same event ids) won the race: answer as it did.
          const repeat = await this.findRepeat(stream, rows);
          if (repeat) return repeat;
          const actual = await this.currentRevision(stream);
          throw new WrongExpectedRevisionError(stream, expected, actual);
        }
        if (isUniqueViolation(error, 'events_id')) return this.reappended(stream, rows);
        throw error;
      }
      if (!row.met) {
        // The same events appended again (a retried command, a reactor re-run) answer as the first time did.
        const repeat = await this.findRepeat(stream, rows);
        if (repeat) return repeat;
        throw new WrongExpectedRevisionError(
          stream, expected, row.current_revision === null ? 'no_stream' : BigInt(row.current_revision));
      }
      this.local.emit('appended', events.map((event) => event.type));
      this.wakeups?.notifySoon();
      return {
        nextRevision: BigInt(row.last_revision!),
        position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.last_position!) },
      };
    }
  }

  /** Appending events whose ids are already recorded on this stream is a harmless repeat. */
  private async reappended(stream: string, events: Array<{ id: string }>): Promise<AppendResult> {
    const repeat = await this.findRepeat(stream, events);
    if (repeat) return repeat;
    throw new DuplicateEventIdError(stream, events.map((e) => e.id));
  }

  /** The result of the earlier append when every one of these event ids is already on this stream. */
  private async findRepeat(stream: string, events: Array<{ id: string }>): Promise<AppendResult | null> {
    const ids = events.map((e) => e.id);
    const { rows } = await this.database.query<Pick<FeedRow, 'id' | 'stream' | 'revision' | 'commit_position' | 'prepare_position'>>(
      EVENTS_BY_ID_SQL, [ids]);
    if (rows.length !== ids.length || rows.some((r) => r.stream !== stream)) return null;
    const last = rows.reduce((a, b) => (BigInt(a.revision) > BigInt(b.revision) ? a : b));
    return {
      nextRevision: BigInt(last.revision),
      position: { commit: BigInt(last.commit_position), prepare: BigInt(last.prepare_position) },
      repeated: true,
    };
  }

  async findEvents(stream: string, ids: readonly string[]): Promise<RecordedEvent[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.database.query<FeedRow>(STREAM_EVENTS_BY_ID_SQL, [stream, ids]);
    return rows.map((row) => this.toRecorded(row));
  }

  private async currentRevision(stream: string): Promise<bigint | 'no_stream'> {
    const { rows } = await this.database.query<{ revision: string | null }>(
      'SELECT max(revision)::text AS revision FROM events WHERE stream = $1', [stream]);
    const revision = rows[0]?.revision;
    return revision == null ? 'no_stream' : BigInt(revision);
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const limit = boundedLimit(options.limit ?? MAX_READ_LIMIT);
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? BigInt('9223372036854775807') : 0n);
    const { rows } = await this.database.query<FeedRow>(
      backwards ? READ_STREAM_BACKWARDS_SQL : READ_STREAM_FORWARDS_SQL, [stream, from.toString(), limit]);
    return rows.map((row) => this.toRecorded(row));
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const limit = boundedLimit(options.limit);
    const { rows } = options.after
      ? await this.database.query<FeedRow>(READ_ALL_AFTER_SQL, [
        options.after.commit.toString(), options.after.prepare.toString(), limit])
      : await this.database.query<FeedRow>(READ_ALL_FROM_START_SQL, [limit]);
    return rows.map((row) => this.toRecorded(row));
  }

  async headPosition(): Promise<Position | null> {
    const { rows } = await this.database.query<Pick<FeedRow, 'commit_position' | 'prepare_position'>>(HEAD_POSITION_SQL);
    const row = rows[0];
    return row ? { commit: toBigInt(row.commit_position), prepare: toBigInt(row.prepare_position) } : null;
  }

  onAppended(listener: (eventTypes?: readonly string[]) => void): () => void {
    this.local.on('appended', listener);
    this.wakeups?.start();
    return () => this.local.off('appended', listener);
  }

  async close(): Promise<void> {
    this.local.removeAllListeners();
    await this.wakeups?.stop();
  }

  private toRecorded(row: FeedRow): RecordedEvent {
    return this.upcasters.upcast({
      id: row.id,
      stream: row.stream,
      revision: BigInt(row.revision),
      position: { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
      type: row.type,
      schemaVersion: row.schema_version,
      data: row.data,
      metadata: row.metadata,
      recordedAt: row.recorded_at,
    });
  }
}

function boundedLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  return Math.min(limit, MAX_READ_LIMIT);
}
