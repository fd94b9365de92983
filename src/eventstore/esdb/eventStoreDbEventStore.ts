/**
 * The EventStoreDB adapter, over `@eventstore/db-client` (gRPC). Same contract as the Postgres adapter:
 * exact expected-revision checks, an absent stream reads as empty, a global feed read strictly after a
 * position, upcasting on read, and wake-ups for consumers.
 *
 * Layout of a stored event: ESDB's own id, type and JSON data; its custom metadata is our EventMetadata plus
 * `schemaVersion` (the version the event was written with) and `chainHash` (the stream's hash chain, tamper
 * evidence: ./chain.ts), so both are reserved metadata keys here.
 *
 * The chain needs the hash of the event before the batch, so an append first reads the stream's last events
 * and then appends at exactly that revision: an append expecting 'any' or 'stream_exists' retries when another
 * writer got there first (queued per stream inside the process, so only other processes race).
 *
 * The global feed leaves out ESDB's system records (event types or stream names starting with `$`), so this
 * adapter refuses to append to such streams or with such types: they would never reach a consumer.
 */
import { randomUUID } from 'node:crypto';
import {
  ANY, BACKWARDS, END, EventStoreDBClient, excludeSystemEvents, FORWARDS, jsonEvent, NO_STREAM, START,
  STREAM_EXISTS, StreamNotFoundError, WrongExpectedVersionError,
  type AppendExpectedRevision, type JSONType, type ReadPosition,
} from '@eventstore/db-client';
import { WrongExpectedRevisionError } from '../errors.ts';
import type {
  AppendResult, EventMetadata, EventStore, ExpectedRevision, NewEvent, ReadAllOptions, ReadStreamOptions,
  RecordedEvent,
} from '../port.ts';
import { FIND_EVENTS_WINDOW, MAX_READ_LIMIT } from '../port.ts';
import { comparePositions, toBigInt, type Position } from '../position.ts';
import { noUpcasting, type UpcasterRegistry } from '../upcasting.ts';
import { SubscriptionSupervisor, type CheckpointSource, type SubscriptionDrop } from './subscriptionSupervisor.ts';
import { CHAIN_METADATA_KEY, ChainChecker, chainHashIn, esdbChainHash, type ChainProblem } from './chain.ts';

/** Same bound as the Postgres adapter. */
export const MAX_EVENTS_PER_APPEND = 1_000;
/** Raw records fetched per round trip while skipping system records (feed pages and the head lookup). */
const MIN_PAGE = 64;
/** Retries of an 'any' or 'stream_exists' append that another process's append beat to the revision. */
const MAX_APPEND_RETRIES = 20;
/** Streams whose last chain hash is remembered (about 200 bytes each). */
const MAX_CHAIN_TIPS = 10_000;
/**
 * Events at a stream's end searched for a batch appended again with 'any' or 'stream_exists' (a repeat further
 * back than that is appended again: best effort, as EventStoreDB's own check for 'any' is).
 */
const REPEAT_WINDOW = 32;
/** Records read per round trip while verifying the chains. */
const VERIFY_PAGE = 4_096;

export interface EventStoreDbEventStoreOptions {
  /** e.g. `esdb://localhost:2113?tls=false` */
  connectionString: string;
  upcasters?: UpcasterRegistry;
  /**
   * Where the wake-up subscription starts, asked again on every resubscribe: normally the lowest projection
   * checkpoint stored in Postgres, so events appended while the subscription was down still wake consumers.
   * Null (and the default, when omitted) subscribes from the current end of the log.
   */
  checkpointSource?: CheckpointSource;
  /** Backoff of the wake-up subscription's supervisor. Default 100 ms doubling up to 10 s. */
  resubscribe?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Told about each drop of the wake-up subscription (for logging). */
  onSubscriptionDrop?: (drop: SubscriptionDrop) => void;
}

/** The fields of the client's recorded event this adapter uses; 64-bit values may come as number or bigint. */
interface ClientRecordedEvent {
  streamId: string;
  id: string;
  revision: bigint | number | string;
  type: string;
  created: Date | number | string;
  data: unknown;
  metadata: unknown;
  position?: { commit: bigint | number | string; prepare: bigint | number | string } | undefined;
}

/** An event of an append, ready to be chained and sent. */
interface BatchEvent {
  id: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  schemaVersion: number;
}

interface ClientResolvedEvent {
  event?: ClientRecordedEvent | undefined;
}

export class EventStoreDbEventStore implements EventStore {
  readonly kind = 'eventstoredb' as const;
  private readonly client: EventStoreDBClient;
  private readonly upcasters: UpcasterRegistry;
  private readonly listeners = new Set<() => void>();
  private readonly supervisor: SubscriptionSupervisor;
  private closed = false;

