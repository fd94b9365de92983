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
import type { Kysely } from 'kysely';
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
  /** Applies events, in feed order, inside the runner's transaction. Throwing rolls back the whole batch. */
  apply(trx: Kysely<NoTables>, events: readonly RecordedEvent[]): Promise<void>;
  /** Statements run on activation after the table views exist (views built over views, for finance). */
  readonly derivedViews?: readonly string[];
  /**
   * It also writes outside its own tables (the webhook emitter's outbox): a rebuild beside the live version would
   * act, so `verify read-models` does not rebuild it.
   */
  readonly writesOutside?: boolean;
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
  apply(trx: Kysely<T>, events: readonly Recorded<M>[]): Promise<void>;
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
  let apply: (trx: Kysely<T>, events: readonly Recorded<M>[]) => Promise<void>;
  if ('handlers' in definition) {
    const { handlers } = definition;
    handles = Object.keys(handlers);
    apply = async (trx, events) => {
      for (const event of events) await projectorHandler(handlers, event.type)?.(trx, event);
    };
  } else {
    handles = definition.handles;
    apply = (trx, events) => definition.apply(trx, events);
  }
  return {
    name: definition.name,
    version: definition.version,
    tables: definition.tables,
    handles,
    setup: (trx) => definition.setup(own(trx)),
    ...(definition.derivedViews ? { derivedViews: definition.derivedViews } : {}),
    ...(definition.writesOutside ? { writesOutside: true } : {}),
    apply: (trx, events) => apply(own(trx), recordedAllAs<M>(events)),
  };
}

/**
 * A reactor (process manager) reacts to events with commands on other streams. Its effects cannot share
 * the checkpoint's transaction, so it runs at least once per event: every effect must use deterministic ids
 * or `no_stream` expectations so that a second run changes nothing.
 */
export interface Reactor {
  readonly name: string;
  readonly handles: readonly string[];
  /**
   * `stopping` is aborted when the runner stops: a reaction that waits (for a time to come) ends its wait,
   * throwing, and the event is reacted to again by the next holder.
   */
  react(event: RecordedEvent, stopping: AbortSignal): Promise<void>;
}

/**
 * A reactor's handlers: one per event type of `M` it reacts to, each given its type's event and the runner's
 * `stopping` signal (see `Reactor.react`).
 */
export interface ReactorDefinition<M extends EventMap> {
  name: string;
  handlers: EventHandlers<M, [stopping: AbortSignal], Promise<void>>;
}

/** A reactor that reacts to the events of `M` its handlers are keyed by (an unknown key does not compile). */
export function defineReactor<M extends EventMap>(definition: ReactorDefinition<M>): Reactor {
  const { name, handlers } = definition;
  return { name, handles: Object.keys(handlers), react: async (event, stopping) => { await handleEvent(handlers, event, stopping); } };
}

const NAME = /^[a-z][a-z0-9_]{0,30}$/;

export function assertValidName(name: string): void {
  if (!NAME.test(name)) throw new Error(`projection name ${JSON.stringify(name)} must match ${NAME}`);
}
