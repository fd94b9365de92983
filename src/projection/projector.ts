/**
 * A projector turns the event feed into read-model rows. It is a pure function of the feed: the runner
 * gives it a transaction, writes the checkpoint in that same transaction, and rebuilding from position zero
 * must give identical rows.
 *
 * Each version of a projector owns a Postgres schema of its own: the runner sets `search_path` so that the
 * projector's unqualified table names resolve there (and then to the main schema). When a version is active,
 * the main schema holds one view per table pointing at that version's schema, so readers and finance SQL
 * always use the same stable names while a new version rebuilds beside the old one.
 */
import type { CompiledQuery, Kysely } from 'kysely';
import type { RecordedEvent } from '../eventstore/port.ts';
import { handleEvent, recordedAllAs, type EventHandlers, type EventMap, type EventType, type Recorded } from '../eventstore/typedEvents.ts';
import type { NoTables } from '../db/database.ts';

/**
 * A projector's tables, kysely style: each table's name and its row type, declared once beside its CREATE
 * TABLE, with `ColumnType` where a column is read back in another type than it is written (a timestamp
 * written as the event's ISO string comes back a Date) and `Generated` where the database fills it. The bound
 * is kysely's own on tables added to a handle (`withTables`).
 */
export type Tables = Record<string, Record<string, any>>;

export interface Projector {
  readonly name: string;
  /** Bump to rebuild from zero into fresh tables; the old version keeps serving until the new one catches up. */
  readonly version: number;
  /** Event types it applies; others advance its checkpoint without a call. */
  readonly handles: readonly string[];
  /** Tables it owns; exposed as views of the same names in the main schema once the version is active. */
  readonly tables: readonly string[];
  /** Creates the tables (and indexes) in the version's own schema, which is first on the search_path. */
  setup(trx: Kysely<NoTables>): Promise<void>;
  /**
   * Applies events, in feed order, inside the runner's transaction. Throwing rolls back the whole batch. `later`
   * takes the batch's last writes, those whose outcome it does not read (see `LaterWrites`); without it they run
   * at once.
   */
  apply(trx: Kysely<NoTables>, events: readonly RecordedEvent[], later?: LaterWrites): Promise<void>;
  /** Statements run on activation after the table views exist (views built over views, for finance). */
  readonly derivedViews?: readonly string[];
  /**
   * It also writes outside its own tables (the webhook emitter's outbox): a rebuild beside the live version would
   * act, so `verify read-models` does not rebuild it.
   */
  readonly writesOutside?: boolean;
  /**
   * The event types read-your-writes waits for this projector to pass, when not all it handles: what it writes
   * for the others is read later, not right after a write (the webhook emitter: its endpoints are read back at
   * once, the events feed it keeps is polled with a cursor, the outbox is sent after the fact).
   */
  readonly awaitedFor?: readonly string[];
}

/**
 * Writes a batch makes without reading their outcome. When the batch shares its transaction with other projectors'
 * (./sharedTransactions.ts), they are held and go with the COMMIT, one round trip for all of them (the round trips
 * of a projectors' transaction are what a write's read-your-writes waits for); otherwise `add` runs the statement at
 * once. Held writes run in the order added, inside the transaction, usually after every statement its batches send
 * at once: a batch hands over only its last writes, those nothing it does afterwards depends on. A large one (a
 * batch catching up) runs when it is added, after those held before it; and once the held writes come to 256 KiB of
 * text, those held so far run when the next is added. Either way they may run before statements the batches send
 * later: what they write must not depend on those either. A failing held write fails the transaction (at its COMMIT,
 * or at the add that sent it); each batch then runs again alone, where its writes run at once and its error is its
 * own.
 */
export interface LaterWrites {
  add(query: CompiledQuery | { compile(): CompiledQuery }): Promise<void>;
}

/** The statement a later write stands for, compiled. */
export function compiledWrite(query: Parameters<LaterWrites['add']>[0]): CompiledQuery {
  return 'compile' in query ? query.compile() : query;
}

/** Later writes that run at once, in `trx`. */
export function writesNow(trx: { executeQuery(query: CompiledQuery): Promise<unknown> }): LaterWrites {
  return { add: async (query) => { await trx.executeQuery(compiledWrite(query)); } };
}

/** Every one of the names, each once, in any order (n! lists: fit for a projector's few tables). */
type EachOnce<Names, All = Names> = [Names] extends [never] ? [] : Names extends unknown ? [Names, ...EachOnce<Exclude<All, Names>>] : never;

interface ProjectorParts<T extends Tables> {
  name: string;
  version: number;
  /** Every table of `T`, each once (checked by the compiler): they become the views of the main schema. */
  tables: readonly (keyof T & string)[] & Readonly<EachOnce<keyof T & string>>;
  /** Creates the tables (and indexes) in the version's own schema, which is first on the search_path. */
  setup(trx: Kysely<T>): Promise<void>;
  derivedViews?: readonly string[];
  /** See `Projector.writesOutside`. */
  writesOutside?: boolean;
  /** See `Projector.awaitedFor`. */
  awaitedFor?: readonly string[];
}