  constructor(options: EventStoreDbEventStoreOptions) {
    this.client = EventStoreDBClient.connectionString(options.connectionString);
    this.upcasters = options.upcasters ?? noUpcasting;
    const checkpointSource = options.checkpointSource ?? (async () => null);
    this.supervisor = new SubscriptionSupervisor(
      (from) => {
        const subscription = this.client.subscribeToAll({
          fromPosition: from ?? END,
          filter: excludeSystemEvents(),
        });
        // Once the server confirms, wake consumers: something may have been appended while we were not subscribed.
        subscription.once('confirmation', () => this.notify());
        return subscription;
      },
      checkpointSource,
      () => this.notify(),
      {
        initialDelayMs: options.resubscribe?.initialDelayMs ?? 100,
        maxDelayMs: options.resubscribe?.maxDelayMs ?? 10_000,
        ...(options.onSubscriptionDrop ? { onDrop: options.onSubscriptionDrop } : {}),
      },
    );
  }

  /** Tail of the queue of this process's 'any'/'stream_exists' appends, per stream. */
  private readonly streamQueues = new Map<string, Promise<unknown>>();
  /** The chain hash this process last appended per stream, so the next exact append need not read it back. */
  private readonly chainTips = new Map<string, { revision: bigint; chain: string | null }>();

