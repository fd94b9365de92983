/**
 * Event store, projection and HTTP benchmarks: `npm run bench`. Prints figures; never fails on a slow machine.
 * Runs on embedded PGlite, and on Postgres when DATABASE_URL is set (in a scratch schema, dropped after).
 * The raw single-row INSERT rate is measured in the same run, so the ratio to it is visible.
 *
 * Sections: `startup` (`npm start` on a new and on an existing embedded data directory, bench/startup.ts),
 * `store` (event store and projection catch-up; appends beside raw INSERTs in alternated rounds), `http` (the
 * whole service under autocannon at scale: the seeded log, every projector rebuilt from it, the filtered list,
 * and every write route beside the floor of an HTTP create, bench/http.ts and bench/writes.ts), `autopilot` (the
 * lag of the sandbox and the settlement batch behind card payments created at full rate, bench/autopilot.ts),
 * `webhooks` (deliveries/s and append-to-first-attempt latency, bench/webhooks.ts) and `integrity` (replay,
 * sealing and `verify integrity` on a log of a million events, and what the chain hash costs an append; Postgres
 * only, bench/integrity.ts), `clocks` (one advance of a test clock through the expiry of 1,000 objects bound
 * to it, bench/testClocks.ts) and `soak` (mixed load with every job running, and the size of every table outside
 * the history at its start and end: bench/soak.ts).
 * BENCH_ONLY=store (or http, startup, or a comma-separated list) runs those; BENCH_TARGETS=pglite or postgres
 * one target.
 * BENCH_SECONDS (store figures), BENCH_HTTP_SECONDS, BENCH_HTTP_WARMUP_SECONDS, BENCH_HTTP_PAYMENTS (dataset
 * of the list benchmark on Postgres, default 200,000) and BENCH_HTTP_PAYMENTS_PGLITE (default 10,000) tune the
 * run; BENCH_HTTP_DIAGNOSE and BENCH_HTTP_CPU_PROFILE add diagnostics (see bench/http.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { sql, type ColumnType } from 'kysely';
import { openDatabase, type Database } from '../src/db/database.ts';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { quoteLiteral } from '../src/db/inlineSql.ts';
import { quoteIdent } from '../src/db/sql.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { defineProjector, type Projector } from '../src/projection/projector.ts';
import { benchHttp } from './http.ts';
import { benchStartup } from './startup.ts';
import { benchWebhooks } from './webhooks.ts';
import { benchAutopilot } from './autopilot.ts';
import { benchIntegrity } from './integrity.ts';
import { benchTestClocks } from './testClocks.ts';
import { benchSoak } from './soak.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const SECTIONS = new Set((process.env.BENCH_ONLY ?? 'startup,store,http,autopilot,webhooks,integrity,clocks,soak').split(',').map((s) => s.trim()));
const TARGETS = new Set((process.env.BENCH_TARGETS ?? 'pglite,postgres').split(',').map((s) => s.trim()));
const HTTP_PAYMENTS = Number(process.env.BENCH_HTTP_PAYMENTS ?? 200_000);
// PGlite is single-session and its figures are for information: a smaller dataset keeps the run short.
const HTTP_PAYMENTS_PGLITE = Number(process.env.BENCH_HTTP_PAYMENTS_PGLITE ?? 10_000);

interface Row { target: string; what: string; value: string }
const results: Row[] = [];
function report(target: string, what: string, value: string): void {
  results.push({ target, what, value });
  console.log(`${target.padEnd(9)} ${what.padEnd(52)} ${value}`);
}
const rate = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString('en-US')}/s`;

/** Runs `writers` loops calling `work` until the time is up; returns operations done, elapsed ms and latencies. */
async function timed(writers: number, work: (writer: number, i: number) => Promise<void>, seconds = SECONDS): Promise<[number, number, number[]]> {
  const deadline = Date.now() + seconds * 1000;
  let done = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: writers }, async (_, writer) => {
    for (let i = 0; Date.now() < deadline; i++) {
      const at = performance.now();
      await work(writer, i);
      latencies.push(performance.now() - at);
      done++;
    }
  }));
  return [done, performance.now() - started, latencies.sort((a, b) => a - b)];
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const latency = (sorted: number[]) => `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms`;
/** Alternated rounds of the raw INSERT and the append, so that both see the machine as it is. */
const ROUNDS = Number(process.env.BENCH_STORE_ROUNDS ?? 3);

type BenchTables = { bench_balances: { stream: string; deposits: number; total: ColumnType<string, number, number> } };

