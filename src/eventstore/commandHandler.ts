/**
 * Runs one command against one stream: fold the stream, decide, append with the revision that was folded.
 *
 * - Commands on one stream in this process run one at a time (a queue per stream): they would only conflict
 *   with each other, and each starts from the state the previous one left, so a hot stream (an account that
 *   many settlements credit) costs no retries inside a process. The commands that waited meanwhile are decided
 *   together and appended at once (see the queue below).
 * - The folded state of recently used streams is kept (bounded, least recently used first out), and a command
 *   alone on its stream decides on it without reading the stream: its append expects the kept revision, so an
 *   append of another process meanwhile is caught there (then only the events appended since are read). A
 *   refusal, or a decision that nothing needs to change, is made again on the stream as it is before it is given.
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
 *   events. Either way it answers with the events recorded the first time, as if it had just appended them. In a
 *   batch, each command's events keep the ids it alone would give them, so the outcome is the same either way.
 */
import type { Decider } from '../domain/decider.ts';
import { DomainError } from '../domain/errors.ts';
import { deterministicId, requestKeyOf } from './deterministicId.ts';
import { DuplicateEventIdError, WrongExpectedRevisionError } from './errors.ts';
import { MAX_READ_LIMIT, type EventMetadata, type EventStore, type NewEvent } from './port.ts';
import type { Position } from './position.ts';
import { setBounded } from '../domain/boundedMap.ts';

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
  /** That last event's type and position, when known (what a read of its effects waits for). */
  last: LastEvent | null;
}

/** A stream's last event: its type and its position in the feed. */
export interface LastEvent {
  type: string;
  position: Position;
}

/** Folded states of one store and decider, least recently used first. */
type StateCache = Map<string, Folded<unknown>>;
const caches = new WeakMap<EventStore, WeakMap<object, StateCache>>();

function cacheOf(store: EventStore, decider: object): StateCache {
  let byDecider = caches.get(store);
  if (!byDecider) caches.set(store, byDecider = new WeakMap());
  let cache = byDecider.get(decider);
  if (!cache) byDecider.set(decider, cache = new Map());
  return cache;
}

// ------------------------------------------------------------------------------------------------ the queue
//
// Per stream, what waits to run in this process, in arrival order: commands, and reads of the folded state. A
// command that finds the queue empty runs at once; those that arrive while it runs wait, and the next turn takes
// every command waiting with the same decider (up to MAX_BATCH_COMMANDS): each is decided on the state the one
// before it left, and all their events go in one append (one round trip, one commit), each command answered with
// its own events, its own refusal or its own state. A hot stream (an account many settlements credit, a parent many
// refunds reserve on) so costs one append per turn, not one per command.

/** Commands decided together and appended in one append, at most; and their events. */
const MAX_BATCH_COMMANDS = 64;
const MAX_BATCH_EVENTS = 500;
/**
 * After a batch lost its append to another process's writer (or found it recorded by another process), the
 * stream's commands run one at a time for this long: a lost batch costs a fold from the stream's first event.
 */
const CONTENDED_MS = 1_000;

interface CommandJob {
  kind: 'command';
  decider: Decider<unknown, DecidedEvent, unknown>;
  command: unknown;
  metadata: EventMetadata;
  options: CommandOptions;
  resolve(result: CommandResult<DecidedEvent, unknown>): void;
  reject(error: unknown): void;
}

interface WorkJob {
  kind: 'work';
  run(): Promise<void>;
  /** A read of the stream's state (readStateAt) by this decider, and whom it answers: reads asked meanwhile join it. */
  read?: { decider: unknown; waiters: Array<{ resolve(value: never): void; reject(error: unknown): void }> };
}

interface StreamQueue {
  jobs: Array<CommandJob | WorkJob>;
  draining: boolean;
  /** Until when (Date.now()) the stream's commands run one at a time. */
  contendedUntil: number;
}

const queues = new WeakMap<EventStore, Map<string, StreamQueue>>();

function enqueue(store: EventStore, stream: string, job: CommandJob | WorkJob): void {
  let byStream = queues.get(store);
  if (!byStream) queues.set(store, byStream = new Map());
  let queue = byStream.get(stream);
  if (!queue) byStream.set(stream, queue = { jobs: [], draining: false, contendedUntil: 0 });
  if (queue.jobs.length >= MAX_QUEUED_PER_STREAM) throw new ContentionError(stream, 0);
  queue.jobs.push(job);
  if (!queue.draining) {
    queue.draining = true;
    void drain(store, stream, queue, byStream);
  }
}

