/**
 * Replays a projector: rebuilds its active version from the log into a schema beside the one serving readers,
 * then swaps the main schema's views over to it in one transaction, so readers see the old tables or the rebuilt
 * ones, never a half-built read model. The service may keep running meanwhile (on Postgres, in any number of
 * processes), and the replay does not take the projector's lease away from it:
 *
 * - the live runner goes on serving and writing. Each of its batches updates, and so locks, the version's
 *   projection_state row (the checkpoint's compare-and-set), and writes to the schema that row names;
 * - the rebuild catches up with the live checkpoint in short transactions; then one transaction locks that row,
 *   applies what the live version handled since, re-points the views, names the rebuilt schema in the row and
 *   drops the old one. The live runner's next batch waits for it, then goes on from the same checkpoint in the
 *   rebuilt tables.
 *
 * A replay is a new generation of the same version, counted in projection_state.replays and naming its schema
 * (`<schema>__<name>_v<version>_r<replays>`), not a new version: the version is the code's, and leases,
 * read-your-writes and the retirement of old versions all key on it. A replay changes no code, so the lease, the
 * checkpoint and the process holding them stay; only the tables behind the views change.
 *
 * Not replayed: reactors (process managers) and projectors that write outside their own tables (the webhook
 * emitter's outbox): running them again would act (issue commands, send webhooks), not only rebuild.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { Database, NoTables } from '../db/database.ts';
import { quoteIdent } from '../db/sql.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import { comparePositions, formatPosition, type Position } from '../eventstore/position.ts';
import { applyPage, catchUp, REBUILD_BATCH_EVENTS } from './catchUp.ts';
import type { Projector } from './projector.ts';
import { createFreshSchema, replaySchemaName, swapInRebuilt } from './projectorSchema.ts';
import { replayLockKey } from './schemaKeeper.ts';

/**
 * Attempts at the swap. On Postgres the first one finishes unless it deadlocks with a reader (Postgres then
 * aborts one of the two). PGlite is a single session: the swap cannot read the feed while it holds it, so it
 * brings with it the feed read just before; when a runner of the same process moved the checkpoint beyond that
 * meanwhile, the swap gives way and catches up again.
 */
const MAX_SWAP_ATTEMPTS = 50;

/** Postgres's error code for a transaction it aborted to break a deadlock. */
const DEADLOCK_DETECTED = '40P01';

/** A replay that cannot be done as asked; nothing was changed. */
export class ReplayRefusedError extends Error {
  override readonly name = 'ReplayRefusedError';
}

export interface ReplayProgress {
  /** Feed events the rebuild read since the last call. */
  read?(events: number): void;
}

export interface ReplayResult {
  projector: string;
  version: number;
  /** The generation now serving: how many replays of this version were swapped in. */
  replays: number;
  /** The schema the views show now, and the one they showed before (dropped). */
  schema: string;
  previousSchema: string;
  /** The feed position the rebuilt tables were swapped in at (null: the feed was empty). */
  position: string | null;
  /** Feed events read, and those of the types the projector handles, applied. */
  eventsRead: number;
  eventsApplied: number;
  seconds: number;
  /** Feed events read per second of the whole replay. */
  eventsPerSecond: number;
}

/** The projectors a replay may rebuild: those that only write their own tables. */
export function replayableProjectors(projectors: readonly Projector[]): Projector[] {
  return projectors.filter((p) => !p.writesOutside);
}

interface ActiveRow {
  version: number;
  schema_name: string | null;
  replays: number;
  checkpoint_commit: string | null;
  checkpoint_prepare: string | null;
}

const ACTIVE_ROW = `SELECT version, schema_name, replays, checkpoint_commit::text, checkpoint_prepare::text FROM projection_state`;

function checkpointOf(row: ActiveRow): Position | null {
  return row.checkpoint_commit === null ? null : { commit: BigInt(row.checkpoint_commit), prepare: BigInt(row.checkpoint_prepare!) };
}

function samePosition(a: Position | null, b: Position | null): boolean {
  return a === null || b === null ? a === b : comparePositions(a, b) === 0;
}

/** The row of the version serving readers, checked to be this code's version with nothing building beside it. */
async function activeRow(database: Database, projector: Projector): Promise<ActiveRow> {
  const { rows } = await database.query<ActiveRow & { status: string }>(
    `${ACTIVE_ROW.replace('SELECT ', 'SELECT status, ')} WHERE name = $1 AND status <> 'retired' ORDER BY version`, [projector.name]);
  const active = rows.find((r) => r.status === 'active');
  if (!active?.schema_name) {
    throw new ReplayRefusedError(`${projector.name} has no active version yet: the service builds it when it starts`);
  }
  if (active.version !== projector.version) {
    throw new ReplayRefusedError(`${projector.name}'s active version is v${active.version} and this code's is v${projector.version}: ` +
      `the service at v${projector.version} rebuilds it by itself; replay it once that version is active`);
  }
  const building = rows.find((r) => r.status === 'building');
  if (building) {
    throw new ReplayRefusedError(`${projector.name} v${building.version} is building beside the active v${active.version} ` +
      'and replaces it once it has caught up; nothing to replay meanwhile');
  }
  return active;
}

/**
 * On Postgres, one replay of a projector at a time across processes (two would build into the same schema): a
 * session advisory lock on a connection of its own, released when the replay ends or its process dies. PGlite
 * has one user, the process holding the data directory's lock.
 */
