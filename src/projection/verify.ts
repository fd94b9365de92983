/**
 * Checks that the live read models equal a rebuild from the log, without stopping the service: each projector is
 * rebuilt into a scratch schema of its own (in short transactions, like the runner's, so the live feed is never
 * held back), caught up to the live version's checkpoint, and the tables of both compared inside one
 * repeatable-read snapshot in which the live checkpoint is exactly the rebuild's. Under writes the live checkpoint
 * moves on between rounds; the check catches up and tries again (MAX_ROUNDS).
 *
 * Projectors that write outside their own tables (`writesOutside`: the webhook emitter's outbox) are skipped:
 * rebuilding them would act, not only read.
 */
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { Database, NoTables } from '../db/database.ts';
import { quoteIdent } from '../db/sql.ts';
import type { EventStore } from '../eventstore/port.ts';
import { comparePositions, formatPosition, type Position } from '../eventstore/position.ts';
import { catchUp } from './catchUp.ts';
import type { Projector } from './projector.ts';
import { createFreshSchema } from './projectorSchema.ts';
import { verifyLockKey } from './schemaKeeper.ts';

/** Attempts at catching the live version at rest between two of its batches. */
const MAX_ROUNDS = 50;
/** Differences shown per table and side. */
const MAX_SHOWN = 5;

export interface TableDifference {
  table: string;
  /** Rows the rebuild has and the live read model lacks (as JSON), at most MAX_SHOWN. */
  onlyInRebuild: unknown[];
  /** Rows the live read model has and the rebuild lacks. */
  onlyInLive: unknown[];
}

export interface ReadModelCheck {
  projector: string;
  version: number;
  status: 'equal' | 'different' | 'skipped' | 'unsettled';
  /** The feed position both sides were compared at. */
  position: string | null;
  tables: number;
  differences: TableDifference[];
  note?: string;
}

async function liveCheckpoint(db: Kysely<NoTables>, projector: Projector): Promise<{ position: Position | null; schema: string | null } | null> {
  const { rows } = await sql<{ c: string | null; p: string | null; schema_name: string | null }>`
    SELECT checkpoint_commit::text AS c, checkpoint_prepare::text AS p, schema_name FROM projection_state
     WHERE name = ${projector.name} AND status = 'active'`.execute(db);
  const row = rows[0];
  if (!row) return null;
  return { position: row.c === null ? null : { commit: BigInt(row.c), prepare: BigInt(row.p!) }, schema: row.schema_name };
}

async function compareTables(trx: Kysely<NoTables>, projector: Projector, scratch: string, live: string): Promise<TableDifference[]> {
  const differences: TableDifference[] = [];
  for (const table of projector.tables) {
    const a = `${quoteIdent(scratch)}.${quoteIdent(table)}`;
    const b = `${quoteIdent(live)}.${quoteIdent(table)}`;
    // Rows as JSON: every column type compares, whatever equality operators it lacks.
    const side = async (x: string, y: string) => (await sql.raw<{ row: unknown }>(
      `SELECT row FROM (SELECT to_jsonb(t) AS row FROM ${x} t EXCEPT ALL SELECT to_jsonb(u) FROM ${y} u) d LIMIT ${MAX_SHOWN}`).execute(trx)).rows.map((r) => r.row);
    const onlyInRebuild = await side(a, b);
    const onlyInLive = await side(b, a);
    if (onlyInRebuild.length > 0 || onlyInLive.length > 0) differences.push({ table, onlyInRebuild, onlyInLive });
  }
  return differences;
}

/** What a check reports as it goes (a progress bar). */
export interface VerifyProgress {
  /** A projector's rebuild begins, into `scratch`. */
  started?(projector: string, scratch: string): void;
  /** Feed events the rebuild read since the last call. */
  read?(events: number): void;
  /** A projector's check ended. */
  checked?(check: ReadModelCheck): void;
}

export async function verifyReadModels(
  database: Database, store: EventStore, projectors: readonly Projector[], progress: VerifyProgress = {},
): Promise<ReadModelCheck[]> {
  const results: ReadModelCheck[] = [];
  const db = database.db;
  for (const projector of projectors) {
    const base: ReadModelCheck = { projector: projector.name, version: projector.version, status: 'skipped', position: null, tables: projector.tables.length, differences: [] };
    if (projector.writesOutside) {
      results.push({ ...base, note: 'writes outside its own tables (its rebuild would act): not rebuilt here' });
      continue;
    }
    const live = await liveCheckpoint(db, projector);
    if (!live?.schema) {
      results.push({ ...base, note: 'no active version yet' });
      continue;
    }
    const scratch = `${database.schema}__verify_${projector.name}`.slice(0, 63);
    const unlock = await scratchLock(database, projector);
    if (!unlock) {
      results.push({ ...base, note: `another check of ${projector.name} is running (its scratch schema is in use); try again` });
      continue;
    }
    progress.started?.(projector.name, scratch);
    try {
      await createFreshSchema(db, projector, scratch, database.schema);
      let applied: Position | null = null;
      let outcome: ReadModelCheck | null = null;
      for (let round = 0; round < MAX_ROUNDS && !outcome; round++) {
        const target = (await liveCheckpoint(db, projector))?.position ?? null;
        if (target) applied = (await catchUp(database, store, projector, scratch, applied, target, { onRead: (n) => progress.read?.(n) })).position;
        outcome = await db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
          const now = (await liveCheckpoint(trx, projector))?.position ?? null;
          const same = now === null ? applied === null : applied !== null && comparePositions(now, applied) === 0;
          if (!same) return null; // the live version moved on meanwhile: catch up and look again
          const differences = await compareTables(trx, projector, scratch, live.schema!);
          return { ...base, status: differences.length === 0 ? 'equal' : 'different', position: now ? formatPosition(now) : null, differences } satisfies ReadModelCheck;
        });
      }
      results.push(outcome ?? { ...base, status: 'unsettled', note: `the live version never stood still at a checkpoint in ${MAX_ROUNDS} rounds; try again` });
      progress.checked?.(results.at(-1)!);
    } finally {
      try {
        await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(scratch)} CASCADE`).execute(db);
      } finally {
        await unlock();
      }
    }
  }
  return results;
}

/**
 * On Postgres, a session advisory lock on the projector's scratch schema for as long as the check uses it, on a
 * connection of its own (released when the check ends or its process dies): a second check of the same projector
 * does not build into the same schema, and the schema keeper (./schemaKeeper.ts) leaves it alone meanwhile. Null when
 * another check holds it. PGlite has one user, the process holding the data directory.
 */
async function scratchLock(database: Database, projector: Projector): Promise<(() => Promise<void>) | null> {
  if (database.kind !== 'postgres' || !database.connectionString) return async () => undefined;
  const client = new pg.Client({ connectionString: database.connectionString });
  await client.connect();
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked',
    [verifyLockKey(database.schema, projector.name)]);
  if (!rows[0]!.locked) {
    await client.end();
    return null;
  }
  return () => client.end();
}
