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
  AppendedListener, AppendResult, EventMetadata, EventStore, ExpectedRevision, NewEvent, ReadAllOptions, ReadStreamOptions, RecordedEvent,
} from '../port.ts';
import { MAX_READ_LIMIT } from '../port.ts';
import type { Position } from '../position.ts';
import { toBigInt } from '../position.ts';
import { noUpcasting, type UpcasterRegistry } from '../upcasting.ts';
import {
  appendStatements, EVENTS_BY_ID_SQL, HEAD_POSITION_SQL, READ_ALL_AFTER_SQL, READ_ALL_FROM_START_SQL,
  READ_STREAM_BACKWARDS_SQL, READ_STREAM_FORWARDS_SQL, READ_STREAMS_SQL, READ_TAIL_SQL, STREAM_EVENTS_BY_ID_SQL,
} from './appendSql.ts';
import { PostgresWakeups } from './wakeups.ts';

/** Retries for 'any' and 'stream_exists' when a concurrent writer took the same revision first. */
const MAX_APPEND_RETRIES = 20;
export const MAX_EVENTS_PER_APPEND = 1_000;
/** Appends in one group commit at most, and their events: one statement carries them all. */
const MAX_GROUP_MEMBERS = 500;
const MAX_GROUP_EVENTS = 5_000;
/**
 * Group statements in flight at once. More overlap round trips when the load is light; under load, appends that
 * arrive while they are all in flight wait for the next group, which is how groups grow with the load.
 */
const MAX_GROUPS_IN_FLIGHT = 4;
/**
 * What waits is spread over the free slots, but never into groups smaller than this: on a busy machine statements
 * in flight side by side get more of it, while each group saves commits and round trips.
 */
const MIN_SPLIT_GROUP = 4;

/** Forward stream reads in one read group at most (each answers at most MAX_READ_LIMIT events of its stream). */
const MAX_READ_GROUP_MEMBERS = 64;
/**
 * Read groups in flight at once. Reads made while they are all in flight wait for the next group: under load they
 * go in fewer statements, and leave the pool's other connections to appends, projectors and requests. One at a
 * time took a statement or so off an unmatched deposit under load, but held back the reactors: card payments on
 * autopilot left 1,806 unsettled when a minute of load stopped, against 903 with four.
 */
const MAX_READ_GROUPS_IN_FLIGHT = 4;
/**
 * Named: parsed once per connection, as the appends' statements are, and planned once Postgres finds its generic
 * plan as good as a fresh one (planning cost the database more than running these reads did).
 */
const READ_STREAMS_STATEMENT = { name: 'events_read_streams', text: READ_STREAMS_SQL };
const READ_STREAM_FORWARDS_STATEMENT = { name: 'events_read_stream', text: READ_STREAM_FORWARDS_SQL };
const READ_STREAM_BACKWARDS_STATEMENT = { name: 'events_read_stream_backwards', text: READ_STREAM_BACKWARDS_SQL };
const READ_TAIL_STATEMENT = { name: 'events_read_tail', text: READ_TAIL_SQL };
const HEAD_POSITION_STATEMENT = { name: 'events_head_position', text: HEAD_POSITION_SQL };

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

interface GroupRow extends AppendRow {
  m: number;
}

interface StoredRow {
  id: string;
  type: string;
  schema_version: number;
  data: unknown;
  metadata: EventMetadata;
}

/** One forward stream read waiting for its group. */
interface StreamRead {
  stream: string;
  from: bigint;
  limit: number;
  resolve(events: RecordedEvent[]): void;
  reject(error: unknown): void;
}

