/**
 * HTTP benchmarks of the whole service: the real stack in this process — express,
 * authentication, validation, idempotency, the command handlers, the projection daemon with every projector,
 * read-your-writes — over the given database, and autocannon in a child process on the same machine.
 *
 *   POST /payments   16 connections, every request a new externalId and Idempotency-Key
 *   GET  /payments   a filtered first page (default sort, limit 50) over a seeded dataset of payments
 *   POST /payments/received   signed notifications settling INSTANT payments: into one account, and spread over 10
 *   POST /payments/:id/refund  refunds of 0.01 USD: all on one hot parent, and spread over 200 parents
 *
 * The dataset is appended straight to the event store while the service is stopped (one stream per payment,
 * its whole history decided by the payment decider and appended at once, 32 appends in flight); the service
 * then starts again and its projections catch up (timed). Prints figures beside their targets and, with
 * BENCH_HTTP_DIAGNOSE, the server-side breakdown of a request's time (bench/profile.ts); never fails on a slow machine.
 *
 * BENCH_HTTP_DIAGNOSE=1 traces every request (server-side breakdown, one request's SQL, the list queries' plans;
 * the tracing slows the service) and adds POST runs without Idempotency-Key and with 1 connection;
 * BENCH_HTTP_CPU_PROFILE=<dir> writes a V8 CPU profile of the service per measured run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { comparePositions, positionReached, type Position } from '../src/eventstore/position.ts';
import type { EventStore } from '../src/eventstore/port.ts';
import { allProjectors } from '../src/contexts.ts';
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
import { ACCOUNTS, card, paymentTemplate, provisionMerchant, SEED_IN_FLIGHT, seedPayments, type Merchant } from './dataset.ts';

export type Report = (target: string, what: string, value: string) => void;

export const CONNECTIONS = 16;
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


export interface LoadGenerator {
  run(spec: Omit<LoadSpec, 'kind'>): Promise<LoadResult>;
  close(): void;
}

export async function startLoadGenerator(): Promise<LoadGenerator> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./loadgen.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`load generator exited (${code})`)));
  });
  return {
    run(spec) {
      return new Promise((resolve, reject) => {
        // A child that dies mid-run answers nothing: fail the run rather than wait for ever.
        const died = (code: number | null) => reject(new Error(`load generator exited mid-run (${code})`));
        child.once('exit', died);
        child.once('message', (message: { kind: 'result'; result: LoadResult } | { kind: 'error'; message: string }) => {
          child.off('exit', died);
          if (message.kind === 'result') resolve(message.result);
          else reject(new Error(message.message));
        });
        child.send({ kind: 'run', ...spec });
      });
    },
    close() {
      if (child.connected) child.send({ kind: 'exit' });
    },
  };
}

/** Payments notified as received in the settlement runs (warm-up and run together), per run. */
const SETTLEMENTS = Number(process.env.BENCH_HTTP_SETTLEMENTS ?? 12_000);

/** `count` INSTANT push payments of 10.00 USD without fee to `accounts` in turn, created and waiting for their funds. */
async function seedReceivable(
  store: EventStore, services: Services, merchant: Merchant, template: PaymentCreatedData,
  accounts: ReadonlyArray<{ id: string; accountNumber: string }>, count: number,
): Promise<{ ids: string[]; last: Position }> {
  const metadata = { clientId: merchant.clientId, actor: `client:${merchant.clientId}` };
  const ids: string[] = [];
  let last: Position | null = null;
  let next = 0;
  await Promise.all(Array.from({ length: SEED_IN_FLIGHT }, async () => {
    for (let i = next++; i < count; i = next++) {
      const externalId = `receivable-${randomUUID()}`;
      const paymentId = paymentIdFor(merchant.clientId, externalId);
      const account = accounts[i % accounts.length]!;
      const created = paymentDecider.decide({ type: 'CreatePayment', tenant: { clientId: merchant.clientId }, now: services.runtime.now(), screening: { outcome: 'CLEAR' }, payment: {
        ...template, paymentId, externalId, accountId: account.id, accountNumber: account.accountNumber, totalAmount: '10.00',
        origins: [], fees: [], feeAmount: '0.00', flow: 'PUSH', method: null, settlement: 'INSTANT',
      } }, paymentDecider.initialState);
      const { position } = await store.append(paymentStream(paymentId), created.map((e) => ({ type: e.type, data: e.data, metadata })), 'no_stream');
      if (!last || comparePositions(position, last) > 0) last = position;
      ids.push(paymentId);
    }
  }));
  return { ids, last: last! };
}