  /**
   * Re-appending events with the same ids is idempotent: at an exact revision or no_stream EventStoreDB answers
   * success without writing when the batch's ids are the stream's events after that revision; for 'any' and
   * 'stream_exists' this adapter recognises a batch that is already the stream's last events. Ids are scoped to
   * a stream there, so the same id on another stream is simply another event.
   */
  async append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (stream.length === 0 || stream.length > 200) throw new RangeError('stream name must have 1 to 200 characters');
    if (stream.startsWith('$')) throw new RangeError(`stream ${stream}: names starting with $ are system streams`);
    if (events.length === 0) throw new RangeError('append needs at least one event');
    if (events.length > MAX_EVENTS_PER_APPEND) throw new RangeError(`at most ${MAX_EVENTS_PER_APPEND} events per append`);
    if (typeof expected === 'bigint' && expected < 0n) throw new RangeError('an expected revision must not be negative');
    const batch = events.map((event) => {
      if (event.type.length === 0 || event.type.startsWith('$')) {
        throw new RangeError(`event type ${JSON.stringify(event.type)}: must be non-empty and not start with $`);
      }
      const metadata = { ...(event.metadata ?? {}) };
      delete metadata.schemaVersion;
      delete metadata[CHAIN_METADATA_KEY];
      // The server reads ids as GUIDs and prints them lower-case: hash them as it will give them back.
      const id = (event.id ?? randomUUID()).toLowerCase();
      if (!CANONICAL_UUID.test(id)) throw new RangeError(`event id ${JSON.stringify(event.id)}: must be a UUID (8-4-4-4-12 hex digits)`);
      return {
        id,
        type: event.type,
        // JSON.stringify(undefined) is not JSON: store null like the Postgres adapter does.
        data: event.data ?? null,
        metadata,
        schemaVersion: this.upcasters.currentVersion(event.type),
      };
    });
    if (expected !== 'any' && expected !== 'stream_exists') return this.appendAt(stream, batch, expected, expected);
    const previous = this.streamQueues.get(stream) ?? Promise.resolve();
    const mine = previous.catch(() => undefined).then(() => this.appendAtTip(stream, batch, expected));
    this.streamQueues.set(stream, mine);
    try {
      return await mine;
    } finally {
      if (this.streamQueues.get(stream) === mine) this.streamQueues.delete(stream);
    }
  }

  /** 'any' / 'stream_exists': at the stream's current end, again if another process appended meanwhile. */
  private async appendAtTip(stream: string, batch: readonly BatchEvent[], expected: 'any' | 'stream_exists'): Promise<AppendResult> {
    for (let attempt = 0; ; attempt++) {
      const tail = await this.lastEvents(stream, Math.max(batch.length, REPEAT_WINDOW));
      if (tail.length === 0 && expected === 'stream_exists') throw new WrongExpectedRevisionError(stream, expected, 'no_stream');
      const repeat = repeatIn(tail, batch);
      if (repeat) return { nextRevision: toBigInt(repeat.revision), position: positionOfRecord(repeat), repeated: true };
      const tip = tail.length === 0 ? 'no_stream' : toBigInt(tail[tail.length - 1]!.revision);
      try {
        return await this.appendAt(stream, batch, tip, expected, tail.at(-1) ?? null);
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_APPEND_RETRIES) throw error;
        // Writers of several processes racing on one stream retry together; jitter spreads them out.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(1 + attempt, 10)));
      }
    }
  }

  /**
   * Appends at an exact place (after revision `at`, or as a new stream), chaining from the event there: `tip`
   * when the caller has read it already, else the hash this process last wrote or read at that revision, else
   * read from the server. `asked` is what the caller expected, for the error it gets.
   */
  private async appendAt(
    stream: string, batch: readonly BatchEvent[], at: bigint | 'no_stream', asked: ExpectedRevision,
    tip?: ClientRecordedEvent | null,
  ): Promise<AppendResult> {
    let chain: string | null = null;
    if (at !== 'no_stream') {
      const known = this.chainTips.get(stream);
      if (tip === undefined && known?.revision === at) {
        chain = known.chain;
      } else {
        const before = tip !== undefined ? tip : (await this.lastEvents(stream, 1, at))[0] ?? null;
        // When the stream does not end at `at` the server refuses the append, or answers a repeat of a batch it
        // holds already without writing: the chain computed here is then never stored.
        chain = before && toBigInt(before.revision) === at ? chainHashIn(before.metadata) : null;
      }
    }
    let revision = at === 'no_stream' ? 0n : at + 1n;
    const proposed = batch.map((event) => {
      chain = esdbChainHash(chain, { ...event, stream, revision: revision++ });
      return jsonEvent({
        id: event.id,
        type: event.type,
        // Event data is the JSON its stored contract describes (the port takes it as `unknown`).
        data: event.data as JSONType,
        metadata: { ...event.metadata, schemaVersion: event.schemaVersion, [CHAIN_METADATA_KEY]: chain },
      });
    });

    let result;
    try {
      result = await this.client.appendToStream(stream, proposed, { expectedRevision: toClientExpected(at) });
    } catch (error) {
      if (isWrongExpectedVersion(error)) {
        throw new WrongExpectedRevisionError(stream, asked, normaliseActual(error.actualVersion));
      }
      throw error;
    }
    if (!result.success) {
      // Only when the client is set not to throw on append failure; kept for safety.
      throw new WrongExpectedRevisionError(stream, asked, normaliseActual(result.nextExpectedRevision));
    }
    const nextRevision = toBigInt(result.nextExpectedRevision);
    // The hash computed here is the stored one when the events sit where they were numbered.
    if (nextRevision === revision - 1n) this.rememberChainTip(stream, nextRevision, chain);
    this.notify();

    // For a single new event the server's answer is that event's position. A batch of several events, or an
    // idempotent repeat (answered without a position, or with a sentinel), takes the position its last event
    // has in the feed instead, so that a repeat answers exactly as the first append did.
    const reported = result.position ? normalisePosition(result.position) : null;
    if (batch.length === 1 && reported && isRealPosition(reported)) return { nextRevision, position: reported };
    const position = await this.positionOf(stream, nextRevision) ?? (reported && isRealPosition(reported) ? reported : null);
    if (!position) throw new Error(`stream ${stream}: EventStoreDB reported no position for revision ${nextRevision}`);
    return { nextRevision, position };
  }

  /** The event at a revision never changes, so a remembered hash stays true; the oldest are forgotten first. */
  private rememberChainTip(stream: string, revision: bigint, chain: string | null): void {
    this.chainTips.delete(stream);
    this.chainTips.set(stream, { revision, chain });
    for (const oldest of this.chainTips.keys()) {
      if (this.chainTips.size <= MAX_CHAIN_TIPS) break;
      this.chainTips.delete(oldest);
    }
  }

  /** The stream's last `count` events up to revision `upTo` (its end when omitted), oldest first; [] for no stream. */
  private async lastEvents(stream: string, count: number, upTo?: bigint): Promise<ClientRecordedEvent[]> {
    try {
      const raw = await collect(this.client.readStream(stream, { direction: BACKWARDS, fromRevision: upTo ?? END, maxCount: count }));
      return raw.flatMap((resolved) => (resolved.event ? [resolved.event] : [])).reverse();
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw error;
    }
  }

  /**
   * Recomputes the hash chain of every stream from the feed, in this process, and checks that each stream's
   * revisions follow each other. Events written before the chain (no `chainHash`) are counted, not faulted,
   * unless one follows a chained event. A stream deleted as a whole leaves no trace in the feed to check.
   */
  async verifyChains(options: {
    onProgress?(events: number): void;
    maxProblems?: number;
  } = {}): Promise<{ events: number; streams: number; unchainedEvents: number; problems: ChainProblem[] }> {
    const maxProblems = options.maxProblems ?? 100;
    const problems: ChainProblem[] = [];
    const checker = new ChainChecker((problem) => { if (problems.length < maxProblems) problems.push(problem); });
    for await (const event of this.forwardRecords(null, () => VERIFY_PAGE)) {
      const { schemaVersion, metadata } = splitMetadata(event.metadata);
      checker.check({
        id: event.id, stream: event.streamId, revision: toBigInt(event.revision), type: event.type, schemaVersion,
        data: event.data, metadata,
      }, chainHashIn(event.metadata));
      if (checker.events % VERIFY_PAGE === 0) options.onProgress?.(checker.events);
    }
    options.onProgress?.(checker.events);
    return { events: checker.events, streams: checker.streams, unchainedEvents: checker.unchained, problems };
  }

  private async positionOf(stream: string, revision: bigint): Promise<Position | null> {
    const raw = await collect(this.client.readStream(stream, { direction: BACKWARDS, fromRevision: revision, maxCount: 1 }));
    const event = raw[0]?.event;
    if (!event?.position || toBigInt(event.revision) !== revision) return null;
    const position = normalisePosition(event.position);
    return isRealPosition(position) ? position : null;
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const limit = boundedLimit(options.limit ?? MAX_READ_LIMIT);
    const backwards = options.direction === 'backwards';
    let raw: ClientResolvedEvent[];
    try {
      raw = await collect(this.client.readStream(stream, {
        direction: backwards ? BACKWARDS : FORWARDS,
        fromRevision: options.fromRevision ?? (backwards ? END : START),
        maxCount: limit,
      }));
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw error;
    }
    const out: RecordedEvent[] = [];
    for (const resolved of raw) if (resolved.event) out.push(this.toRecorded(resolved.event));
    return out;
  }

  /** Ids are not indexed here: the stream's last FIND_EVENTS_WINDOW events are searched. */
  async findEvents(stream: string, ids: readonly string[]): Promise<RecordedEvent[]> {
    if (ids.length === 0) return [];
    const wanted = new Set(ids.map((id) => id.toLowerCase()));
    return (await this.lastEvents(stream, FIND_EVENTS_WINDOW))
      .filter((event) => wanted.has(event.id.toLowerCase()))
      .map((event) => this.toRecorded(event));
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const limit = boundedLimit(options.limit);
    const out: RecordedEvent[] = [];
    const pageSize = () => Math.min(Math.max(limit - out.length + 1, MIN_PAGE), MAX_READ_LIMIT + 1);
    for await (const event of this.forwardRecords(options.after ?? null, pageSize)) {
      out.push(this.toRecorded(event));
      if (out.length === limit) break;
    }
    return out;
  }

  /**
   * The records of $all strictly after `after`, in order, without system records, `pageSize()` raw records per
   * round trip. Reading $all forwards from a position includes the record at that position, so records at or
   * before the bound are skipped; system records are skipped too, which is why a page may take several trips.
   */
  private async *forwardRecords(after: Position | null, pageSize: () => number): AsyncGenerator<ClientRecordedEvent> {
    let bound = after;
    for (;;) {
      const size = pageSize();
      const raw = await collect(this.client.readAll({
        direction: FORWARDS,
        fromPosition: bound ? { commit: bound.commit, prepare: bound.prepare } : START,
        maxCount: size,
      }));
      for (const resolved of raw) {
        const event = resolved.event;
        if (!event?.position) continue;
        const position = normalisePosition(event.position);
        if (bound && comparePositions(position, bound) <= 0) continue;
        bound = position;
        if (!isSystem(event)) yield event;
      }
      if (raw.length < size) return; // reached the end of the log
    }
  }

  /** The newest non-system record in $all, walking backwards past system records. */
  async headPosition(): Promise<Position | null> {
    let from: Position | null = null;
    for (;;) {
      const fromPosition: ReadPosition = from ? { commit: from.commit, prepare: from.prepare } : END;
      const raw = await collect(this.client.readAll({ direction: BACKWARDS, fromPosition, maxCount: MIN_PAGE }));
      for (const resolved of raw) {
        const event = resolved.event;
        if (!event?.position) continue;
        const position = normalisePosition(event.position);
        if (from && comparePositions(position, from) >= 0) continue;
        from = position;
        if (!isSystem(event)) return position;
      }
      if (raw.length < MIN_PAGE) return null;
    }
  }

  /**
   * Listeners are called after our own appends and for every event the supervised $all subscription
   * receives (appends by any process). The subscription starts with the first listener.
   */
  onAppended(listener: () => void): () => void {
    if (this.closed) return () => undefined;
    this.listeners.add(listener);
    this.supervisor.start();
    return () => {
      this.listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    await this.supervisor.stop();
    await this.client.dispose();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch {
        // a wake-up listener's failure is its own business
      }
    }
  }

  private toRecorded(event: ClientRecordedEvent): RecordedEvent {
    const position = positionOfRecord(event);
    const { schemaVersion, metadata } = splitMetadata(event.metadata);
    return this.upcasters.upcast({
      id: event.id,
      stream: event.streamId,
      revision: toBigInt(event.revision),
      position,
      type: event.type,
      schemaVersion,
      data: event.data,
      metadata,
      recordedAt: event.created instanceof Date ? event.created : new Date(event.created),
    });
  }
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The last event of `batch.length` events in `tail` (oldest first) whose ids are the batch's, in order. */
function repeatIn(tail: readonly ClientRecordedEvent[], batch: readonly BatchEvent[]): ClientRecordedEvent | null {
  for (let start = tail.length - batch.length; start >= 0; start--) {
    if (batch.every((event, i) => tail[start + i]!.id === event.id)) return tail[start + batch.length - 1]!;
  }
  return null;
}