/** One append waiting for its group. */
interface Member {
  stream: string;
  rows: StoredRow[];
  expected: ExpectedRevision;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
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
  private readonly statements: { one: { name: string; text: string }; many: { name: string; text: string }; group: { name: string; text: string } };

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
      group: { name: `events_append_group${suffix}`, text: sql.group },
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
    return new Promise<AppendResult>((resolve, reject) => {
      this.waiting.push({ stream, rows, expected, resolve, reject });
      this.scheduleGroup();
    });
  }

  // ------------------------------------------------------------------------------------------ group commit
  //
  // Appends made in the same turn of the event loop, or while MAX_GROUPS_IN_FLIGHT groups are in flight, go to
  // Postgres together: one statement, one transaction, one commit for all of them (appendSql.ts, `group`). At low
  // load an append goes alone, a turn of the event loop later (no timer), as the one-stream statement; under load
  // the round trips and commits per append fall as the groups grow. Two appends to one stream never share a group,
  // nor run in two groups at once: the later waits for the next group, and sees the first one's events.

  /** Appends not yet sent, in the order they were made. */
  private readonly waiting: Member[] = [];
  /** Streams of the groups in flight. */
  private readonly streamsInFlight = new Set<string>();
  private groupsInFlight = 0;
  private groupScheduled = false;

  /** After the I/O callbacks of this turn of the event loop, so that the appends they make join the same group. */
  private scheduleGroup(): void {
    if (this.groupScheduled) return;
    this.groupScheduled = true;
    setImmediate(() => {
      this.groupScheduled = false;
      this.sendGroups();
    });
  }

  private sendGroups(): void {
    while (this.groupsInFlight < MAX_GROUPS_IN_FLIGHT && this.waiting.length > 0) {
      // What waits is spread over the free slots (MIN_SPLIT_GROUP): commits in flight at once share Postgres's WAL
      // flushes, and statements in flight at once overlap their round trips.
      const size = Math.min(MAX_GROUP_MEMBERS,
        Math.max(MIN_SPLIT_GROUP, Math.ceil(this.waiting.length / (MAX_GROUPS_IN_FLIGHT - this.groupsInFlight))));
      const group: Member[] = [];
      const streams = new Set<string>();
      let events = 0;
      for (let i = 0; i < this.waiting.length && group.length < size; ) {
        const member = this.waiting[i]!;
        // A stream already in this group or in flight waits, and so do the later appends to it (order per stream).
        if (streams.has(member.stream) || this.streamsInFlight.has(member.stream)) {
          streams.add(member.stream);
          i++;
          continue;
        }
        if (group.length > 0 && events + member.rows.length > MAX_GROUP_EVENTS) break;
        this.waiting.splice(i, 1);
        group.push(member);
        streams.add(member.stream);
        events += member.rows.length;
      }
      if (group.length === 0) return;
      for (const member of group) this.streamsInFlight.add(member.stream);
      this.groupsInFlight++;
      this.sendGroup(group).finally(() => {
        for (const member of group) this.streamsInFlight.delete(member.stream);
        this.groupsInFlight--;
        if (this.waiting.length > 0) this.scheduleGroup();
      });
    }
  }

  private async sendGroup(group: Member[]): Promise<void> {
    if (group.length === 1) {
      const [member] = group as [Member];
      await this.appendAlone(member.stream, member.rows, member.expected).then(member.resolve, member.reject);
      return;
    }
    let rows: GroupRow[];
    try {
      ({ rows } = await this.database.query<GroupRow>(this.statements.group, [
        JSON.stringify(group.map((member, m) => {
          const [kind, exact] = typeof member.expected === 'bigint' ? ['exact', member.expected.toString()] : [member.expected, null];
          return { m, stream: member.stream, kind, exact };
        })),
        JSON.stringify(group.flatMap((member, m) => member.rows.map((row, o) => ({
          m, o: o + 1, id: row.id, type: row.type, v: row.schema_version, data: row.data, meta: row.metadata,
        })))),
      ]));
    } catch (error) {
      if (isUniqueViolation(error, 'events_stream_revision') || isUniqueViolation(error, 'events_id')) {
        // A writer of another process raced on one of the streams (or ids collide across members): nothing of the
        // group was recorded. Each member on its own has the whole single-append treatment (retries, repeats).
        await Promise.all(group.map((member) => this.appendAlone(member.stream, member.rows, member.expected).then(member.resolve, member.reject)));
        return;
      }
      for (const member of group) member.reject(error);
      return;
    }
    const types: string[] = [];
    let position: Position | null = null;
    const refused: Array<[Member, GroupRow]> = [];
    for (const row of rows) {
      const member = group[row.m]!;
      if (!row.met) {
        refused.push([member, row]);
        continue;
      }
      const result = {
        nextRevision: BigInt(row.last_revision!),
        position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.last_position!) },
      };
      for (const event of member.rows) types.push(event.type);
      if (!position || result.position.prepare > position.prepare) position = result.position;
      member.resolve(result);
    }
    // A refused member is asked whether it is a repeat after the group, without holding the group's slot or streams:
    // it was not appended, so a later append to its stream may go first. Each settles its member, and never rejects.
    for (const [member, row] of refused) {
      void this.repeatOrConflict(member.stream, member.rows, member.expected, row.current_revision).then(member.resolve, member.reject);
    }
    if (position) this.appended(types, position);
  }

  /**
   * An append refused on its expectation: the same events appended again (a retried command, a reactor re-run)
   * answer as the first time did; anything else is a conflict with the stream's revision as the statement saw it.
   */
  private async repeatOrConflict(stream: string, rows: StoredRow[], expected: ExpectedRevision, current: string | null): Promise<AppendResult> {
    const repeat = await this.findRepeat(stream, rows);
    if (repeat) return repeat;
    throw new WrongExpectedRevisionError(stream, expected, current === null ? 'no_stream' : BigInt(current));
  }

  /** Tells this process's consumers (with the types and the position reached) and, soon, other processes'. */
  private appended(types: readonly string[], position: Position): void {
    this.local.emit('appended', types, position);
    this.wakeups?.notifySoon();
  }

  /** One append in a statement of its own (one event, or several to one stream), with retries for a racing writer. */
  private async appendAlone(stream: string, rows: StoredRow[], expected: ExpectedRevision): Promise<AppendResult> {
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
      if (!row.met) return this.repeatOrConflict(stream, rows, expected, row.current_revision);
      const position = { commit: BigInt(row.transaction_id), prepare: BigInt(row.last_position!) };
      this.appended(rows.map((event) => event.type), position);
      return { nextRevision: BigInt(row.last_revision!), position };
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
    if (options.direction === 'backwards') {
      const from = options.fromRevision ?? BigInt('9223372036854775807');
      const { rows } = await this.database.query<FeedRow>(READ_STREAM_BACKWARDS_STATEMENT, [stream, from.toString(), limit]);
      return rows.map((row) => this.toRecorded(row));
    }
    return new Promise<RecordedEvent[]>((resolve, reject) => {
      this.reads.push({ stream, from: options.fromRevision ?? 0n, limit, resolve, reject });
      this.scheduleReads();
    });
  }

  // ------------------------------------------------------------------------------------------ read groups
  //
  // Forward reads of streams made in the same turn of the event loop, or while MAX_READ_GROUPS_IN_FLIGHT groups are
  // in flight, go to Postgres together: one statement for all of them (READ_STREAMS_SQL), each answered with what
  // its own statement would have read. A command catches its fold up with such a read before it decides
  // (../commandHandler.ts), so many commands at once on different streams (a settlement batch, a test clock's
  // advance, requests side by side) cost one round trip for their reads, not one each. At low load a read goes
  // alone, a turn of the event loop later (no timer), as the one-stream statement. Read committed: a group sees
  // every append that had answered before it was sent, as each read alone would.

  /** Forward reads not yet sent, in the order they were made. */
  private readonly reads: StreamRead[] = [];
  private readGroupsInFlight = 0;
  private readsScheduled = false;

  private scheduleReads(): void {
    if (this.readsScheduled) return;
    this.readsScheduled = true;
    setImmediate(() => {
      this.readsScheduled = false;
      this.sendReads();
    });
  }

  private sendReads(): void {
    while (this.readGroupsInFlight < MAX_READ_GROUPS_IN_FLIGHT && this.reads.length > 0) {
      // Spread over the free slots, as the appends are: statements in flight side by side overlap their round trips.
      const size = Math.min(MAX_READ_GROUP_MEMBERS,
        Math.max(MIN_SPLIT_GROUP, Math.ceil(this.reads.length / (MAX_READ_GROUPS_IN_FLIGHT - this.readGroupsInFlight))));
      const group = this.reads.splice(0, size);
      this.readGroupsInFlight++;
      this.sendReadGroup(group).finally(() => {
        this.readGroupsInFlight--;
        if (this.reads.length > 0) this.scheduleReads();
      });
    }
  }

  /** Answers each read of `group` (never throws: a failed statement rejects every read of it). */
  private async sendReadGroup(group: StreamRead[]): Promise<void> {
    try {
      if (group.length === 1) {
        const [read] = group as [StreamRead];
        const { rows } = await this.database.query<FeedRow>(READ_STREAM_FORWARDS_STATEMENT, [read.stream, read.from.toString(), read.limit]);
        read.resolve(rows.map((row) => this.toRecorded(row)));
        return;
      }
      const { rows } = await this.database.query<FeedRow & { n: number }>(READ_STREAMS_STATEMENT, [JSON.stringify(
        group.map((read, n) => ({ n, stream: read.stream, from_revision: read.from.toString(), lim: read.limit })))]);
      const answers = group.map((): RecordedEvent[] => []);
      for (const row of rows) answers[row.n]!.push(this.toRecorded(row));
      group.forEach((read, n) => read.resolve(answers[n]!));
    } catch (error) {
      for (const read of group) read.reject(error);
    }
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const limit = boundedLimit(options.limit);
    const { rows } = options.after
      ? await this.database.query<FeedRow>(READ_ALL_AFTER_SQL, [
        options.after.commit.toString(), options.after.prepare.toString(), limit])
      : await this.database.query<FeedRow>(READ_ALL_FROM_START_SQL, [limit]);
    return rows.map((row) => this.toRecorded(row));
  }

  async readTail(options: ReadAllOptions): Promise<{ events: RecordedEvent[]; held: boolean; holder: number | null }> {
    const limit = boundedLimit(options.limit);
    const { rows } = await this.database.query<FeedRow & { held: boolean | null; holder: number | null }>(
      READ_TAIL_STATEMENT,
      [options.after?.commit.toString() ?? null, options.after?.prepare.toString() ?? null, limit]);
    const last = rows.pop();
    return { events: rows.map((row) => this.toRecorded(row)), held: last?.held === true, holder: last?.holder ?? null };
  }

  async headPosition(): Promise<Position | null> {
    const { rows } = await this.database.query<Pick<FeedRow, 'commit_position' | 'prepare_position'>>(HEAD_POSITION_STATEMENT);
    const row = rows[0];
    return row ? { commit: toBigInt(row.commit_position), prepare: toBigInt(row.prepare_position) } : null;
  }

  onAppended(listener: AppendedListener): () => void {
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