/** Runs what waits on `stream`, in order; each job answers its own caller and never throws here. */
async function drain(store: EventStore, stream: string, queue: StreamQueue, byStream: Map<string, StreamQueue>): Promise<void> {
  try {
    while (queue.jobs.length > 0) {
      const head = queue.jobs[0]!;
      if (head.kind === 'work') {
        queue.jobs.shift();
        await head.run();
        continue;
      }
      let count = 1;
      if (!head.options.expectNewStream && Date.now() >= queue.contendedUntil) {
        for (; count < queue.jobs.length && count < MAX_BATCH_COMMANDS; count++) {
          const next = queue.jobs[count]!;
          if (next.kind !== 'command' || next.decider !== head.decider || next.options.expectNewStream) break;
        }
      }
      const batch = queue.jobs.splice(0, count) as CommandJob[];
      if (batch.length === 1) await runCommand(store, stream, batch[0]!);
      else await runBatch(store, stream, batch, queue);
    }
  } finally {
    queue.draining = false;
    if (byStream.get(stream) === queue) byStream.delete(stream);
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
    const newest = page[page.length - 1];
    if (newest) {
      folded.revision = newest.revision;
      folded.last = { type: newest.type, position: newest.position };
    }
    if (page.length < MAX_READ_LIMIT) return folded;
  }
}

const commandOf = (job: CommandJob, state: unknown) => (typeof job.command === 'function' ? (job.command as (s: unknown) => unknown)(state) : job.command);

/** One command: fold, decide, append; on another process's append, read the new events and try again. */
async function runCommand(store: EventStore, stream: string, job: CommandJob): Promise<void> {
  const { decider, metadata, options } = job;
  const cache = cacheOf(store, decider) as Map<string, Folded<unknown>>;
  const requestKey = requestKeyOf(metadata);
  try {
    // Taken out while in use: only this command touches it until it is put back.
    const cached = cache.get(stream);
    cache.delete(stream);
    let folded: Folded<unknown> = cached ?? { state: decider.initialState, revision: null, last: null };
    // A stream this command creates is decided on the empty state first, and a kept state as it was kept: the
    // append (expecting that revision) is refused if another process appended since, and the next attempt reads
    // what is new. Only what an append would not check, a refusal or a decision that nothing needs to change, is
    // decided again on the stream as it is now before it is answered.
    let unread = cached !== undefined || options.expectNewStream === true;
    for (let attempt = 1; ; attempt++) {
      const onKeptState = unread && cached !== undefined;
      if (!unread) folded = await catchUp(store, stream, decider, folded);
      unread = false;
      let decided: DecidedEvent[];
      let idOf: ((index: number) => string) | null = null;
      try {
        const asked = commandOf(job, folded.state);
        if (requestKey !== null) idOf = derivedIds(requestKey, stream, asked);
        decided = decider.decide(asked, folded.state);
      } catch (error) {
        if (error instanceof DomainError && onKeptState) {
          attempt--;
          continue;
        }
        if (error instanceof DomainError && folded.revision !== null) remember(cache, stream, folded);
        // Refused now because the same request already changed the stream (a move made before its process died)?
        const repeat = error instanceof DomainError && folded.revision !== null && idOf !== null
          ? await recordedRepeat(store, stream, idOf) : null;
        if (repeat) {
          job.resolve({ ...repeat, state: folded.state });
          return;
        }
        throw error;
      }
      if (decided.length === 0 && onKeptState) {
        attempt--;
        continue;
      }
      if (decided.length === 0) {
        remember(cache, stream, folded);
        job.resolve({ events: decided, state: folded.state, position: null });
        return;
      }
      try {
        const { position, nextRevision, repeated } = await store.append(stream,
          decided.map((e, i) => withId(e, idOf?.(i), metadata)),
          folded.revision ?? 'no_stream');
        if (!repeated && nextRevision === (folded.revision ?? -1n) + BigInt(decided.length)) {
          for (const event of decided) folded.state = decider.evolve(folded.state, event);
          folded.revision = nextRevision;
          folded.last = { type: decided[decided.length - 1]!.type, position };
        } else {
          // A repeat: events with these ids were already on the stream (another process ran the same step, or
          // this request ran before), past events this state has not folded, and what was recorded under those ids
          // may differ from what this stale state decided (an answer given once, such as a refusal). Fold the
          // stream as it is instead, and answer with what was recorded.
          folded = await catchUp(store, stream, decider, folded);
          remember(cache, stream, folded);
          const recorded = repeated && idOf !== null ? await recordedRepeat(store, stream, idOf) : null;
          job.resolve(recorded ? { ...recorded, state: folded.state } : { events: decided, state: folded.state, position });
          return;
        }
        remember(cache, stream, folded);
        job.resolve({ events: decided, state: folded.state, position });
        return;
      } catch (error) {
        // Anything else (a lost connection, an evolve that threw) leaves the state out of the cache: the next
        // command on the stream folds it afresh.
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt >= MAX_ATTEMPTS) throw new ContentionError(stream, attempt);
        // A kept state that another process's appends made stale is no contention: read them and go again now.
        if (!onKeptState) await sleep(Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt));
      }
    }
  } catch (error) {
    job.reject(error);
  }
}