/** Stream reads carry the $all position only from server 22.6 on (and never for explicit transactions). */
function positionOfRecord(event: ClientRecordedEvent): Position {
  const position = event.position ? normalisePosition(event.position) : null;
  if (!position || !isRealPosition(position)) {
    throw new Error(`event ${event.id} came without its position: EventStoreDB 22.6 or later is needed`);
  }
  return position;
}

function toClientExpected(expected: ExpectedRevision): AppendExpectedRevision {
  if (typeof expected === 'bigint') {
    if (expected < 0n) throw new RangeError('an expected revision must not be negative');
    return expected;
  }
  switch (expected) {
    case 'any': return ANY;
    case 'no_stream': return NO_STREAM;
    case 'stream_exists': return STREAM_EXISTS;
    default: throw new RangeError(`unknown expected revision ${String(expected)}`);
  }
}

function isWrongExpectedVersion(error: unknown): error is WrongExpectedVersionError {
  return error instanceof WrongExpectedVersionError
    || (typeof error === 'object' && error !== null && (error as { type?: unknown }).type === 'wrong-expected-version');
}

function isStreamNotFound(error: unknown): boolean {
  return error instanceof StreamNotFoundError
    || (typeof error === 'object' && error !== null && (error as { type?: unknown }).type === 'stream-not-found');
}

