/**
 * Runs one command against one stream: fold the stream, decide, append with the revision that was folded.
 *
 * - Commands on one stream in this process run one at a time (a queue per stream): they would only conflict
 *   with each other, and each starts from the state the previous one left, so a hot stream (an account that
 *   many settlements credit) costs no retries inside a process.
 * - The folded state of recently used streams is kept (bounded, least recently used first out), so a command
 *   reads only the events appended since, not the whole stream again.
 * - Another process may append first: the append is refused, and the command reads the new events, decides
 *   again and retries, after a jittered backoff, at most MAX_ATTEMPTS times; then a `ContentionError`
 *   (answered 409 with Retry-After), never a server error.
 * - Event ids given by the decider (deterministic ids of process managers) are appended as they are, so a
 *   re-run of the same step is a no-op; the state then is the stream's as recorded (folded again), not what the
 *   re-run decided.
 * - A command run for a request with an Idempotency-Key (`requestKey` in its metadata) gives its other events ids
 *   derived from that key, the stream and the command. The same request run again (its first run's process died,
 *   or lost its database, before answering) is then recognised on the stream: appending the same events again is a
 *   repeat, and a command refused because its first run changed the stream (a move already made) finds those
 *   events. Either way it answers with the events recorded the first time, as if it had just appended them.
 */
import type { Decider } from '../domain/decider.ts';
import { DomainError } from '../domain/errors.ts';
import { deterministicId, requestKeyOf } from './deterministicId.ts';
import { WrongExpectedRevisionError } from './errors.ts';
import { MAX_READ_LIMIT, type EventMetadata, type EventStore } from './port.ts';
import type { Position } from './position.ts';

/** Attempts of one command against writers of other processes before it gives up with a ContentionError. */
export const MAX_ATTEMPTS = 8;
/** Backoff before attempt n+1: a random wait in [0, min(BACKOFF_CAP_MS, BACKOFF_BASE_MS × 2^n)) ("full jitter"). */
const BACKOFF_BASE_MS = 4;
const BACKOFF_CAP_MS = 250;
/** Folded states kept per store and decider. */
const MAX_CACHED_STREAMS = 5_000;
/** Commands waiting for one stream in this process; past it the command is refused as contention. */
const MAX_QUEUED_PER_STREAM = 1_000;
/** Suggested wait (seconds) sent with a contention refusal. */
export const CONTENTION_RETRY_AFTER_SECONDS = 1;
/**
 * Events of one command whose derived ids a repeat looks up (a command decides a handful; one that decided more
 * under a key is still recognised by its first events, and answers with those).
 */
const MAX_REPEAT_LOOKUP = 64;

/** Too many writers on one stream at once: the command was not applied; the caller may retry it. */
export class ContentionError extends DomainError {
  constructor(readonly stream: string, attempts: number) {
    super('contention', `too many concurrent changes to the same object (${attempts} attempts); retry shortly`);
  }
}

/** An event as a decider returns it; `id` is optional and, when present, recorded as the event's id. */
type DecidedEvent = { type: string; data: unknown; id?: string };

export interface CommandResult<Event, State> {
  /** Events this command appended (empty when the decider decided nothing needed to change). */
  events: Event[];
  /** The state after the command (after its events, when it appended any). */
  state: State;
  /** Position of the last appended event, or null when nothing was appended. */
  position: Position | null;
  /**
   * The same request had run this command before (same Idempotency-Key): nothing was appended now, and `events`
   * and `position` are what its first run recorded.
   */
  repeated?: boolean;
}

export interface CommandOptions {
  /** The command creates its stream: decide on the empty state and append with no_stream, sparing the read. */
  expectNewStream?: boolean;
}

interface Folded<State> {
  state: State;
  /** Revision of the last event folded into `state`, or null for an empty stream. */
  revision: bigint | null;
}

/** Folded states of one store and decider, least recently used first. */
type StateCache = Map<string, Folded<unknown>>;
const caches = new WeakMap<EventStore, WeakMap<object, StateCache>>();
const queues = new WeakMap<EventStore, Map<string, { tail: Promise<unknown>; waiting: number }>>();

function cacheOf(store: EventStore, decider: object): StateCache {
  let byDecider = caches.get(store);
  if (!byDecider) caches.set(store, byDecider = new WeakMap());
  let cache = byDecider.get(decider);
  if (!cache) byDecider.set(decider, cache = new Map());
  return cache;
}

