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

export interface Projector {
  readonly name: string;
  /** Bump to rebuild from zero into fresh tables; the old version keeps serving until the new one catches up. */
  readonly version: number;
  /** Event types it applies; others advance its checkpoint without a call. */
  readonly handles: readonly string[];
  /** Tables it owns; exposed as views of the same names in the main schema once the version is active. */
  readonly tables: readonly string[];
  /** Creates the tables (and indexes) in the version's own schema, which is first on the search_path. */
  setup(trx: Kysely<any>): Promise<void>;
  /** Applies events, in feed order, inside the runner's transaction. Throwing rolls back the whole batch. */
  apply(trx: Kysely<any>, events: readonly RecordedEvent[]): Promise<void>;
  /** Statements run on activation after the table views exist (views built over views, for finance). */
  readonly derivedViews?: readonly string[];
}

export type EventHandler = (trx: Kysely<any>, event: RecordedEvent) => Promise<void>;

export interface ProjectorDefinition {
  name: string;
  version: number;
  tables: readonly string[];
  setup(trx: Kysely<any>): Promise<void>;
  /** One handler per event type; applied one event at a time, in order. */
  handlers: Record<string, EventHandler>;
  derivedViews?: readonly string[];
}

export function defineProjector(definition: ProjectorDefinition): Projector {
  const { handlers } = definition;
  return {
    name: definition.name,
    version: definition.version,
    tables: definition.tables,
    handles: Object.keys(handlers),
    setup: definition.setup,
    ...(definition.derivedViews ? { derivedViews: definition.derivedViews } : {}),
    async apply(trx, events) {
      for (const event of events) await handlers[event.type]?.(trx, event);
    },
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
  react(event: RecordedEvent): Promise<void>;
}

const NAME = /^[a-z][a-z0-9_]{0,30}$/;

export function assertValidName(name: string): void {
  if (!NAME.test(name)) throw new Error(`projection name ${JSON.stringify(name)} must match ${NAME}`);
}