/** A read model written the way a throughput-minded projector should: one multi-row upsert per batch. */
const benchProjector: Projector = defineProjector<BenchTables, { BenchDeposited: { amount: number } }>({
  name: 'bench_balances',
  version: 1,
  handles: ['BenchDeposited'],
  tables: ['bench_balances'],
  async setup(trx) {
    await sql`CREATE TABLE bench_balances (stream text PRIMARY KEY, deposits integer NOT NULL, total bigint NOT NULL)`.execute(trx);
  },
  async apply(trx, events) {
    const byStream = new Map<string, { deposits: number; total: number }>();
    for (const event of events) {
      const row = byStream.get(event.stream) ?? { deposits: 0, total: 0 };
      row.deposits++;
      row.total += event.data.amount;
      byStream.set(event.stream, row);
    }
    const rows = [...byStream].map(([stream, r]) => ({ stream, deposits: r.deposits, total: r.total }));
    for (let i = 0; i < rows.length; i += 2000) {
      await trx.insertInto('bench_balances').values(rows.slice(i, i + 2000))
        .onConflict((oc) => oc.column('stream').doUpdateSet({
          deposits: sql`bench_balances.deposits + excluded.deposits`,
          total: sql`bench_balances.total + excluded.total`,
        }))
        .execute();
    }
  },
});

