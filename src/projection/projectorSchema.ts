/**
 * The life of a projector version's schema: created fresh for a build, swapped in (views in the main
 * schema re-pointed in one transaction) when it becomes active, dropped when a newer version replaces it or a
 * replay of the same version swaps in a rebuilt one.
 */
import { sql, type Kysely } from 'kysely';
import type { NoTables } from '../db/database.ts';
import { quoteIdent } from '../db/sql.ts';
import type { Projector } from './projector.ts';

export function projectorSchemaName(baseSchema: string, projector: Pick<Projector, 'name' | 'version'>): string {
  return `${baseSchema}__${projector.name}_v${projector.version}`;
}

/** Postgres cuts longer identifiers short, which could make two schemas' names one. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Where replay number `replays` of a version builds (src/projection/replay.ts): beside the version's first
 * schema and beside every earlier replay's, so the tables serving readers are never the ones being rebuilt.
 */
export function replaySchemaName(baseSchema: string, projector: Pick<Projector, 'name' | 'version'>, replays: number): string {
  const name = `${projectorSchemaName(baseSchema, projector)}_r${replays}`;
  if (Buffer.byteLength(name) > MAX_IDENTIFIER_BYTES) {
    throw new Error(`schema name ${name} is longer than Postgres's ${MAX_IDENTIFIER_BYTES} bytes: use a shorter DATABASE_SCHEMA`);
  }
  return name;
}

/** The search_path of a projector version's transactions: its own schema first, then the main one. */
export function searchPathOf(schema: string, baseSchema: string): string {
  return `${quoteIdent(schema)}, ${quoteIdent(baseSchema)}, public`;
}

async function useSchema(trx: Kysely<NoTables>, schema: string, baseSchema: string): Promise<void> {
  await sql.raw(`SET LOCAL search_path TO ${searchPathOf(schema, baseSchema)}`).execute(trx);
}

/** Drops whatever a previous, unfinished build left and creates the tables anew. */
export async function createFreshSchema(db: Kysely<NoTables>, projector: Projector, schema: string, baseSchema: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`).execute(trx);
    await sql.raw(`CREATE SCHEMA ${quoteIdent(schema)}`).execute(trx);
    await useSchema(trx, schema, baseSchema);
    await projector.setup(trx);
  });
}

/**
 * Makes `version` the one readers see: re-points the views, rebuilds derived views, retires every other
 * version of the projector and drops their schemas. All in one transaction, so readers see either the old
 * tables or the new ones, never a mix.
 */
export async function activateVersion(db: Kysely<NoTables>, projector: Projector, schema: string, baseSchema: string): Promise<void> {
  const base = quoteIdent(baseSchema);
  await db.transaction().execute(async (trx) => {
    for (const table of projector.tables) {
      await sql.raw(`DROP VIEW IF EXISTS ${base}.${quoteIdent(table)} CASCADE`).execute(trx);
      await sql.raw(`CREATE VIEW ${base}.${quoteIdent(table)} AS SELECT * FROM ${quoteIdent(schema)}.${quoteIdent(table)}`)
        .execute(trx);
    }
    await sql.raw(`SET LOCAL search_path TO ${base}, public`).execute(trx);
    for (const statement of projector.derivedViews ?? []) await sql.raw(statement).execute(trx);
    const retired = await sql<{ schema_name: string | null }>`
      UPDATE projection_state SET status = 'retired', lease_owner = NULL, updated_at = now()
       WHERE name = ${projector.name} AND version <> ${projector.version} AND status <> 'retired'
       RETURNING schema_name`.execute(trx);
    await sql`
      UPDATE projection_state SET status = 'active', activated_at = now(), updated_at = now()
       WHERE name = ${projector.name} AND version = ${projector.version}`.execute(trx);
    for (const { schema_name } of retired.rows) {
      if (schema_name && schema_name !== schema) {
        await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(schema_name)} CASCADE`).execute(trx);
      }
    }
  });
}

/**
 * Inside the caller's transaction: points the main schema's views of an active version at the tables of
 * `rebuilt` (a replay of the same version, so the same columns) and drops `serving`, the schema they showed.
 * `CREATE OR REPLACE` keeps the views' identity, so the derived views built on them stay as they are.
 */
export async function swapInRebuilt(trx: Kysely<NoTables>, projector: Projector, serving: string, rebuilt: string, baseSchema: string): Promise<void> {
  for (const table of projector.tables) {
    await sql.raw(`CREATE OR REPLACE VIEW ${quoteIdent(baseSchema)}.${quoteIdent(table)} AS SELECT * FROM ${quoteIdent(rebuilt)}.${quoteIdent(table)}`)
      .execute(trx);
  }
  await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(serving)} CASCADE`).execute(trx);
}