/**
 * Commands that waited together: decided one after the other on one fold, their events appended at once. When
 * that append loses to another process (or finds some of the events recorded already: another process's run of
 * the same step, or a request's earlier run), the speculative state (which a decider may have grown in place) is
 * dropped, and each command runs on its own from a fresh fold, where a repeat is answered as such. A command
 * refused under a request key looks for its earlier run's events as it would alone.
 */
async function runBatch(store: EventStore, stream: string, jobs: CommandJob[], queue: StreamQueue): Promise<void> {
  const decider = jobs[0]!.decider;
  const cache = cacheOf(store, decider) as Map<string, Folded<unknown>>;
  const cached = cache.get(stream);
  cache.delete(stream);
  type Outcome = { events: DecidedEvent[]; state: unknown } | { error: unknown; state: unknown; idOf: ((index: number) => string) | null };
  const outcomes = new Map<CommandJob, Outcome>();
  let folded: Folded<unknown>;
  let state: unknown;
  const appended: NewEvent[] = [];
  try {
    folded = await catchUp(store, stream, decider, cached ?? { state: decider.initialState, revision: null, last: null });
    state = folded.state;
    for (const job of jobs) {
      // Past the bound of one append, the rest run after it, each on its own.
      if (appended.length >= MAX_BATCH_EVENTS) break;
      const requestKey = requestKeyOf(job.metadata);
      let decided: DecidedEvent[];
      let idOf: ((index: number) => string) | null = null;
      try {
        const asked = commandOf(job, state);
        if (requestKey !== null) idOf = derivedIds(requestKey, stream, asked);
        decided = decider.decide(asked, state);
      } catch (error) {
        // Only a refusal on a stream that exists may be the repeat of a request that already changed it.
        const lookFor = error instanceof DomainError && folded.revision !== null ? idOf : null;
        outcomes.set(job, { error, state, idOf: lookFor });
        continue;
      }
      for (const [i, event] of decided.entries()) {
        state = decider.evolve(state, event);
        appended.push(withId(event, idOf?.(i), job.metadata));
      }
      outcomes.set(job, { events: decided, state });
    }
  } catch (error) {
    // A read that failed, or an evolve that threw: nothing was appended; the state is not kept.
    for (const job of jobs) job.reject(error);
    return;
  }
  const rest = jobs.filter((job) => !outcomes.has(job));
  const answer = async (position: Position | null) => {
    await Promise.all(jobs.map(async (job) => {
      const outcome = outcomes.get(job);
      if (!outcome) return;
      if (!('error' in outcome)) {
        job.resolve({ events: outcome.events, state: outcome.state, position: outcome.events.length > 0 ? position : null });
        return;
      }
      // None of this batch's events carry the refused command's ids: what is found was recorded before.
      try {
        const repeat = outcome.idOf !== null ? await recordedRepeat(store, stream, outcome.idOf) : null;
        if (repeat) job.resolve({ ...repeat, state: outcome.state });
        else job.reject(outcome.error);
      } catch (error) {
        job.reject(error);
      }
    }));
    for (const job of rest) await runCommand(store, stream, job);
  };
  if (appended.length === 0) {
    remember(cache, stream, { state, revision: folded.revision, last: folded.last });
    await answer(null);
    return;
  }
  try {
    const { position, nextRevision, repeated } = await store.append(stream, appended, folded.revision ?? 'no_stream');
    if (!repeated && nextRevision === (folded.revision ?? -1n) + BigInt(appended.length)) {
      remember(cache, stream, { state, revision: nextRevision, last: { type: appended[appended.length - 1]!.type, position } });
      await answer(position);
      return;
    }
  } catch (error) {
    // Some of the ids recorded already (and not all: that is a repeat) is a DuplicateEventIdError: the commands
    // alone tell a repeat from a true collision.
    if (!(error instanceof WrongExpectedRevisionError || error instanceof DuplicateEventIdError)) {
      for (const job of jobs) job.reject(error);
      return;
    }
  }
  // Another process appended first, or some of these events were recorded already: fold afresh, one command at a
  // time (nothing of the batch was appended).
  queue.contendedUntil = Date.now() + CONTENDED_MS;
  for (const job of jobs) await runCommand(store, stream, job);
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
  return new Promise<CommandResult<Event, State>>((resolve, reject) => {
    enqueue(store, stream, {
      kind: 'command', decider: decider as unknown as CommandJob['decider'], command, metadata, options,
      resolve: resolve as unknown as CommandJob['resolve'], reject,
    });
  });
}

