/**
 * Waiting for the read models to show everything appended so far. The store's headPosition() is the head the feed
 * shows, and on Postgres the feed stops at its horizon, the oldest transaction running anywhere on the server: while
 * another suite's transaction is open (the other test file of the run, another checkout's suite on a shared server),
 * that head can stand before this suite's latest appends, and a wait for it ends at once. The newest event committed
 * is read from the events table itself, which this snapshot sees whatever runs elsewhere.
 */
import { expect } from 'chai';
import type { Database } from '../../src/db/database.ts';
import type { Position } from '../../src/eventstore/position.ts';

/** The position of the newest event committed (null: none), whether or not the feed shows it yet. */
export async function newestEventPosition(database: Pick<Database, 'query'>): Promise<Position | null> {
  const { rows } = await database.query<{ commit: string; prepare: string }>(
    `SELECT transaction_id::text AS commit, global_position::text AS prepare FROM events
      ORDER BY transaction_id DESC, global_position DESC LIMIT 1`);
  return rows[0] ? { commit: BigInt(rows[0].commit), prepare: BigInt(rows[0].prepare) } : null;
}

interface Services {
  projections: { waitFor(position: Position, timeoutMs?: number): Promise<boolean> };
  storage: { database: Pick<Database, 'query'> };
}

/** Waits until every projector serving reads has passed the newest event committed; fails after `timeoutMs`. */
export async function waitForNewestEvent(services: Services, timeoutMs = 60_000): Promise<void> {
  const newest = await newestEventPosition(services.storage.database);
  if (!newest) return;
  expect(await services.projections.waitFor(newest, timeoutMs), `read models past the newest event within ${timeoutMs} ms`).to.equal(true);
}
