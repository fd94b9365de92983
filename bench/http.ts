/**
 * HTTP benchmarks of the whole service, at scale: the real stack in this process — express, authentication,
 * validation, idempotency, the command handlers, the projection daemon with every projector and reactor,
 * read-your-writes — over the given database, and autocannon in a child process on the same machine.
 *
 *   seed      BENCH_HTTP_PAYMENTS payments (default 200,000) whose whole histories the payment decider decides,
 *             then customers' histories until the log holds BENCH_HTTP_EVENTS events (default 1,000,000), appended
 *             straight to the event store while the service is stopped, SEED_IN_FLIGHT appends at a time (the
 *             store's group commit writes them in large batches)
 *   rebuild   the service starts again and every projector catches up with that log, as a rebuild from zero:
 *             events/s
 *   GET /payments  a filtered first page (default sort, limit 50), one connection: p50 and p99
 *   writes    every write route beside the floor of an HTTP create (bench/writes.ts)
 *
 * BENCH_HTTP_PAYMENTS=0 skips the dataset (the writes then run on an almost empty log). Prints figures beside
 * their targets and never fails on a slow machine.
 *
 * BENCH_HTTP_DIAGNOSE=1 traces every request (server-side breakdown, one request's SQL, the list queries' plans;
 * the tracing slows the service) and adds the list at 16 connections;
 * BENCH_HTTP_CPU_PROFILE=<dir> writes a V8 CPU profile of the service per measured run.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { comparePositions, positionReached, type Position } from '../src/eventstore/position.ts';
import type { EventStore } from '../src/eventstore/port.ts';
import { allProjectors, storedEvents } from '../src/contexts.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { paymentsProjector } from '../projections/payments.ts';
import { projectorSchemaName } from '../src/projection/projectorSchema.ts';
import { quoteIdent } from '../src/db/sql.ts';
import type { Services } from '../src/http/services.ts';
import { paymentDecider } from '../src/payments/decider.ts';
import { paymentIdFor, paymentStream, type PaymentCreatedData } from '../src/payments/events.ts';
import { providerSignature } from '../src/payments/routes.ts';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import { Profiler, type Profile, type Statement } from './profile.ts';
import { call, startService, type BenchService } from './service.ts';
import { paymentTemplate, provisionMerchant, SEED_IN_FLIGHT, seedCustomers, seedPayments } from './dataset.ts';
import { benchWrites } from './writes.ts';
import { CONNECTIONS, reportLoad, reportProfile, startLoadGenerator, type LoadGenerator, type Report } from './loadReport.ts';

/**
 * Diagnose mode traces every request (where its time goes, its SQL, the plans of the list queries) in an
 * AsyncLocalStorage context, whose promise hooks cost the service a third of its throughput on a list, and adds
 * variant runs: only with BENCH_HTTP_DIAGNOSE, so the headline figures are those of the service as it runs in
 * production.
 */
const DIAGNOSE = !!process.env.BENCH_HTTP_DIAGNOSE;
const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_HTTP_WARMUP_SECONDS ?? 3);

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number) => `${fmt(n, n < 10 ? 2 : 1)} ms`;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');


