/**
 * Bookkeeping of every projector version and reactor in `projection_state`: its status, its checkpoint and
 * the lease that keeps it to one active instance across processes.
 */
import { sql, type Kysely } from 'kysely';
import type { Database, NoTables } from '../db/database.ts';
import type { Position } from '../eventstore/position.ts';
import { Coalescer } from '../db/coalescer.ts';
import { quoteLiteral } from '../db/inlineSql.ts';

interface Renewal { name: string; version: number; owner: string; ttlMs: number }

/**
 * Lease renewals of a process's runners, one statement for all that come in the same turn of the event loop (the
 * runners of a daemon beat together): the idle service's cost in the database is a statement per beat, not one per
 * runner. A row locked by its runner's batch in flight is skipped, not waited for ('busy'): that batch renews the
 * lease itself when it commits, and waiting would hold the other rows' locks behind it.
 */
const renewals = new WeakMap<Database, Coalescer<Renewal, LeaseRenewal>>();

/** What a renewal found: the lease renewed, taken by another (or the version retired), or its row busy. */
export type LeaseRenewal = 'kept' | 'lost' | 'busy';

function renewalsOf(database: Database): Coalescer<Renewal, LeaseRenewal> {
  let coalescer = renewals.get(database);
  if (!coalescer) {
    coalescer = new Coalescer(async (leases) => {
      const { rows } = await database.query<{ n: number; kept: boolean; locked: boolean }>({ name: 'projection_renew_leases', text:
        `WITH wanted AS (
           SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(n integer, name text, version integer, owner text, ttl_ms double precision)
         ), locked AS (
           SELECT p.name, p.version FROM projection_state p JOIN wanted x ON p.name = x.name AND p.version = x.version
              FOR UPDATE OF p SKIP LOCKED
         ), renewed AS (
           UPDATE projection_state p
              SET lease_owner = x.owner, lease_expires_at = now() + make_interval(secs => x.ttl_ms / 1000)
             FROM wanted x, locked l
            WHERE p.name = x.name AND p.version = x.version AND l.name = p.name AND l.version = p.version
              AND p.status <> 'retired' AND (p.lease_owner IS NULL OR p.lease_owner = x.owner OR p.lease_expires_at < now())
           RETURNING x.n
         )
         SELECT x.n, EXISTS (SELECT 1 FROM renewed r WHERE r.n = x.n) AS kept,
                EXISTS (SELECT 1 FROM locked l WHERE l.name = x.name AND l.version = x.version) AS locked
           FROM wanted x` },
        [JSON.stringify(leases.map((lease, n) => ({ n, name: lease.name, version: lease.version, owner: lease.owner, ttl_ms: lease.ttlMs })))]);
      const outcome = new Map(rows.map((row) => [row.n, row.kept ? 'kept' as const : row.locked ? 'lost' as const : 'busy' as const]));
      return leases.map((_, n) => outcome.get(n) ?? 'lost');
    }, { maxBatch: 1000 });
    renewals.set(database, coalescer);
  }
  return coalescer;
}

/** A reactor's row in projection_state: reactors have one version. */
export const REACTOR_STATE_VERSION = 1;

interface ReactorCheckpoint {
  name: string;
  owner: string;
  ttlMs: number;
  previous: Position | null;
  next: Position;
  handled: number;
}

/**
 * Reactors' checkpoints, one statement for all those stored in the same turn of the event loop. A reactor has no
 * table to write with its checkpoint (its effects are commands of their own), so the checkpoint needs no
 * transaction: one compare-and-set statement, shared.
 */
const reactorCheckpoints = new WeakMap<Database, Coalescer<ReactorCheckpoint, boolean>>();

function reactorCheckpointsOf(database: Database): Coalescer<ReactorCheckpoint, boolean> {
  let coalescer = reactorCheckpoints.get(database);
  if (!coalescer) {
    coalescer = new Coalescer(async (checkpoints) => {
      const { rows } = await database.query<{ n: number }>({ name: 'projection_reactor_checkpoints', text:
        `WITH wanted AS (
           SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(n integer, name text, owner text, ttl_ms double precision,
             previous_commit bigint, previous_prepare bigint, next_commit bigint, next_prepare bigint, handled bigint)
         )
         UPDATE projection_state p
            SET checkpoint_commit = x.next_commit, checkpoint_prepare = x.next_prepare,
                events_handled = p.events_handled + x.handled,
                lease_expires_at = now() + make_interval(secs => x.ttl_ms / 1000), last_error = NULL, updated_at = now()
           FROM wanted x
          WHERE p.name = x.name AND p.version = ${REACTOR_STATE_VERSION} AND p.lease_owner = x.owner AND p.status <> 'retired'
            AND p.checkpoint_commit IS NOT DISTINCT FROM x.previous_commit
            AND p.checkpoint_prepare IS NOT DISTINCT FROM x.previous_prepare
         RETURNING x.n` },
        [JSON.stringify(checkpoints.map((c, n) => ({
          n, name: c.name, owner: c.owner, ttl_ms: c.ttlMs, handled: c.handled,
          previous_commit: c.previous?.commit.toString() ?? null, previous_prepare: c.previous?.prepare.toString() ?? null,
          next_commit: c.next.commit.toString(), next_prepare: c.next.prepare.toString(),
        })))]);
      const moved = new Set(rows.map((row) => row.n));
      return checkpoints.map((_, n) => moved.has(n));
    }, { maxBatch: 1000 });
    reactorCheckpoints.set(database, coalescer);
  }
  return coalescer;
}