/**
 * The state of `stream` folded by `decider`, as a command would decide on it now (the same cache and queue as
 * `handleCommand`, so a read between commands costs only the events appended since). The state is the kept one,
 * shared with the commands after it and with reads asked at the same time: read it, never change it.
 */
export async function readState<Event extends StreamEvent, State, StreamEvent extends DecidedEvent = Event>(
  store: EventStore, stream: string, decider: Decider<unknown, Event, State, StreamEvent>,
): Promise<State> {
  return (await readStateAt(store, stream, decider)).state;
}

/** `readState`, and the stream's last event (null for an empty stream). */
export function readStateAt<Event extends StreamEvent, State, StreamEvent extends DecidedEvent = Event>(
  store: EventStore, stream: string, decider: Decider<unknown, Event, State, StreamEvent>,
): Promise<{ state: State; last: LastEvent | null }> {
  const cache = cacheOf(store, decider) as Map<string, Folded<State>>;
  type Answer = { state: State; last: LastEvent | null };
  return new Promise<Answer>((resolve, reject) => {
    // A read of this state already waiting last in the stream's queue has not started: its read, made after this
    // call, answers this one too (a hot stream read by many requests at once costs one read, not one each).
    const jobs = queues.get(store)?.get(stream)?.jobs;
    const last = jobs?.[jobs.length - 1];
    if (last?.kind === 'work' && last.read?.decider === decider && last.read.waiters.length < MAX_QUEUED_PER_STREAM) {
      last.read.waiters.push({ resolve: resolve as (value: never) => void, reject });
      return;
    }
    const waiters: Array<{ resolve(value: Answer): void; reject(error: unknown): void }> = [{ resolve, reject }];
    enqueue(store, stream, {
      kind: 'work',
      read: { decider, waiters: waiters as NonNullable<WorkJob['read']>['waiters'] },
      async run() {
        try {
          const cached = cache.get(stream);
          cache.delete(stream);
          const folded = await catchUp(store, stream, decider, cached ?? { state: decider.initialState, revision: null, last: null });
          if (folded.revision !== null) remember(cache, stream, folded);
          for (const waiter of waiters) waiter.resolve({ state: folded.state, last: folded.last });
        } catch (error) {
          for (const waiter of waiters) waiter.reject(error);
        }
      },
    });
  });
}

function remember<State>(cache: Map<string, Folded<State>>, stream: string, folded: Folded<State>): void {
  setBounded(cache, MAX_CACHED_STREAMS, stream, folded);
}

/** An event as appended: the id its decider gave it, else the one derived from the request, else a new one. */
function withId(event: DecidedEvent, derived: string | undefined, metadata: EventMetadata): NewEvent {
  const id = event.id ?? derived;
  return { ...(id ? { id } : {}), type: event.type, data: event.data, metadata };
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
async function recordedRepeat(
  store: EventStore, stream: string, idOf: (index: number) => string,
): Promise<{ events: DecidedEvent[]; position: Position; repeated: true } | null> {
  const ids = Array.from({ length: MAX_REPEAT_LOOKUP }, (_, i) => idOf(i));
  const recorded = await store.findEvents(stream, ids);
  // The first event decides: a later one alone would be another command's under a colliding id, which cannot be.
  if (recorded.length === 0 || recorded[0]!.id !== ids[0]) return null;
  return {
    // The stream's own record of the events this decider wrote, typed as it decided them.
    events: recorded.map((event) => ({ type: event.type, data: event.data, id: event.id })),
    position: recorded[recorded.length - 1]!.position,
    repeated: true,
  };
}