/** Parents of the refund runs across many parents. */
const REFUND_PARENTS = 200;

/**
 * `count` SETTLED payments of 999.00 USD (below the review threshold) without fee, through the API (created, then the provider's
 * notification settles them INSTANT), to the merchant's accounts in turn: room for every refund of 0.01 a run sends.
 */
async function settledParents(baseUrl: string, merchant: Merchant, count: number, providerSecret: string): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let i = next++; i < count; i = next++) {
      const payment = await call(baseUrl, 'POST', '/payments', merchant.headers, {
        externalId: `refundable-${randomUUID()}`, identityId: merchant.identityId, type: 'PURCHASE',
        accountNumber: merchant.accounts[i % merchant.accounts.length]!.accountNumber, totalAmount: '999.00', currency: 'USD',
      });
      await call(baseUrl, 'POST', '/payments/received', { 'user-agent': 'provider' },
        { transactionId: payment.id, signature: providerSignature(providerSecret, payment.id) });
      ids.push(payment.id as string);
    }
  }));
  return ids;
}

// -------------------------------------------------------------------------------------------- runs

export function reportLoad(target: string, what: string, result: LoadResult, report: Report, targets: { rate?: string; latency: string }): void {
  report(target, `${what}: requests/s`,
    `${fmt(result.requestsPerSecond)}/s (${fmt(result.completed)} in ${fmt(result.seconds, 1)} s)${targets.rate ? `  ${targets.rate}` : ''}`);
  report(target, `${what}: latency p50 / p99`,
    `${ms(result.latency.p50)} / ${ms(result.latency.p99)} (mean ${ms(result.latency.mean)}, max ${ms(result.latency.max)})  ${targets.latency}`);
  const codes = Object.entries(result.statusCodes).map(([code, n]) => `${code}×${fmt(n)}`).join(' ');
  report(target, `${what}: non-2xx / errors / timeouts`,
    `${fmt(result.non2xx)} / ${fmt(result.errors)} / ${fmt(result.timeouts)}  (${codes || 'no answers'}; must be 0 / 0 / 0)`);
  if (result.firstError) {
    report(target, `${what}: first non-2xx answer`, `${result.firstError.status} ${result.firstError.body.replace(/\s+/g, ' ').slice(0, 400)}`);
  }
}

export function reportProfile(target: string, what: string, profile: Profile, load: LoadResult, report: Report): void {
  if (DIAGNOSE) reportTraces(target, what, profile, report);
  else report(target, `${what}: projection runners meanwhile`, `${fmt(profile.runnerBatchesPerSecond)} batches/s`);
  const pgCpu = profile.postgresCpu === null || target !== 'postgres' ? '' : `, postgres ${fmt(profile.postgresCpu * 100)}%`;
  report(target, `${what}: CPU (100% = one core)`,
    `service ${fmt(profile.serviceCpu * 100)}% (event loop busy ${fmt(profile.eventLoopUtilization * 100)}%), load generator ${fmt(load.cpuMs / 10 / load.seconds)}%${pgCpu}`);
  const m = profile.machine;
  if (m) {
    report(target, `${what}: whole machine (all CPUs)`,
      `busy ${fmt(m.busy * 100)}%, idle ${fmt(m.idle * 100)}%, iowait ${fmt(m.iowait * 100)}%, steal ${fmt(m.steal * 100)}%`);
  }
}

