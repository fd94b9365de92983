/**
 * Deposits over HTTP (`BENCH_ONLY=deposits`): the whole service in this process, as bench/http.ts starts it, and
 * autocannon in its child process, 16 connections.
 *
 *   POST /payments/deposits   signed provider notifications, each a new deposit: matched (the reference is one of
 *                             the merchant's 10 accounts: the payment is created, received and settled through the
 *                             account's stream) and unmatched (recorded unassigned, its funds in suspense)
 *   POST /payments/:id/assign the unmatched deposits assigned to the merchant's accounts in turn (each once)
 *
 * The assignments' deposits are those of the unmatched run and as many more sent after it (not measured).
 * Originators repeat (100 of them), so most notifications find their customer and a few create it. Prints figures
 * and never fails. BENCH_DEPOSITS_NOTIFICATIONS (default 20,000) bounds the notifications prepared per run (warm-up
 * and measured run together); a run that sends them all says so. BENCH_HTTP_SECONDS and BENCH_HTTP_WARMUP_SECONDS
 * set the time per figure, as for the HTTP section.
 */
import type { Database } from '../src/db/database.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { CONNECTIONS, measure, reportLoad, reportProfile, startLoadGenerator, type LoadGenerator, type Report } from './http.ts';
import { provisionMerchant, type Merchant } from './dataset.ts';
import { startService, type BenchService } from './service.ts';
import { Profiler } from './profile.ts';

const NOTIFICATIONS = Number(process.env.BENCH_DEPOSITS_NOTIFICATIONS ?? 20_000);
/** Distinct originators of the notifications: each is a customer of the merchant after its first deposit. */
const ORIGINATORS = 100;

/** `count` signed notifications of 10.00 USD, to `reference(i)`, each with a new provider deposit id. */
function notifications(secret: string, merchant: Merchant, label: string, count: number, reference: (i: number) => string) {
  return Array.from({ length: count }, (_, i) => {
    const body = {
      clientId: merchant.clientId, depositId: `${label}-${i}`, reference: reference(i), amount: '10.00', currency: 'USD' as const,
      originator: { firstName: 'Ana', lastName: `Bench${i % ORIGINATORS}`, documentType: 'DNI' as const, documentNumber: `bench-${i % ORIGINATORS}` },
    };
    return { ...body, signature: depositSignature(secret, body) };
  });
}

/** A run's warm-up and measured time together (bench/http.ts's settings). */
const RUN_SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 10) + Number(process.env.BENCH_HTTP_WARMUP_SECONDS ?? 3);

/** Runs and reports one notifications figure; answers its load, to send more of the same. */
async function notify(
  loadgen: LoadGenerator, profiler: Profiler, service: BenchService, merchant: Merchant, label: 'matched' | 'unmatched',
  target: string, report: Report,
): Promise<Parameters<LoadGenerator['run']>[0]> {
  const what = `POST /payments/deposits, ${label}, ${CONNECTIONS} connections`;
  const bodies = notifications(service.services.config.providerSecret, merchant, `${label}-${Date.now()}`, NOTIFICATIONS,
    (i) => (label === 'matched' ? merchant.accounts[i % merchant.accounts.length]!.accountNumber : `unknown-${i}`));
  const spec = {
    baseUrl: service.baseUrl, connections: CONNECTIONS, method: 'POST' as const, paths: ['/payments/deposits'],
    headers: { 'user-agent': 'provider' }, bodies, bodiesKey: `deposits-${label}`,
  };
  const { result, profile } = await measure(loadgen, profiler, spec, `deposits-${label}`, target, what, report);
  reportLoad(target, what, result, report, { latency: 'no target' });
  reportProfile(target, what, profile, result, report);
  // Past the last body the same notifications repeat: answered as repeats (200), not new deposits.
  if (result.completed >= NOTIFICATIONS) report(target, `${what}: note`, `sent all ${NOTIFICATIONS} notifications; raise BENCH_DEPOSITS_NOTIFICATIONS`);
  return { ...spec, seconds: RUN_SECONDS };
}

async function assign(
  loadgen: LoadGenerator, profiler: Profiler, service: BenchService, database: Database, merchant: Merchant, target: string, report: Report,
): Promise<void> {
  const what = `POST /payments/:id/assign, ${merchant.accounts.length} accounts, ${CONNECTIONS} connections`;
  const waiting = (await database.query<{ payment_id: string }>(
    `SELECT payment_id FROM deposits WHERE client_id = $1 AND status = 'CREATED' ORDER BY created_at, payment_id`, [merchant.clientId])).rows;
  if (waiting.length === 0) {
    report(target, what, 'skipped: no deposit awaits assignment');
    return;
  }
  const spec = {
    baseUrl: service.baseUrl, connections: CONNECTIONS, method: 'POST' as const, paths: ['/payments/assign'], headers: merchant.headers,
    bodies: waiting.map((_, i) => ({ accountId: merchant.accounts[i % merchant.accounts.length]!.id })),
    bodyPaths: waiting.map((row) => `/payments/${row.payment_id}/assign`), bodiesKey: 'deposits-assign',
  };
  const { result, profile } = await measure(loadgen, profiler, spec, 'deposits-assign', target, what, report);
  reportLoad(target, what, result, report, { latency: 'no target' });
  reportProfile(target, what, profile, result, report);
  // Past the last deposit the assignments repeat: refused (422), which is not what this figure measures.
  if (result.completed >= waiting.length) report(target, `${what}: note`, `ran out of deposits to assign after ${waiting.length}`);
}

export async function benchDeposits(target: string, database: Database, report: Report): Promise<void> {
  const profiler = new Profiler();
  const loadgen = await startLoadGenerator();
  let service: BenchService | null = null;
  try {
    service = await startService(database, { profiler });
    const merchant = await provisionMerchant(service.baseUrl);
    await notify(loadgen, profiler, service, merchant, 'matched', target, report);
    const unmatched = await notify(loadgen, profiler, service, merchant, 'unmatched', target, report);
    // As many deposits again, not measured: an assignment costs about what a notification does, so the
    // assignments' run has about twice the deposits it can assign.
    await loadgen.run(unmatched);
    await assign(loadgen, profiler, service, database, merchant, target, report);
  } finally {
    loadgen.close();
    await service?.close();
  }
}