/** A projector's checkpoint moved from `previous` to `next` by its owner, counting `handled` events. */
export interface CheckpointMove {
  name: string;
  version: number;
  owner: string;
  ttlMs: number;
  previous: Position | null;
  next: Position;
  handled: number;
}

export type ProjectionStatus = 'building' | 'active' | 'retired';

export interface ProjectionStateRow {
  name: string;
  version: number;
  kind: 'projector' | 'reactor';
  status: ProjectionStatus;
  schemaName: string | null;
  checkpoint: Position | null;
  eventsHandled: bigint;
  leaseOwner: string | null;
  lastError: string | null;
  updatedAt: Date;
}

interface RawRow {
  name: string;
  version: number;
  kind: 'projector' | 'reactor';
  status: ProjectionStatus;
  schema_name: string | null;
  checkpoint_commit: string | null;
  checkpoint_prepare: string | null;
  events_handled: string;
  lease_owner: string | null;
  last_error: string | null;
  updated_at: Date;
}

const COLUMNS = `name, version, kind, status, schema_name, checkpoint_commit::text, checkpoint_prepare::text,
  events_handled::text, lease_owner, last_error, updated_at`;

function toRow(raw: RawRow): ProjectionStateRow {
  return {
    name: raw.name,
    version: raw.version,
    kind: raw.kind,
    status: raw.status,
    schemaName: raw.schema_name,
    checkpoint: raw.checkpoint_commit === null
      ? null
      : { commit: BigInt(raw.checkpoint_commit), prepare: BigInt(raw.checkpoint_prepare!) },
    eventsHandled: BigInt(raw.events_handled),
    leaseOwner: raw.lease_owner,
    lastError: raw.last_error,
    updatedAt: raw.updated_at,
  };
}

export interface LeaseClaim {
  held: boolean;
  retired: boolean;
  /** When not held: how long the holder's lease still runs, in ms (0 when it has just run out). */
  remainingMs: number;
  /** Who held the lease before this claim (null when nobody). */
  previousOwner: string | null;
}

export class ProjectionStateStore {
  constructor(private readonly database: Database) {}

  /**
   * A projector version starts `building` (its tables are swapped in once it catches up); a reactor has no
   * tables to build and is `active` from the start. Reactors registered as `building` by earlier releases are
   * made `active` when they next start.
   */
  async register(name: string, version: number, kind: 'projector' | 'reactor', schemaName: string | null): Promise<void> {
    await this.database.query(
      `INSERT INTO projection_state (name, version, kind, status, schema_name)
       VALUES ($1, $2, $3, CASE WHEN $3 = 'reactor' THEN 'active' ELSE 'building' END, $4)
       ON CONFLICT (name, version) DO UPDATE SET status = 'active', updated_at = now()
         WHERE projection_state.kind = 'reactor' AND projection_state.status = 'building'`,
      [name, version, kind, schemaName]);
  }

