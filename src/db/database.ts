/**
 * One way to reach the database, whichever the storage mode: a `pg.Pool` (over PGlite's node-postgres
 * bridge in embedded mode) wrapped by kysely's PostgresDialect. PGlite gets exactly one connection: it is a
 * single session, and kysely transactions over one pooled connection keep their atomicity (unlike
 * kysely-pglite, which lets one transaction run inside another).
 */
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { ProcessLiveness } from './liveness.ts';
import { runMigrations } from './migrations.ts';
import { copyPgliteTemplate } from './pgliteTemplate.ts';
import { preparingPool } from './preparedStatements.ts';
import { quoteIdent } from './sql.ts';

export type DatabaseKind = 'pglite' | 'postgres';

/**
 * The tables the platform's own handle knows: none. Its code (event store, projection runner) writes SQL; a
 * reader of tables sees the handle with the tables it reads (kysely's `withTables`): a projector its own
 * (src/projection/projector.ts), the read side's queries every read model (projections/readModels.ts).
 */
export type NoTables = {};

export interface Database {
  readonly kind: DatabaseKind;
  readonly pool: pg.Pool;
  readonly db: Kysely<NoTables>;
  /** The schema holding the event store, bookkeeping tables and read-model views. */
  readonly schema: string;
  /** Real Postgres only: a connection string for side channels (LISTEN). */
  readonly connectionString?: string;
  /**
   * One statement on a pooled connection. Use this, never `pool.query`: pg-pool discards a connection
   * whose query failed, and PGlite's single bridged connection does not survive being discarded.
   */
  query<R extends pg.QueryResultRow = any>(
    text: string | { name: string; text: string }, params?: unknown[]): Promise<pg.QueryResult<R>>;
  /**
   * Real Postgres only: this process's liveness lock (src/db/liveness.ts), taken once someone starts it, released
   * on close. Null on PGlite, which one process alone can open.
   */
  readonly liveness: ProcessLiveness | null;
  close(): Promise<void>;
}

export type DatabaseTarget =
  | {
    kind: 'pglite';
    dataDir: string | 'memory://';
    /** a dumped data dir to start from (tests) */
    loadDataDir?: Blob;
    /** an initialised cluster to copy when dataDir has none (src/db/pgliteTemplate.ts) */
    template?: string;
  }
  | { kind: 'postgres'; connectionString: string; poolSize?: number };

export interface OpenDatabaseOptions {
  schema?: string;
  /** Seconds a session may sit idle inside a transaction before Postgres ends it (it would stall the feed). */
  idleInTransactionTimeoutSeconds?: number;
}

// Short enough that "<schema>__<projector>_v<version>" stays within Postgres's 63-character names.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,23}$/;
export const DEFAULT_SCHEMA = 'payments_ledger';

/**
 * PGlite's shared buffers live in its WebAssembly memory, and Postgres touches all of them when it starts, so
 * they are resident from the first moment: initdb's 128 MB default was a quarter of the service's memory.
 * A page missing from them is read from the operating system's page cache, not from disk.
 */
const PGLITE_SHARED_BUFFERS_MB = 32;

export async function openDatabase(target: DatabaseTarget, options: OpenDatabaseOptions = {}): Promise<Database> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}`);
  const idleTimeoutMs = (options.idleInTransactionTimeoutSeconds ?? 60) * 1000;

  let pool: pg.Pool;
  let pglite: PGlite | undefined;
  if (target.kind === 'pglite') {
    if (target.template && target.dataDir !== 'memory://') copyPgliteTemplate(target.template, target.dataDir);
    pglite = new PGlite({
      ...(target.dataDir === 'memory://' ? {} : { dataDir: target.dataDir }),
      ...(target.loadDataDir ? { loadDataDir: target.loadDataDir } : {}),
      startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS_MB}MB`],
    });
    await pglite.waitReady;
    // PGlite is one backend session: a session setting made once holds for every pooled client object.
    await pglite.exec(`SET search_path TO ${quoteIdent(schema)}, public`);
    pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 } as pg.PoolConfig);
  } else {
    pool = new pg.Pool({
      connectionString: target.connectionString,
      max: target.poolSize ?? 16,
      connectionTimeoutMillis: 10_000,
      // Schema names are checked against SCHEMA_NAME, so they need no quoting here.
      options: `-c search_path=${schema},public -c idle_in_transaction_session_timeout=${idleTimeoutMs}`,
    });
  }
  // An idle client that dies (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor one that dies while checked out (the database unreachable mid-query): pg fails its queries, which their
  // callers see, and also emits 'error' on the client, which the pool listens for only while the client is idle.
  // Released, a dead client is discarded.
  pool.on('connect', (client) => client.on('error', () => undefined));

  const db = new Kysely<NoTables>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  const liveness = target.kind === 'postgres' ? new ProcessLiveness(target.connectionString) : null;
  const close = async () => {
    await liveness?.stop();
    await db.destroy(); // ends the pool, but only once Kysely has used it
    // A process that queried through `query` alone (the CLI's status) never started Kysely's driver, whose destroy
    // then leaves the pool open: its idle connections would keep the process alive for pg's idle timeout (10 s).
    if (!pool.ending) await pool.end();
    if (pglite) await pglite.close();
  };
  const query = async <R extends pg.QueryResultRow>(text: string | { name: string; text: string }, params?: unknown[]) => {
    const client = await pool.connect();
    try {
      // A named statement is parsed and planned once per connection, then only bound and executed.
      return await client.query<R>(typeof text === 'string' ? { text, values: params } : { ...text, values: params });
    } finally {
      client.release();
    }
  };
  try {
    await runMigrations(pool, schema);
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  return {
    kind: target.kind,
    pool,
    db,
    schema,
    ...(target.kind === 'postgres' ? { connectionString: target.connectionString } : {}),
    query,
    liveness,
    close,
  };
}