/** The client reports a missing stream as 'no_stream' or, on some paths, as revision -1. */
function normaliseActual(actual: unknown): bigint | 'no_stream' {
  if (actual === 'no_stream' || actual == null) return 'no_stream';
  if (typeof actual === 'bigint' || typeof actual === 'number' || typeof actual === 'string') {
    const revision = toBigInt(actual);
    return revision < 0n ? 'no_stream' : revision;
  }
  return 'no_stream';
}

function normalisePosition(position: { commit: bigint | number | string; prepare: bigint | number | string }): Position {
  return { commit: toBigInt(position.commit), prepare: toBigInt(position.prepare) };
}

/** The server uses signed 64-bit positions; -1 and its unsigned form (2^64 - 1) mean "no position". */
const NO_POSITION_FROM = 1n << 63n;
function isRealPosition(position: Position): boolean {
  return position.commit >= 0n && position.commit < NO_POSITION_FROM
    && position.prepare >= 0n && position.prepare < NO_POSITION_FROM;
}

function isSystem(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

/** Our metadata without the reserved `schemaVersion` and `chainHash`, and that version (1 when absent). */
function splitMetadata(raw: unknown): { schemaVersion: number; metadata: EventMetadata } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || raw instanceof Uint8Array) {
    return { schemaVersion: 1, metadata: {} };
  }
  const { schemaVersion, [CHAIN_METADATA_KEY]: _chain, ...metadata } = raw as Record<string, unknown>;
  const version = typeof schemaVersion === 'number' && Number.isInteger(schemaVersion) && schemaVersion >= 1
    ? schemaVersion : 1;
  return { schemaVersion: version, metadata };
}

async function collect(read: AsyncIterable<unknown>): Promise<ClientResolvedEvent[]> {
  const out: ClientResolvedEvent[] = [];
  for await (const item of read) out.push(item as ClientResolvedEvent);
  return out;
}

function boundedLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  return Math.min(limit, MAX_READ_LIMIT);
}