  async get(name: string, version: number): Promise<ProjectionStateRow | null> {
    const { rows } = await this.database.query<RawRow>(
      `SELECT ${COLUMNS} FROM projection_state WHERE name = $1 AND version = $2`, [name, version]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async list(): Promise<ProjectionStateRow[]> {
    const { rows } = await this.database.query<RawRow>(
      `SELECT ${COLUMNS} FROM projection_state ORDER BY name, version`);
    return rows.map(toRow);
  }

  async activeVersion(name: string): Promise<number | null> {
    const { rows } = await this.database.query<{ version: number }>(
      `SELECT version FROM projection_state WHERE name = $1 AND status = 'active'`, [name]);
    return rows[0]?.version ?? null;
  }

  /**
   * Renews (or takes) the lease: 'kept' when this owner holds it afterwards; 'lost' when another does or the
   * version was retired (a retired version's lease is never granted: its schema is gone and the main schema's views
   * lead to its successor's tables); 'busy' when its row is locked by a batch in flight (which renews it on commit).
   * Renewals made in the same turn of the event loop share one statement.
   */
  renewLease(name: string, version: number, owner: string, ttlMs: number): Promise<LeaseRenewal> {
    return renewalsOf(this.database).submit({ name, version, owner, ttlMs });
  }

  /**
   * Takes the lease if it is free, ours or expired, in one statement that also tells, when it is not granted,
   * whether the version is retired and how long the holder's lease still runs (by the database's clock).
   */
  async claimLease(name: string, version: number, owner: string, ttlMs: number): Promise<LeaseClaim> {
    const { rows } = await this.database.query<{ taken: boolean; status: ProjectionStatus; lease_owner: string | null; remaining_ms: number | null }>(
      `WITH taken AS (
         UPDATE projection_state
            SET lease_owner = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
          WHERE name = $1 AND version = $2 AND status <> 'retired'
            AND (lease_owner IS NULL OR lease_owner = $3 OR lease_expires_at < now())
          RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM taken) AS taken, status, lease_owner,
              (extract(epoch FROM lease_expires_at - now()) * 1000)::double precision AS remaining_ms
         FROM projection_state WHERE name = $1 AND version = $2`,
      [name, version, owner, ttlMs]);
    const row = rows[0];
    if (!row) return { held: false, retired: false, remainingMs: 0, previousOwner: null };
    return {
      held: row.taken,
      retired: !row.taken && row.status === 'retired',
      remainingMs: Math.max(0, row.remaining_ms ?? 0),
      // The row as it was before this statement (the CTE's update is not visible to it).
      previousOwner: row.lease_owner,
    };
  }

  async releaseLease(name: string, version: number, owner: string): Promise<void> {
    await this.database.query(
      `UPDATE projection_state SET lease_owner = NULL, lease_expires_at = NULL
        WHERE name = $1 AND version = $2 AND lease_owner = $3`, [name, version, owner]);
  }

  async recordError(name: string, version: number, message: string): Promise<void> {
    await this.database.query(
      `UPDATE projection_state SET last_error = $3, updated_at = now() WHERE name = $1 AND version = $2`,
      [name, version, message.slice(0, 2000)]);
  }

  /**
   * A reactor's checkpoint, from `previous` to `next` if nobody else moved it and the lease is still `owner`'s;
   * false otherwise. Outside any transaction, shared with the other reactors' (see `reactorCheckpointsOf`).
   */
  advanceReactorCheckpoint(name: string, owner: string, ttlMs: number, previous: Position | null, next: Position, handled: number): Promise<boolean> {
    return reactorCheckpointsOf(this.database).submit({ name, owner, ttlMs, previous, next, handled });
  }

  /**
   * Begins a shared transaction on `connection` and, in the same round trip, moves several projectors' checkpoints in
   * one compare-and-set (the function `move_checkpoints`, src/db/migrations.ts), with every one of their schemas first
   * on the search_path (a table belongs to one projector, which the daemon checks as projectors are added, so each
   * name finds its own version's table; a row without a schema fails the call). The two go as one simple query, so
   * the moves are written into it as a literal; it fails (`CheckpointsNotMoved` in its message) unless every
   * checkpoint moved, and the transaction must then be rolled back. The caller commits or rolls back.
   */
  async beginWithCheckpoints(connection: Kysely<NoTables>, moves: readonly CheckpointMove[], baseSchema: string): Promise<void> {
    const wanted = JSON.stringify(moves.map((m) => ({
      name: m.name, version: m.version, owner: m.owner, ttl_ms: m.ttlMs, handled: m.handled,
      previous_commit: m.previous?.commit.toString() ?? null, previous_prepare: m.previous?.prepare.toString() ?? null,
      next_commit: m.next.commit.toString(), next_prepare: m.next.prepare.toString(),
    })));
    await sql.raw(`BEGIN; SELECT move_checkpoints(${quoteLiteral(wanted)}::jsonb, ${moves.length}, ${quoteLiteral(baseSchema)})`).execute(connection);
  }

  /**
   * Inside the batch transaction: moves the checkpoint from `previous` to `next` only if nobody else moved
   * it and the lease is still ours. False means the batch must roll back. With `baseSchema`, the same
   * statement also sets the transaction's search_path (a round trip less per batch) to the schema the row
   * names, then `baseSchema`: the row, locked by this update until the batch commits, says which tables serve,
   * so a replay that swapped in a rebuilt schema (src/projection/replay.ts) is written to from the next batch on.
   */
  async advanceCheckpoint(
    trx: Kysely<NoTables>, name: string, version: number, owner: string, ttlMs: number,
    previous: Position | null, next: Position, handled: number, baseSchema?: string,
  ): Promise<boolean> {
    const result = await sql`
      UPDATE projection_state
         SET checkpoint_commit = ${next.commit.toString()}::bigint,
             checkpoint_prepare = ${next.prepare.toString()}::bigint,
             events_handled = events_handled + ${handled},
             lease_expires_at = now() + make_interval(secs => ${ttlMs}::double precision / 1000),
             last_error = NULL, updated_at = now()
       WHERE name = ${name} AND version = ${version} AND lease_owner = ${owner} AND status <> 'retired'
         AND checkpoint_commit IS NOT DISTINCT FROM ${previous?.commit.toString() ?? null}::bigint
         AND checkpoint_prepare IS NOT DISTINCT FROM ${previous?.prepare.toString() ?? null}::bigint
      ${baseSchema ? sql`RETURNING set_config('search_path', format('%I, %I, public', schema_name, ${baseSchema}::text), true)` : sql``}`
      .execute(trx);
    return result.numAffectedRows === 1n;
  }
}