async function replayLock(database: Database, projector: Projector): Promise<() => Promise<void>> {
  if (database.kind !== 'postgres' || !database.connectionString) return async () => undefined;
  const client = new pg.Client({ connectionString: database.connectionString });
  await client.connect();
  const key = replayLockKey(database.schema, projector.name);
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [key]);
  if (!rows[0]!.locked) {
    await client.end();
    throw new ReplayRefusedError(`another replay of ${projector.name} is running`);
  }
  return () => client.end();
}

// Long as one replay's protocol (lock, rebuild, swap with bounded retries, clean-up); its swap closes over the rebuild's state.
/** Rebuilds `projector`'s active version beside it and swaps it in; see the top of this file. */
export async function replayProjector(
  database: Database, store: EventStore, projector: Projector, progress: ReplayProgress = {},
): Promise<ReplayResult> {
  if (projector.writesOutside) {
    throw new ReplayRefusedError(`${projector.name} writes outside its own tables: a replay would act again, not only rebuild`);
  }
  const startedAt = performance.now();
  const unlock = await replayLock(database, projector);
  try {
    const before = await activeRow(database, projector);
    const replays = before.replays + 1;
    const rebuilt = replaySchemaName(database.schema, projector, replays);
    // Also drops what a replay of this generation that stopped half way left.
    await createFreshSchema(database.db, projector, rebuilt, database.schema);
    let eventsRead = 0;
    let eventsApplied = 0;
    const onRead = (n: number) => {
      eventsRead += n;
      progress.read?.(n);
    };
    let applied: Position | null = null;
    try {
      for (let attempt = 1; ; attempt++) {
        const target = checkpointOf(await activeRow(database, projector));
        if (target) {
          const caught = await catchUp(database, store, projector, rebuilt, applied, target, { onRead });
          applied = caught.position;
          eventsApplied += caught.applied;
        }
        const ahead = database.kind === 'pglite' ? await store.readAll({ after: applied, limit: REBUILD_BATCH_EVENTS }) : [];
        try {
          const swapped = await database.db.transaction().execute((trx) => swap(trx, ahead));
          if (swapped) {
            // Counted once the transaction that applied them committed.
            onRead(swapped.read);
            eventsApplied += swapped.applied;
            const { read: _read, applied: _applied, ...result } = swapped;
            return { ...result, eventsRead, eventsApplied, ...rate(eventsRead, startedAt) };
          }
        } catch (error) {
          if ((error as { code?: string }).code !== DEADLOCK_DETECTED || attempt >= MAX_SWAP_ATTEMPTS) throw error;
        }
        if (attempt >= MAX_SWAP_ATTEMPTS) {
          throw new Error(`${projector.name}: the live version kept moving past the rebuild in ${MAX_SWAP_ATTEMPTS} attempts; try again`);
        }
      }
    } catch (error) {
      // The replay's own error is the one to report; a schema left here is dropped by the next replay.
      await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(rebuilt)} CASCADE`).execute(database.db).catch(() => undefined);
      throw error;
    }

    /**
     * Locks the row, brings the rebuild to its checkpoint and swaps; null when it must catch up first (PGlite, whose
     * feed after the rebuild's position, read just before, is `ahead`).
     */
    async function swap(trx: Kysely<NoTables>, ahead: readonly RecordedEvent[]) {
      const { rows } = await sql<ActiveRow>`${sql.raw(ACTIVE_ROW)}
        WHERE name = ${projector.name} AND version = ${projector.version} AND status = 'active' FOR UPDATE`.execute(trx);
      const row = rows[0];
      if (!row || row.replays !== before.replays || row.schema_name !== before.schema_name) {
        throw new ReplayRefusedError(`${projector.name} v${projector.version} was replaced or replayed by another process meanwhile`);
      }
      const live = checkpointOf(row);
      // What this transaction applies counts only if it commits: a retry after a deadlock starts from `applied` again.
      let read = 0;
      let appliedHere = 0;
      if (!samePosition(live, applied)) {
        // Behind by what the live runner did since the catch-up: it waits on this row's lock meanwhile.
        let reached: Position | null;
        if (database.kind === 'pglite') {
          const upTo = ahead.findIndex((e) => comparePositions(e.position, live!) === 0);
          if (upTo < 0) return null;
          const page = ahead.slice(0, upTo + 1);
          appliedHere = await applyPage(trx, database, projector, rebuilt, page);
          read = page.length;
          reached = live;
        } else {
          const caught = await catchUp(database, store, projector, rebuilt, applied, live!, { trx, onRead: (n) => { read += n; } });
          reached = caught.position;
          appliedHere = caught.applied;
        }
        if (!samePosition(live, reached)) throw new Error(`${projector.name}: the rebuild passed the live checkpoint; nothing was swapped`);
        await sql.raw(`SET LOCAL search_path TO ${quoteIdent(database.schema)}, public`).execute(trx);
      }
      await swapInRebuilt(trx, projector, row.schema_name!, rebuilt, database.schema);
      await sql`UPDATE projection_state SET schema_name = ${rebuilt}, replays = ${replays}, replayed_at = now(), updated_at = now()
                 WHERE name = ${projector.name} AND version = ${projector.version}`.execute(trx);
      return {
        projector: projector.name, version: projector.version, replays, schema: rebuilt, previousSchema: row.schema_name!,
        position: live ? formatPosition(live) : null, read, applied: appliedHere,
      };
    }
  } finally {
    await unlock();
  }
}

function rate(events: number, startedAt: number): { seconds: number; eventsPerSecond: number } {
  const seconds = (performance.now() - startedAt) / 1000;
  return { seconds: Math.round(seconds * 1000) / 1000, eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : 0 };
}