/** EXPLAIN ANALYZE of the SELECTs one request of the run made, as the database executes them alone. */
async function reportPlans(target: string, what: string, database: Database, statements: Statement[], report: Report): Promise<void> {
  for (const statement of statements) {
    if (!/^\s*select/i.test(statement.text) || !/from "?payments"?/i.test(statement.text)) continue;
    const { rows } = await database.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number; 'Planning Time': number }> }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`, statement.values);
    const plan = rows[0]!['QUERY PLAN'][0]!;
    const kind = /count\(/i.test(statement.text) ? 'count' : 'page';
    report(target, `${what}: ${kind} query in the database`,
      `${ms(plan['Execution Time'])} (planning ${ms(plan['Planning Time'])}): ${describePlan(plan.Plan)}`);
  }
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Sort Method'?: string;
  'Heap Fetches'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function describePlan(node: PlanNode): string {
  const parts: string[] = [];
  for (let current: PlanNode | undefined = node; current; current = current.Plans?.[0]) {
    let part = current['Node Type'];
    if (current['Index Name']) part += ` ${current['Index Name']}`;
    if (current['Sort Method']) part += ` (${current['Sort Method']})`;
    if (current['Heap Fetches'] !== undefined) part += ` (heap fetches ${fmt(current['Heap Fetches'])})`;
    parts.push(`${part} ${fmt(current['Actual Rows'])} rows`);
  }
  return `${parts.join(' ← ')}; buffers hit ${fmt(node['Shared Hit Blocks'] ?? 0)}, read ${fmt(node['Shared Read Blocks'] ?? 0)}`;
}

/**
 * One measured run: a warm-up, then the run itself with the service profiled (and its CPU profile written when
 * asked for); answers the load figures and what the service did meanwhile.
 */
export async function measure(
  loadgen: LoadGenerator, profiler: Profiler, spec: Omit<LoadSpec, 'kind' | 'seconds'>, name: string,
  target: string, what: string, report: Report,
): Promise<{ result: LoadResult; profile: Profile }> {
  await loadgen.run({ ...spec, seconds: WARMUP_SECONDS });
  await profiler.startCpuProfile();
  profiler.start();
  const result = await loadgen.run({ ...spec, seconds: SECONDS });
  const profile = profiler.stop();
  const cpuProfile = await profiler.saveCpuProfile(`${target}-${name}`);
  if (cpuProfile) report(target, `${what}: CPU profile`, cpuProfile);
  return { result, profile };
}

/** Events in the seeded log, payments' and the rest (customers' histories): the scale the figures hold at. */
const EVENTS = Number(process.env.BENCH_HTTP_EVENTS ?? 1_000_000);
const EVENTS_PGLITE = Number(process.env.BENCH_HTTP_EVENTS_PGLITE ?? 50_000);
/** Changes of each seeded customer after its creation. */
const CUSTOMER_UPDATES = 4;

export async function benchHttp(target: string, database: Database, report: Report, payments: number): Promise<void> {
  const profiler = new Profiler();
  if (DIAGNOSE) profiler.instrumentPool(database.pool);
  const loadgen = await startLoadGenerator();
  let service: BenchService | null = null;
  try {
    // 1. The merchant (client, identity, accounts) and a template payment, through the API.
    service = await startService(database, { profiler, diagnose: DIAGNOSE });
    const merchant = await provisionMerchant(service.baseUrl);
    const template = await paymentTemplate(service, merchant);
    const { services } = service;
    await service.close();
    service = null;

    // 2. The dataset, appended with no projection running (as a backlog a new deployment would find): the payments'
    // histories, then customers' until the log holds the events asked for.
    let seededEvents = 0;
    let last: Position | null = null;
    if (payments > 0) {
      const store = new PostgresEventStore(database, { crossProcessWakeups: false });
      const seeded = await seedPayments(store, services, merchant, template, payments);
      report(target, `seed: ${fmt(payments)} payments (${fmt(seeded.events)} events) appended, ${SEED_IN_FLIGHT} in flight`,
        `${fmt(seeded.ms / 1000, 1)} s: ${fmt(payments / (seeded.ms / 1000))} appends/s, ${fmt(seeded.events / (seeded.ms / 1000))} events/s`);
      seededEvents = seeded.events;
      last = seeded.last;
      const wanted = target === 'pglite' ? EVENTS_PGLITE : EVENTS;
      const customers = Math.max(0, Math.ceil((wanted - seeded.events) / (1 + CUSTOMER_UPDATES)));
      if (customers > 0) {
        const filler = await seedCustomers(store, merchant, customers, CUSTOMER_UPDATES);
        report(target, `seed: ${fmt(customers)} customers (${fmt(filler.events)} events) appended, ${SEED_IN_FLIGHT} in flight`,
          `${fmt(filler.ms / 1000, 1)} s: ${fmt(filler.events / (filler.ms / 1000))} events/s`);
        seededEvents += filler.events;
        if (filler.last && comparePositions(filler.last, last) > 0) last = filler.last;
      }
      await store.close();
    }

    // 3. Every projector catches up with the seeded log, as a rebuild from zero would: a projection daemon with
    // every projector (the service's machinery, without HTTP and reactors). The reactors start past the seeded
    // history afterwards, as they would have reacted to it live (a rebuild does not run them).
    if (last) {
      await database.query(`UPDATE projection_state SET checkpoint_commit = $1, checkpoint_prepare = $2 WHERE kind = 'reactor'`,
        [last.commit.toString(), last.prepare.toString()]);
      const store = new PostgresEventStore(database, { upcasters: storedEvents.upcasters, crossProcessWakeups: false });
      const daemon = new ProjectionDaemon(database, store, { batchSize: services.config.projectionBatchSize });
      for (const projector of allProjectors()) daemon.addProjector(projector);
      const seededLast = last;
      const runnerDone = new Map<string, number>();
      const restarted = performance.now();
      for (const runner of daemon.projectionRunners) {
        runner.on('advanced', () => {
          if (!runnerDone.has(runner.name) && positionReached(runner.checkpoint, seededLast)) runnerDone.set(runner.name, performance.now() - restarted);
        });
      }
      daemon.start();
      const caughtUp = await daemon.waitFor(seededLast, 1_800_000);
      const catchUpMs = performance.now() - restarted;
      await daemon.stop();
      await store.close();
      const rows = Number((await database.query<{ n: string }>(
        'SELECT count(*) AS n FROM payments WHERE client_id = $1', [merchant.clientId])).rows[0]!.n);
      const rate = seededEvents / (catchUpMs / 1000);
      report(target, `rebuild: every projector from the seeded log (${allProjectors().length} projectors, ${fmt(seededEvents)} events)`,
        `${caughtUp ? '' : 'NOT CAUGHT UP: '}${fmt(catchUpMs / 1000, 1)} s: ${fmt(rate)} events/s  target ≥ 20,000/s: ${verdict(rate >= 20_000)}` +
        (rows === payments + 1 ? '' : `; payments read model has ${fmt(rows)} rows, expected ${fmt(payments + 1)}`));
      report(target, 'rebuild: each projector caught up after',
        [...runnerDone].sort((a, b) => b[1] - a[1]).map(([name, at]) => `${name} ${fmt(at / 1000, 1)} s`).join(', '));
    }
    const live = await startService(database, { profiler, diagnose: DIAGNOSE });
    service = live;
    if (last) {
      // What autovacuum does soon after a bulk load (its insert threshold is 20% of the table): marks the pages
      // all-visible, so counting a filter's matches is an index-only scan rather than a heap visit per row.
      const vacuumed = performance.now();
      await database.query(`VACUUM ANALYZE ${quoteIdent(projectorSchemaName(database.schema, paymentsProjector))}.payments`);
      report(target, 'seed: VACUUM ANALYZE of the payments table', ms(performance.now() - vacuumed));

      for (const [label, path] of [
        ['status=SETTLED', '/payments?status=SETTLED&limit=50'],
        ['accountNumber=…', `/payments?accountNumber=${merchant.accounts[3]!.accountNumber}&limit=50`],
      ] as const) {
        const page = await call(live.baseUrl, 'GET', path, merchant.headers);
        const what = `GET /payments?${label} (${fmt(page.pagination.total)} of ${fmt(payments)} match)`;
        const spec = { baseUrl: live.baseUrl, connections: 1, method: 'GET' as const, paths: [path], headers: merchant.headers };
        // One client at a time: the latency of the query path itself, without queueing on a service that is
        // CPU-bound at 16 connections.
        const { result: single } = await measure(loadgen, profiler, spec, `get-${label}`, target, what, report);
        reportLoad(target, `${what}, 1 connection`, single, report, { latency: `target p99 ≤ 25 ms: ${verdict(single.latency.p99 <= 25)}` });
        if (DIAGNOSE) {
          const { result, profile } = await measure(loadgen, profiler, { ...spec, connections: CONNECTIONS }, `get16-${label}`, target, what, report);
          reportLoad(target, `${what}, ${CONNECTIONS} connections`, result, report, { latency: '' });
          reportProfile(target, what, profile, result, report);
          await reportPlans(target, what, database, profile.sampleStatements, report);
        }
      }
    }

    // 4. The write routes, on the same log, beside the floor measured now.
    await benchWrites(target, database, report, loadgen, profiler, live, merchant, template);
  } finally {
    loadgen.close();
    await service?.close();
  }
}
