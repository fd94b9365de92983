/**
 * Recorded events as their consumers see them. A service declares once a map from each stored event type to its
 * data type (`StoredEventData` in src/storedEvents/registry.ts, derived from the contexts' event unions); a consumer
 * (projector, reactor, ledger posting, webhook mapping, a fold) declares what it handles keyed by those types, and
 * each handler receives its event with the data of its type. A misspelt key, or a field the type does not have,
 * does not compile.
 *
 * The store gives events back untyped (`RecordedEvent<string, unknown>`). That an event of type K holds data of
 * `M[K]` is its producer's promise: every append comes from a decider typed with the same unions, the store brings
 * older versions up to the current one on read (upcasters), and the contract tests validate every event a realistic
 * run appends against its registered schema. `recordedAs` and `recordedAllAs` are the only places a consumer relies
 * on that promise.
 */
import type { RecordedEvent } from './port.ts';

/** Event type → the type of its data. */
export type EventMap = { readonly [type: string]: unknown };

/** The event types of a map. */
export type EventType<M extends EventMap> = keyof M & string;

/**
 * A recorded event of one of the types `K` of `M`, with its data: a union over `K`, so that a test of `type`
 * (a `switch`, an `if`) narrows `data` to that type's.
 */
export type Recorded<M extends EventMap, K extends EventType<M> = EventType<M>> = K extends unknown ? RecordedEvent<K, M[K]> : never;

/** A union of `{ type, data }` events as a map: each type → its data. */
export type EventMapOf<E extends { type: string; data: unknown }> = { [Event in E as Event['type']]: Event['data'] };

/** A recorded event read from the store, as one of the events of `M` (see the module's comment for why this holds). */
export function recordedAs<M extends EventMap>(event: RecordedEvent): Recorded<M> {
  // The producers' promise, relied upon here only: an event of type K was appended with data of M[K].
  return event as Recorded<M>;
}

/** A batch of recorded events read from the store, as events of `M` (see `recordedAs`). */
export function recordedAllAs<M extends EventMap>(events: readonly RecordedEvent[]): readonly Recorded<M>[] {
  // The producers' promise, as for `recordedAs`, for each event of the batch (no copy: a batch may be 10,000 events).
  return events as readonly Recorded<M>[];
}

/**
 * Handlers keyed by event type: each takes its type's event (and the arguments `A`) and answers `R`. Given as an
 * object literal, a key that is not a type of `M` is a compile error.
 */
export type EventHandlers<M extends EventMap, A extends unknown[], R> = {
  readonly [K in EventType<M>]?: (event: RecordedEvent<K, M[K]>, ...args: A) => R;
};

/**
 * One table of handlers from several contexts' (each keyed by event type): a type two of them handle is a wiring
 * error, thrown when the service is assembled rather than one silently shadowing the other.
 */
export function unionOfHandlers<H extends object>(parts: readonly (H | undefined)[], what: string): H {
  const union: Record<string, unknown> = {};
  for (const part of parts) {
    for (const [type, handler] of Object.entries(part ?? {})) {
      if (Object.hasOwn(union, type)) throw new Error(`${what}: event type ${type} handled twice`);
      union[type] = handler;
    }
  }
  return union as H;
}

/** The handler declared for `type`, if any (own keys only: an event named `toString` has none). */
export function handlerOf<M extends EventMap, A extends unknown[], R, K extends EventType<M>>(
  handlers: EventHandlers<M, A, R>, type: K,
): ((event: RecordedEvent<K, M[K]>, ...args: A) => R) | undefined {
  return Object.hasOwn(handlers, type) ? handlers[type] : undefined;
}

/**
 * Calls the handler `handlers` declares for `event`'s type with the event (as its type's) and `args`; answers
 * undefined when there is none.
 */
export function handleEvent<M extends EventMap, A extends unknown[], R>(
  handlers: EventHandlers<M, A, R>, event: RecordedEvent, ...args: A
): R | undefined {
  const typed = recordedAs<M>(event);
  return handlerOf(handlers, typed.type)?.(typed, ...args);
}

/** Whether `event` is of one of `types`: narrows it to the events of those types (a consumer's `canHandle`). */
export function isOneOf<E extends { type: string }, K extends E['type']>(event: E, types: readonly K[]): event is Extract<E, { type: K }> {
  return (types as readonly string[]).includes(event.type);
}