async function benchTarget(target: string, database: Database, rawPool: () => pg.Pool | null): Promise<void> {
  const store = new PostgresEventStore(database, { crossProcessWakeups: false });
  const payload = { amount: 1250, currency: 'CLP', reference: 'bench' };

  await database.query('CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, stream text, data jsonb)');
  const pool = rawPool();
  const rawInsert = pool
    ? () => pool.query('INSERT INTO bench_raw (stream, data) VALUES ($1, $2)', [randomUUID(), payload]).then(() => undefined)
    : () => database.query('INSERT INTO bench_raw (stream, data) VALUES ($1, $2)', [randomUUID(), payload]).then(() => undefined);
  const append = async () => {
    await store.append(`bench-${randomUUID()}`, [{ type: 'BenchDeposited', data: payload }], 'no_stream');
  };
  for (const writers of [1, 8]) {
    // Rounds alternate the raw INSERT and the append; each figure sums its rounds.
    const raw = { n: 0, ms: 0, latencies: [] as number[] };
    const appends = { n: 0, ms: 0, latencies: [] as number[] };
    const seconds = SECONDS / ROUNDS;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [into, work] of [[raw, rawInsert], [appends, append]] as const) {
        const [n, ms, latencies] = await timed(writers, work, seconds);
        into.n += n;
        into.ms += ms;
        into.latencies.push(...latencies);
      }
    }
    raw.latencies.sort((a, b) => a - b);
    appends.latencies.sort((a, b) => a - b);
    const rawRate = raw.n / (raw.ms / 1000);
    const appendRate = appends.n / (appends.ms / 1000);
    report(target, `raw single-row INSERT, ${writers} writer(s)`, `${rate(raw.n, raw.ms)}, ${latency(raw.latencies)}`);
    report(target, `append, 1 event per append, new streams, ${writers} writer(s)`, `${rate(appends.n, appends.ms)}, ${latency(appends.latencies)}`);
    const p99x = percentile(appends.latencies, 99) / percentile(raw.latencies, 99);
    report(target, `append ÷ raw INSERT, ${writers} writer(s) (same run, ${ROUNDS} alternated rounds)`,
      `${(appendRate / rawRate).toFixed(2)} of raw's rate, p99 ${p99x.toFixed(1)}× raw's` +
      (writers === 8 ? `  target ≥ 0.9: ${appendRate / rawRate >= 0.9 ? 'met' : 'MISSED'}; goal ≥ 1.0 with p99 ≤ 2×: ${appendRate / rawRate >= 1 && p99x <= 2 ? 'met' : 'MISSED'}` : ''));
  }

  {
    const [n, ms] = await timed(8, async (writer) => {
      await store.append(`bench-hot-${writer % 2}`, [{ type: 'BenchDeposited', data: payload }], 'any');
    });
    report(target, 'append to 2 hot streams (expected any), 8 writers', rate(n, ms));
  }

  {
    const batch = Array.from({ length: 100 }, () => ({ type: 'BenchDeposited', data: payload }));
    const [n, ms] = await timed(4, async () => {
      await store.append(`bench-batch-${randomUUID()}`, batch, 'no_stream');
    });
    report(target, 'append, batches of 100 events, 4 writers (events)', rate(n * 100, ms));
  }

  const total = Number((await database.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
  {
    const started = performance.now();
    let read = 0;
    let after = null;
    for (;;) {
      const page = await store.readAll({ after, limit: 1000 });
      if (page.length === 0) break;
      read += page.length;
      after = page[page.length - 1]!.position;
    }
    report(target, `feed read, pages of 1000 (${read.toLocaleString('en-US')} events)`, rate(read, performance.now() - started));
  }

  {
    const daemon = new ProjectionDaemon(database, store, { batchSize: 5000, idlePollMs: 20 });
    daemon.addProjector(benchProjector);
    const head = (await store.headPosition())!;
    const started = performance.now();
    daemon.start();
    await daemon.waitFor(head, 600_000);
    const ms = performance.now() - started;
    await daemon.stop();
    report(target, `projection catch-up, batches of 5000 (${total.toLocaleString('en-US')} events)`, rate(total, ms));
  }
  await store.close();
}

/**
 * A Postgres run's scratch schema: `bench_` and 8 hex digits, created by the run itself with this comment on it, so
 * that a later run drops only schemas a run of this benchmark made (the projectors' `<schema>__…` go with it).
 */
const SCRATCH_SCHEMA = '^bench_[0-9a-f]{8}$';
const SCRATCH_MARK = 'payments-ledger benchmark scratch schema';
const scratchLockKey = (schema: string): string => `bench:${schema}`;

/**
 * Drops the scratch schemas of runs that were stopped before they could drop their own (killed, or the machine
 * restarted): without this, each such run left a service's tables and every projector's behind for good. A run
 * holds a session advisory lock on its schema from before creating it until it has dropped it, and Postgres
 * releases that lock when the run's connection goes, whatever ended it: a schema whose lock can be taken belongs to
 * no live run. Only schemas with the run's comment and of this role are looked at. A failure is told and skipped: a
 * benchmark reports, it does not fail the run. (A run of a version from before these locks, running beside this
 * one, has no comment on its schema, so it is left alone.)
 */
async function dropAbandonedScratchSchemas(url: string): Promise<void> {
  const dropped: string[] = [];
  try {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace WHERE nspname ~ $1 AND obj_description(oid, 'pg_namespace') = $2
            AND pg_get_userbyid(nspowner) = current_user ORDER BY nspname`, [SCRATCH_SCHEMA, SCRATCH_MARK]);
      for (const { nspname } of rows) {
        const key = scratchLockKey(nspname);
        const { rows: [free] } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [key]);
        if (!free!.locked) continue;
        try {
          await dropSchemaAndProjections(url, nspname);
          dropped.push(nspname);
        } catch (error) {
          console.log(`could not drop ${nspname}, left by a stopped run: ${error instanceof Error ? error.message : String(error)}`);
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
        }
      }
    } finally {
      await client.end();
    }
  } catch (error) {
    console.log(`the scratch schemas of stopped runs were not looked for: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (dropped.length > 0) console.log(`dropped ${dropped.length} scratch schema(s) left by stopped runs: ${dropped.join(', ')}\n`);
}

/**
 * A database in a schema of its own: PGlite in memory, or Postgres (the schema dropped on close, and held by an
 * advisory lock on a connection of its own meanwhile, so that a later run can tell it from an abandoned one). Should
 * Postgres close that connection, the run stops there (no listener for its error), its schema left for a later run,
 * rather than go on with a schema a later run could drop under it.
 */
async function scratchDatabase(target: 'pglite' | 'postgres', url: string | undefined): Promise<Database> {
  if (target === 'pglite') return openDatabase({ kind: 'pglite', dataDir: 'memory://' }, { schema: 'bench' });
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  let database: Database;
  try {
    await holder.query('SELECT pg_advisory_lock(hashtext($1))', [scratchLockKey(schema)]);
    await holder.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await holder.query(`COMMENT ON SCHEMA ${quoteIdent(schema)} IS ${quoteLiteral(SCRATCH_MARK)}`);
    database = await openDatabase({ kind: 'postgres', connectionString: url!, poolSize: 16 }, { schema });
  } catch (error) {
    // What was made of the schema goes; should that fail too, the sweep of a later run drops it (the lock is gone
    // with this connection), and the error told is the first one.
    await dropSchemaAndProjections(url!, schema).catch(() => undefined);
    await holder.end();
    throw error;
  }
  const close = database.close;
  return {
    ...database,
    close: async () => {
      try {
        await close();
      } finally {
        try { await dropSchemaAndProjections(url!, schema); } finally { await holder.end(); }
      }
    },
  };
}

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  const targets = (['pglite', 'postgres'] as const).filter((t) => TARGETS.has(t) && (t === 'pglite' || url));
  console.log(`payments-ledger benchmarks: ${[...SECTIONS].join(', ')} on ${targets.join(', ') || 'no target'}\n`);
  // Before any figure, so that dropping what stopped runs left does not weigh on one.
  if (targets.includes('postgres')) await dropAbandonedScratchSchemas(url!);

  if (SECTIONS.has('startup')) {
    console.log(`start-up of the embedded service: \`npm start\` in a child process until GET /health answers 200`);
    try {
      await benchStartup(report);
    } catch (error) {
      console.log(`embedded  start-up benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
    }
    console.log('');
  }

  if (SECTIONS.has('store')) {
    console.log(`event store and projections (${SECONDS}s per figure)`);
    for (const target of targets) {
      const database = await scratchDatabase(target, url);
      const raw = target === 'postgres'
        ? new pg.Pool({ connectionString: url, max: 8, options: `-c search_path=${database.schema}` }) : null;
      try {
        await benchTarget(target, database, () => raw);
      } finally {
        await raw?.end();
        await database.close();
      }
    }
    console.log('');
  }

  if (SECTIONS.has('http')) {
    const [load1] = loadavg();
    console.log(`HTTP, the whole service in this process, autocannon in another on the same machine ` +
      `(${cpus().length} CPUs, load average ${load1!.toFixed(2)} at the start)`);
    for (const target of targets) {
      const started = performance.now();
      const database = await scratchDatabase(target, url);
      try {
        await benchHttp(target, database, report, target === 'pglite' ? HTTP_PAYMENTS_PGLITE : HTTP_PAYMENTS);
      } catch (error) {
        // A benchmark reports; it does not fail the run.
        console.log(`${target.padEnd(9)} HTTP benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
        report(target, 'HTTP section took', `${((performance.now() - started) / 1000).toFixed(0)} s`);
      }
    }
    console.log('');
  }

  if (SECTIONS.has('webhooks')) {
    console.log('webhooks: the emitter and the dispatcher in this process, a local node:http receiver answering 200');
    for (const target of targets) {
      const database = await scratchDatabase(target, url);
      try {
        await benchWebhooks(target, database, report);
      } catch (error) {
        console.log(`${target.padEnd(9)} webhook benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
      }
    }
    console.log('');
  }

  if (SECTIONS.has('autopilot')) {
    console.log('autopilot: card payments at full rate over HTTP, then until the sandbox and the settlement batch have settled them all');
    for (const target of targets) {
      const database = await scratchDatabase(target, url);
      try {
        await benchAutopilot(target, database, report);
      } catch (error) {
        console.log(`${target.padEnd(9)} autopilot benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
      }
    }
    console.log('');
  }

  if (SECTIONS.has('clocks')) {
    const [load1] = loadavg();
    console.log('test clocks: the whole service in this process; one advance through the expiry of every object bound to a clock ' +
      `(${cpus().length} CPUs, load average ${load1!.toFixed(2)} at the start)`);
    for (const target of targets) {
      const database = await scratchDatabase(target, url);
      try {
        await benchTestClocks(target, database, report);
      } catch (error) {
        console.log(`${target.padEnd(9)} test clocks benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
      }
    }
    console.log('');
  }

  if (SECTIONS.has('integrity')) {
    console.log('integrity: replay, seal and verify a large log, and the chain hash on the append path (Postgres only)');
    if (url && TARGETS.has('postgres')) {
      const started = performance.now();
      const database = await scratchDatabase('postgres', url);
      try {
        await benchIntegrity('postgres', database, report);
      } catch (error) {
        console.log(`postgres  integrity benchmark stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
        report('postgres', 'integrity section took', `${((performance.now() - started) / 1000).toFixed(0)} s`);
      }
    }
    console.log('');
  }

  if (SECTIONS.has('soak')) {
    console.log('soak: mixed load with every job running; the size of each table outside the history (bench/soak.ts)');
    for (const target of targets) {
      const database = await scratchDatabase(target, url);
      try {
        await benchSoak(target, database, report);
      } catch (error) {
        console.log(`${target.padEnd(9)} soak stopped: ${error instanceof Error ? error.stack : String(error)}`);
      } finally {
        await database.close();
      }
    }
    console.log('');
  }

  if (!url) console.log('DATABASE_URL is not set: Postgres figures skipped.');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
}).finally(() => {
  // Whatever a run leaves open (a connection the service did not close) must not keep it from ending.
  process.exit();
});
