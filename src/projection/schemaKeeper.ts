/**
 * The keeper of projection schemas: drops the schemas of this service's projectors that nothing uses any more, so
 * a process that died half way through building one does not leave it behind for good. Those are:
 * - a version's schema (`<schema>__<name>_v<version>`) whose projection_state row is retired or missing (a version is
 *   retired, and its schema dropped, in the transaction that activates its successor; this catches what that missed);
 * - a replay generation (`…_v<version>_r<n>`) that no row names and no replay is building (a replay killed before its
 *   swap; the next replay of the projector would drop it too);
 * - a scratch schema of `verify read-models` (`<schema>__verify_<name>`) that no check is using (a check killed before
 *   its cleanup; the next check of the projector would drop it too).
 * A replay or a check in progress holds a session advisory lock on its projector (`replay:…`, `verify:…`) for as long
 * as it runs; the keeper drops such a schema only inside a transaction that holds the same lock, so never under one.
 * A version still building (a row with status `building`) keeps its schema, even when no process runs it now: a
 * deploy of that version resumes it.
 */
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { quoteIdent } from '../db/sql.ts';

/** Schemas dropped per run, at most (each in a transaction of its own). */
const MAX_DROPS_PER_RUN = 20;

/** The advisory lock key of a projector's replays, and of its read-model checks. */
export const replayLockKey = (baseSchema: string, projector: string) => `replay:${baseSchema}:${projector}`;
export const verifyLockKey = (baseSchema: string, projector: string) => `verify:${baseSchema}:${projector}`;

interface Candidate {
  schema: string;
  /** The lock its builder holds while it builds, or null for a version's own schema (the row says). */
  lock: string | null;
}

/** What a schema of `baseSchema` is, if it is a projector's (of one of `projectors`) that no live row names. */
function candidateOf(schema: string, baseSchema: string, projectors: ReadonlySet<string>, named: ReadonlySet<string>): Candidate | null {
  const prefix = `${baseSchema}__`;
  if (!schema.startsWith(prefix) || named.has(schema)) return null;
  const rest = schema.slice(prefix.length);
  if (rest.startsWith('verify_') && projectors.has(rest.slice('verify_'.length))) {
    return { schema, lock: verifyLockKey(baseSchema, rest.slice('verify_'.length)) };
  }
  const version = /^(.+)_v(\d+)(_r\d+)?$/.exec(rest);
  if (!version || !projectors.has(version[1]!)) return null;
  return { schema, lock: version[3] ? replayLockKey(baseSchema, version[1]!) : null };
}

/** Drops the orphaned projection schemas; answers their names. */
export async function dropOrphanSchemas(database: Database): Promise<string[]> {
  const base = database.schema;
  const { rows: states } = await database.query<{ name: string; kind: string; status: string; schema_name: string | null }>(
    'SELECT name, kind, status, schema_name FROM projection_state');
  const projectors = new Set(states.filter((s) => s.kind === 'projector').map((s) => s.name));
  const named = new Set(states.filter((s) => s.status !== 'retired' && s.schema_name).map((s) => s.schema_name!));
  const { rows: schemas } = await database.query<{ nspname: string }>(
    `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY nspname`, [`${base}__`]);
  const dropped: string[] = [];
  for (const { nspname } of schemas) {
    if (dropped.length >= MAX_DROPS_PER_RUN) break;
    const candidate = candidateOf(nspname, base, projectors, named);
    if (!candidate) continue;
    const done = await database.db.transaction().execute(async (trx) => {
      if (candidate.lock) {
        const { rows } = await sql<{ held: boolean }>`SELECT pg_try_advisory_xact_lock(hashtext(${candidate.lock})) AS held`.execute(trx);
        if (!rows[0]!.held) return false;
      }
      // Looked at again under the lock: a row may have named it since (a replay swapped it in).
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM projection_state WHERE schema_name = ${candidate.schema} AND status <> 'retired'`.execute(trx);
      if (rows[0]!.n > 0) return false;
      await sql.raw(`DROP SCHEMA IF EXISTS ${quoteIdent(candidate.schema)} CASCADE`).execute(trx);
      return true;
    });
    if (done) dropped.push(candidate.schema);
  }
  return dropped;
}