/** One handler per event type of `M`, each given the runner's transaction and its type's event. */
export type ProjectorHandlers<T extends Tables, M extends EventMap> = {
  readonly [K in EventType<M>]?: (trx: Kysely<T>, event: RecordedEvent<K, M[K]>) => Promise<void>;
};

/**
 * A projector over its tables `T` that handles the events of the map `M` (the service's stored events,
 * `StoredEventData`), one event at a time, in order. A handler key that is not an event type of `M` does not compile.
 */
export interface ProjectorDefinition<T extends Tables, M extends EventMap> extends ProjectorParts<T> {
  handlers: ProjectorHandlers<T, M>;
}

export interface BatchProjectorDefinition<T extends Tables, M extends EventMap> extends ProjectorParts<T> {
  handles: readonly EventType<M>[];
  /** Applies a whole batch of events (in feed order) at once: set-based writes for a rebuild or a burst. */
  apply(trx: Kysely<T>, events: readonly Recorded<M>[], later: LaterWrites): Promise<void>;
}

function projectorHandler<T extends Tables, M extends EventMap, K extends EventType<M>>(
  handlers: ProjectorHandlers<T, M>, type: K,
): ((trx: Kysely<T>, event: RecordedEvent<K, M[K]>) => Promise<void>) | undefined {
  return Object.hasOwn(handlers, type) ? handlers[type] : undefined;
}

/** A projector over its own tables `T`: its setup and handlers see the runner's transaction with them. */
export function defineProjector<T extends Tables, M extends EventMap>(
  definition: ProjectorDefinition<T, M> | BatchProjectorDefinition<T, M>,
): Projector {
  const own = (trx: Kysely<NoTables>): Kysely<T> => trx.withTables<T>();
  let handles: readonly string[];
  let apply: (trx: Kysely<T>, events: readonly Recorded<M>[], later: LaterWrites) => Promise<void>;
  if ('handlers' in definition) {
    const { handlers } = definition;
    handles = Object.keys(handlers);
    apply = async (trx, events) => {
      for (const event of events) await projectorHandler(handlers, event.type)?.(trx, event);
    };
  } else {
    handles = definition.handles;
    apply = (trx, events, later) => definition.apply(trx, events, later);
  }
  return {
    name: definition.name,
    version: definition.version,
    tables: definition.tables,
    handles,
    setup: (trx) => definition.setup(own(trx)),
    ...(definition.derivedViews ? { derivedViews: definition.derivedViews } : {}),
    ...(definition.writesOutside ? { writesOutside: true } : {}),
    ...(definition.awaitedFor ? { awaitedFor: definition.awaitedFor } : {}),
    apply: (trx, events, later) => apply(own(trx), recordedAllAs<M>(events), later ?? writesNow(trx)),
  };
}

/**
 * A reactor (process manager) reacts to events with commands on other streams. Its effects cannot share
 * the checkpoint's transaction, so it runs at least once per event: every effect must use deterministic ids
 * or `no_stream` expectations so that a second run changes nothing. Events of one partition (by default one
 * stream) react in feed order; different partitions react at the same time.
 */
export interface Reactor {
  readonly name: string;
  readonly handles: readonly string[];
  /**
   * `stopping` is aborted when the runner stops: a reaction that waits (for a time to come) ends its wait,
   * throwing, and the event is reacted to again by the next holder.
   */
  react(event: RecordedEvent, stopping: AbortSignal): Promise<void>;
  /**
   * The events that must react one after the other, in feed order, share a partition; partitions react side by
   * side (the runner bounds how many at once). Default: the event's stream.
   */
  partition?(event: RecordedEvent): string;
  /**
   * When the reaction to `event` is due (epoch ms), for a reactor that looks at what an event left only some
   * time after it: the runner waits until the batch's events are all due before any reacts, holding none of the
   * process's reactor lanes meanwhile (aborted when it stops). Bound it: the reactor runs that much behind.
   */
  dueAt?(event: RecordedEvent): number;
}

/**
 * A reactor's handlers: one per event type of `M` it reacts to, each given its type's event and the runner's
 * `stopping` signal (see `Reactor.react`).
 */
export interface ReactorDefinition<M extends EventMap> {
  name: string;
  handlers: EventHandlers<M, [stopping: AbortSignal], Promise<void>>;
  /** See `Reactor.partition`. */
  partition?(event: RecordedEvent): string;
  /** See `Reactor.dueAt`. */
  dueAt?(event: RecordedEvent): number;
}

/** A reactor that reacts to the events of `M` its handlers are keyed by (an unknown key does not compile). */
export function defineReactor<M extends EventMap>(definition: ReactorDefinition<M>): Reactor {
  const { name, handlers, partition, dueAt } = definition;
  return {
    name, handles: Object.keys(handlers), react: async (event, stopping) => { await handleEvent(handlers, event, stopping); },
    ...(partition ? { partition } : {}), ...(dueAt ? { dueAt } : {}),
  };
}

const NAME = /^[a-z][a-z0-9_]{0,30}$/;

export function assertValidName(name: string): void {
  if (!NAME.test(name)) throw new Error(`projection name ${JSON.stringify(name)} must match ${NAME}`);
}