function reportTraces(target: string, what: string, profile: Profile, report: Report): void {
  report(target, `${what}: server time per request, mean (p50/p99)`,
    `${ms(profile.serverMs.mean)} (${ms(profile.serverMs.p50)} / ${ms(profile.serverMs.p99)}) over ${fmt(profile.requests)} requests`);
  report(target, `${what}:   SQL statements: count, summed wall time`,
    `${fmt(profile.queries, 1)}, ${ms(profile.queryMs)} (round trips incl. event-loop lag; parallel ones overlap)`);
  report(target, `${what}:   waiting for a pooled connection`, ms(profile.poolWaitMs));
  if (profile.rywMs.mean > 0) {
    report(target, `${what}:   read-your-writes wait per write, mean (p50/p99)`, `${ms(profile.rywMs.mean)} (${ms(profile.rywMs.p50)} / ${ms(profile.rywMs.p99)})`);
  }
  report(target, `${what}: event-loop lag mean / p99`, `${ms(profile.eventLoopDelayMs.mean)} / ${ms(profile.eventLoopDelayMs.p99)}`);
  report(target, `${what}: projection runners meanwhile`,
    `${fmt(profile.runnerBatchesPerSecond)} batches/s, ${fmt(profile.backgroundQueriesPerSecond)} statements/s ` +
    `(${fmt(profile.backgroundQueryMsPerSecond / 1000, 2)} connections busy, ${ms(profile.backgroundPoolWaitMs)} mean wait for one)`);
}

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

    // 2. The dataset, appended with no projection running (as a backlog a new deployment would find).
    const seeded = await seedPayments(new PostgresEventStore(database, { crossProcessWakeups: false }), services, merchant, template, payments);
    report(target, `seed: ${fmt(payments)} payments (${fmt(seeded.events)} events) appended, ${SEED_IN_FLIGHT} in flight`,
      `${fmt(seeded.ms / 1000, 1)} s: ${fmt(payments / (seeded.ms / 1000))} appends/s, ${fmt(seeded.events / (seeded.ms / 1000))} events/s`);

    // 3. The service again: its projections catch up from where they stopped.
    const restarted = performance.now();
    const runnerDone = new Map<string, number>();
    const live = await startService(database, { profiler, diagnose: DIAGNOSE, beforeStart: (projections) => {
      for (const runner of projections.projectionRunners) {
        runner.on('advanced', () => {
          if (!runnerDone.has(runner.name) && positionReached(runner.checkpoint, seeded.last)) runnerDone.set(runner.name, performance.now() - restarted);
        });
      }
    } });
    service = live;
    const caughtUp = await live.projections.waitFor(seeded.last, 900_000);
    const catchUpMs = performance.now() - restarted;
    const rows = Number((await database.query<{ n: string }>(
      'SELECT count(*) AS n FROM payments WHERE client_id = $1', [merchant.clientId])).rows[0]!.n);
    report(target, `seed: projections catch up (${allProjectors().length} projectors, batches of ${services.config.projectionBatchSize})`,
      `${caughtUp ? '' : 'NOT CAUGHT UP: '}${fmt(catchUpMs / 1000, 1)} s: ${fmt(seeded.events / (catchUpMs / 1000))} events/s` +
      (rows === payments + 1 ? '' : `; payments read model has ${fmt(rows)} rows, expected ${fmt(payments + 1)}`));
    report(target, 'seed: each projector caught up after',
      [...runnerDone].sort((a, b) => b[1] - a[1]).map(([name, at]) => `${name} ${fmt(at / 1000, 1)} s`).join(', '));
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
      const spec = { baseUrl: live.baseUrl, connections: CONNECTIONS, method: 'GET' as const, paths: [path], headers: merchant.headers };
      const { result, profile } = await measure(loadgen, profiler, spec, `get-${label}`, target, what, report);
      reportLoad(target, what, result, report, { latency: `target p99 ≤ 25 ms: ${verdict(result.latency.p99 <= 25)}` });
      reportProfile(target, what, profile, result, report);
      if (DIAGNOSE) await reportPlans(target, what, database, profile.sampleStatements, report);
      // The same page for one client at a time: the latency of the query path itself, without 16-deep queueing
      // on a service that is CPU-bound at 16 connections.
      const single = await loadgen.run({ ...spec, connections: 1, seconds: SECONDS });
      reportLoad(target, `${what}, 1 connection`, single, report, { latency: `target p99 ≤ 25 ms: ${verdict(single.latency.p99 <= 25)}` });
    }

    const body = {
      identityId: merchant.identityId, type: 'PURCHASE', accountNumber: merchant.accounts[0]!.accountNumber,
      totalAmount: '100.00', currency: 'USD', origins: [{ type: 'CARD', card }],
    };
    const create = async (what: string, idempotencyKeys = true, connections = CONNECTIONS) => {
      const spec = {
        baseUrl: live.baseUrl, connections, method: 'POST' as const, paths: ['/payments'],
        headers: merchant.headers, body, idempotencyKeys,
      };
      const { result, profile } = await measure(loadgen, profiler, spec, what, target, what, report);
      const rate = result.requestsPerSecond;
      const p99 = result.latency.p99;
      reportLoad(target, what, result, report, {
        rate: `target ≥ 1,000/s: ${verdict(rate >= 1000)}; goal ≥ 2,500/s: ${verdict(rate >= 2500)}`,
        latency: `target p99 ≤ 50 ms: ${verdict(p99 <= 50)}; goal ≤ 30 ms: ${verdict(p99 <= 30)}`,
      });
      reportProfile(target, what, profile, result, report);
      if (DIAGNOSE) {
        profile.sampleStatements.forEach((statement, i) =>
          report(target, `${what}: statement ${i + 1}`, statement.text.replace(/\s+/g, ' ').slice(0, 110)));
      }
    };
    await create(`POST /payments, ${CONNECTIONS} connections`);

    // Settlement: signed provider notifications of INSTANT payments, each received once: the payment, then its
    // account's answer, then the payment's settlement (two streams, three appends). All to one account (the hot
    // merchant account, whose commands queue) and spread over the merchant's accounts.
    for (const [label, accounts] of [['one account', merchant.accounts.slice(0, 1)], [`${ACCOUNTS} accounts`, merchant.accounts]] as const) {
      const what = `POST /payments/received (settles), ${label}, ${CONNECTIONS} connections`;
      const pending = await seedReceivable(live.services.storage.store, live.services, merchant, template, accounts, SETTLEMENTS);
      await live.projections.waitFor(pending.last, 120_000);
      const spec = {
        baseUrl: live.baseUrl, connections: CONNECTIONS, method: 'POST' as const, paths: ['/payments/received'], headers: { 'user-agent': 'provider' },
        bodies: pending.ids.map((transactionId) => ({ transactionId, signature: providerSignature(live.services.config.providerSecret, transactionId) })),
        bodiesKey: `settle-${label}`,
      };
      const { result, profile } = await measure(loadgen, profiler, spec, `settle-${label}`, target, what, report);
      reportLoad(target, what, result, report, { latency: 'no target' });
      reportProfile(target, what, profile, result, report);
      if (result.completed > pending.ids.length) report(target, `${what}: note`, `ran out of receivable payments after ${fmt(pending.ids.length)}`);
    }
    // Refunds: each request reserves on its parent's stream, holds on the account's, records the answer on the
    // parent and creates the child (four appends over three streams). On one hot parent (its commands queue, and
    // its account's), and across many parents spread over the merchant's accounts.
    for (const [label, parents] of [['one parent', 1], [`${REFUND_PARENTS} parents`, REFUND_PARENTS]] as const) {
      const what = `POST /payments/:id/refund, ${label}, ${CONNECTIONS} connections`;
      const ids = await settledParents(live.baseUrl, merchant, parents, live.services.config.providerSecret);
      const spec = {
        baseUrl: live.baseUrl, connections: CONNECTIONS, method: 'POST' as const, paths: ids.map((id) => `/payments/${id}/refund`),
        headers: merchant.headers, bodies: [{ amount: '0.01' }], bodiesKey: `refund-${label}`,
      };
      const { result, profile } = await measure(loadgen, profiler, spec, `refund-${label}`, target, what, report);
      reportLoad(target, what, result, report, { latency: 'no target' });
      reportProfile(target, what, profile, result, report);
    }
    if (DIAGNOSE) {
      // Variants that show what a part costs: the idempotency bookkeeping, and queueing under 16 connections.
      await create('diagnose: POST, no Idempotency-Key', false);
      await create('diagnose: POST, 1 connection', true, 1);
    }
  } finally {
    loadgen.close();
    await service?.close();
  }
}