/** Runs `work` after every earlier command on `stream` in this process has finished. */
async function serialised<T>(store: EventStore, stream: string, work: () => Promise<T>): Promise<T> {
  let byStream = queues.get(store);
  if (!byStream) queues.set(store, byStream = new Map());
  const queue = byStream.get(stream) ?? { tail: Promise.resolve(), waiting: 0 };
  if (queue.waiting >= MAX_QUEUED_PER_STREAM) throw new ContentionError(stream, 0);
  queue.waiting++;
  byStream.set(stream, queue);
  const run = queue.tail.then(work, work);
  // The queue only orders; each caller gets its own command's outcome from `run`, errors included.
  queue.tail = run.catch(() => undefined);
  try {
    return await run;
  } finally {
    if (--queue.waiting === 0) byStream.delete(stream);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Folds the events appended after `folded.revision` into `folded` (in place) and answers it. */
async function catchUp<StreamEvent extends DecidedEvent, State>(
  store: EventStore, stream: string, decider: Decider<unknown, DecidedEvent, State, StreamEvent>, folded: Folded<State>,
): Promise<Folded<State>> {
  // Whole stream, page by page: a state folded from part of it would decide wrongly.
  for (;;) {
    const from = folded.revision === null ? 0n : folded.revision + 1n;
    const page = await store.readStream(stream, { fromRevision: from, limit: MAX_READ_LIMIT });
    // The store reads events back untyped; the stream holds only what its deciders appended (`StreamEvent`), brought
    // up to their current versions by the upcasters: the producers' promise (src/eventstore/typedEvents.ts).
    for (const event of page) folded.state = decider.evolve(folded.state, { type: event.type, data: event.data } as StreamEvent);
    if (page.length > 0) folded.revision = page[page.length - 1]!.revision;
    if (page.length < MAX_READ_LIMIT) return folded;
  }
}

/**
 * Handles `command` on `stream`. `command` may be a function of the current state (a command whose facts
 * depend on the object, such as asking the provider about a payment): it is called again on every retry.
 */
export function handleCommand<Command, Event extends StreamEvent, State, StreamEvent extends DecidedEvent = Event>(
  store: EventStore,
  stream: string,
  decider: Decider<Command, Event, State, StreamEvent>,
  command: Command | ((state: State) => Command),
  metadata: EventMetadata,
  options: CommandOptions = {},
): Promise<CommandResult<Event, State>> {
  const cache = cacheOf(store, decider) as Map<string, Folded<State>>;
  const requestKey = requestKeyOf(metadata);
  return serialised(store, stream, async () => {
    // Taken out while in use: only this command touches it until it is put back.
    const cached = cache.get(stream);
    cache.delete(stream);
    let folded: Folded<State> = cached ?? { state: decider.initialState, revision: null };
    for (let attempt = 1; ; attempt++) {
      // A stream this command creates is decided on the empty state first; if it exists after all, the
      // append is refused and the next attempt reads it.
      if (!(options.expectNewStream && attempt === 1 && !cached)) folded = await catchUp(store, stream, decider, folded);
      let decided: Event[];
      let idOf: ((index: number) => string) | null = null;
      try {
        const asked = typeof command === 'function' ? (command as (state: State) => Command)(folded.state) : command;
        if (requestKey !== null) idOf = derivedIds(requestKey, stream, asked);
        decided = decider.decide(asked, folded.state);
      } catch (error) {
        if (error instanceof DomainError && folded.revision !== null) remember(cache, stream, folded);
        // Refused now because the same request already changed the stream (a move made before its process died)?
        const repeat = error instanceof DomainError && requestKey !== null && folded.revision !== null
          && idOf !== null ? await recordedRepeat<Event>(store, stream, idOf) : null;
        if (repeat) return { ...repeat, state: folded.state };
        throw error;
      }
      if (decided.length === 0) {
        remember(cache, stream, folded);
        return { events: decided, state: folded.state, position: null };
      }
      try {
        const { position, nextRevision, repeated } = await store.append(stream,
          decided.map((e, i) => {
            const id = e.id ?? idOf?.(i);
            return { ...(id ? { id } : {}), type: e.type, data: e.data, metadata };
          }),
          folded.revision ?? 'no_stream');
        if (!repeated && nextRevision === (folded.revision ?? -1n) + BigInt(decided.length)) {
          for (const event of decided) folded.state = decider.evolve(folded.state, event);
          folded.revision = nextRevision;
        } else {
          // A repeat: events with these ids were already on the stream (another process ran the same step, or
          // this request ran before), past events this state has not folded, and what was recorded under those ids
          // may differ from what this stale state decided (an answer given once, such as a refusal). Fold the
          // stream as it is instead, and answer with what was recorded.
          folded = await catchUp(store, stream, decider, folded);
          remember(cache, stream, folded);
          if (repeated && idOf !== null) {
            const recorded = await recordedRepeat<Event>(store, stream, idOf);
            if (recorded) return { ...recorded, state: folded.state };
          }
          return { events: decided, state: folded.state, position };
        }
        remember(cache, stream, folded);
        return { events: decided, state: folded.state, position };
      } catch (error) {
        // Anything else (a lost connection, an evolve that threw) leaves the state out of the cache: the next
        // command on the stream folds it afresh.
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt >= MAX_ATTEMPTS) throw new ContentionError(stream, attempt);
        await sleep(Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt));
      }
    }
  });
}

