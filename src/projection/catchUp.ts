/**
 * A rebuild beside the live version (`verify read-models`, `replay`): applies the feed to a projector's tables in
 * a schema of their own, up to a position the live version reached, in short transactions like the runner's, so
 * the live feed is never held back.
 */
import { sql, type Kysely } from 'kysely';
import type { Database, NoTables } from '../db/database.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import { comparePositions, type Position } from '../eventstore/position.ts';
import type { Projector } from './projector.ts';
import { searchPathOf } from './projectorSchema.ts';

/** Events read from the feed, and applied, per transaction of a rebuild. */
export const REBUILD_BATCH_EVENTS = 2_000;

export interface CatchUpOptions {
  /** Apply everything in this transaction instead of one per batch (its search_path is changed). */
  trx?: Kysely<NoTables>;
  /** Called after every batch with the number of feed events it read (handled or not). */
  onRead?(events: number): void;
}

export interface CaughtUp {
  /** The last position applied (`from` when the feed had nothing after it up to `to`). */
  position: Position | null;
  /** Events of the types the projector handles, applied. */
  applied: number;
}

/**
 * Applies the events of `page` (feed events, in feed order) that the projector handles to the tables in `schema`,
 * inside `trx` (whose search_path it changes); answers how many it applied.
 */
export async function applyPage(
  trx: Kysely<NoTables>, database: Database, projector: Projector, schema: string, page: readonly RecordedEvent[],
): Promise<number> {
  const events = page.filter((e) => projector.handles.includes(e.type));
  if (events.length === 0) return 0;
  await sql.raw(`SET LOCAL search_path TO ${searchPathOf(schema, database.schema)}`).execute(trx);
  await projector.apply(trx, events);
  return events.length;
}

/** Applies the feed after `from` up to and including `to` to the tables in `schema`. */
export async function catchUp(
  database: Database, store: EventStore, projector: Projector, schema: string, from: Position | null, to: Position,
  options: CatchUpOptions = {},
): Promise<CaughtUp> {
  let after = from;
  let applied = 0;
  for (;;) {
    if (after && comparePositions(after, to) >= 0) return { position: after, applied };
    const page = (await store.readAll({ after, limit: REBUILD_BATCH_EVENTS })).filter((e) => comparePositions(e.position, to) <= 0);
    if (page.length === 0) return { position: after, applied };
    applied += options.trx
      ? await applyPage(options.trx, database, projector, schema, page)
      : await database.db.transaction().execute((trx) => applyPage(trx, database, projector, schema, page));
    after = page[page.length - 1]!.position;
    options.onRead?.(page.length);
  }
}