/**
 * The state of `stream` folded by `decider`, as a command would decide on it now (the same cache and queue as
 * `handleCommand`, so a read between commands costs only the events appended since).
 */
export function readState<Event extends StreamEvent, State, StreamEvent extends DecidedEvent = Event>(
  store: EventStore, stream: string, decider: Decider<unknown, Event, State, StreamEvent>,
): Promise<State> {
  const cache = cacheOf(store, decider) as Map<string, Folded<State>>;
  return serialised(store, stream, async () => {
    const cached = cache.get(stream);
    cache.delete(stream);
    const folded = await catchUp(store, stream, decider, cached ?? { state: decider.initialState, revision: null });
    if (folded.revision !== null) remember(cache, stream, folded);
    return folded.state;
  });
}

/**
 * The ids a command run for a request gives the events it decides (those the decider names keep their own):
 * derived from the request, the stream and the command, so the same request decides the same ids again.
 */
function derivedIds(requestKey: string, stream: string, command: unknown): (index: number) => string {
  const name = (command as { type?: unknown }).type;
  const kind = typeof name === 'string' ? name : 'command';
  return (index) => deterministicId('event', requestKey, stream, kind, String(index));
}

/**
 * Whether `eventId`, an event of `stream`, is the first event a command of type `commandType` recorded when run
 * for this request: the same request's earlier run, which a check made before the command must let through.
 */
export function recordedByRequest(metadata: EventMetadata, stream: string, commandType: string, eventId: string): boolean {
  const requestKey = requestKeyOf(metadata);
  return requestKey !== null && derivedIds(requestKey, stream, { type: commandType })(0) === eventId;
}

/** Whether this request's earlier run recorded a command of type `commandType` on `stream` (a round trip). */
export async function ranBefore(store: EventStore, metadata: EventMetadata, stream: string, commandType: string): Promise<boolean> {
  const requestKey = requestKeyOf(metadata);
  if (requestKey === null) return false;
  return (await store.findEvents(stream, [derivedIds(requestKey, stream, { type: commandType })(0)])).length > 0;
}

/** What the same request's earlier run of this command recorded on `stream` under `ids`, if it did. */
async function recordedRepeat<Event extends DecidedEvent>(
  store: EventStore, stream: string, idOf: (index: number) => string,
): Promise<{ events: Event[]; position: Position; repeated: true } | null> {
  const ids = Array.from({ length: MAX_REPEAT_LOOKUP }, (_, i) => idOf(i));
  const recorded = await store.findEvents(stream, ids);
  // The first event decides: a later one alone would be another command's under a colliding id, which cannot be.
  if (recorded.length === 0 || recorded[0]!.id !== ids[0]) return null;
  return {
    // The stream's own record of the events this decider wrote, typed as it decided them.
    events: recorded.map((event) => ({ type: event.type, data: event.data, id: event.id }) as Event),
    position: recorded[recorded.length - 1]!.position,
    repeated: true,
  };
}

function remember<State>(cache: Map<string, Folded<State>>, stream: string, folded: Folded<State>): void {
  if (cache.size >= MAX_CACHED_STREAMS) cache.delete(cache.keys().next().value!);
  cache.set(stream, folded);
}
