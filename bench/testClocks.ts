/**
 * Test clocks (`BENCH_ONLY=clocks`): the whole service in this process, as bench/http.ts starts it. A clock holds
 * BENCH_CLOCK_OBJECTS objects (default 1,000: 40 % checkout sessions, 40 % payments with an expiresAt, 20 %
 * simulated deposits, all created with its Test-Clock header, 16 requests at a time); one advance of 49 hours
 * takes every one of them through its expiry (the deposits with their refund child). The figure is the time from
 * the advance's request until the clock is `ready` again, every effect recorded (target: under 5 s for 1,000
 * objects), with the statements the process sent meanwhile (its pool instrumented as bench/profile.ts does, the
 * polling of the clock's status included) and its CPU. Prints figures and never fails.
 */
import type { Database } from '../src/db/database.ts';
import type { Report } from './loadReport.ts';
import { provisionMerchant, type Merchant } from './dataset.ts';
import { call, startService } from './service.ts';
import { Profiler } from './profile.ts';

const OBJECTS = Number(process.env.BENCH_CLOCK_OBJECTS ?? 1_000);
/** Creating requests in flight at once while the clock is filled. */
const CREATORS = 16;
const HOUR_MS = 60 * 60 * 1000;
/** How long the benchmark waits for the clock to be ready before it reports that it was not. */
const READY_TIMEOUT_MS = 600_000;

/** Attempts of one creating request whose connection was reset (sent again under its Idempotency-Key). */
const MAX_ATTEMPTS = 3;

/**
 * One creating request, under an Idempotency-Key: on a loaded machine a keep-alive connection is now and then reset
 * as the request goes out, and the same request again is answered once.
 */
async function create(baseUrl: string, path: string, headers: Record<string, string>, key: string, body: unknown): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(baseUrl, 'POST', path, { ...headers, 'idempotency-key': key }, body);
    } catch (error) {
      if (!(error instanceof TypeError) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/** Runs `work(i)` for i < count, `CREATORS` at a time. */
async function pooled(count: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CREATORS }, async () => {
    for (let i = next++; i < count; i = next++) await work(i);
  }));
}

function creations(merchant: Merchant, baseUrl: string, clockId: string, frozenTime: string) {
  const headers = { ...merchant.headers, 'Test-Clock': clockId };
  const account = merchant.accounts[0]!;
  const session = (i: number) => create(baseUrl, '/checkout-sessions', headers, `${clockId}-${i}`, {
    items: [{ description: 'Book', preTaxAmount: '20.00' }], currency: 'USD', paymentMethodsAllowed: ['CARD'], duration: 1800,
    owner: { identityId: merchant.identityId },
    destinations: [{ type: 'ACCOUNT', amount: '20.00', account: { type: 'CHECKING', currency: 'USD', accountNumber: account.accountNumber, accountHolder: 'Shop' } }],
  });
  const payment = (i: number) => create(baseUrl, '/payments', headers, `${clockId}-${i}`, {
    externalId: `clock-${clockId}-${i}`, identityId: merchant.identityId, accountNumber: account.accountNumber, totalAmount: '10.00',
    currency: 'USD', type: 'PURCHASE', expiresAt: new Date(Date.parse(frozenTime) + HOUR_MS).toISOString(),
  });
  const deposit = (i: number) => create(baseUrl, '/sandbox/deposits', headers, `${clockId}-${i}`, {
    reference: `unknown-${i}`, amount: '10.00', currency: 'USD',
    originator: { firstName: 'Ana', lastName: `Bench${i % 100}`, documentType: 'DNI', documentNumber: `bench-${i % 100}` },
  });
  return (i: number) => (i % 5 < 2 ? session(i) : i % 5 < 4 ? payment(i) : deposit(i));
}

export async function benchTestClocks(target: string, database: Database, report: Report): Promise<void> {
  const profiler = new Profiler();
  profiler.instrumentPool(database.pool);
  const service = await startService(database);
  try {
    const merchant = await provisionMerchant(service.baseUrl);
    const clock = await call(service.baseUrl, 'POST', '/test-clocks', merchant.headers, { name: 'bench' });
    const filling = performance.now();
    await pooled(OBJECTS, creations(merchant, service.baseUrl, clock.id, clock.frozenTime));
    report(target, `test clock filled with ${OBJECTS.toLocaleString('en-US')} objects, ${CREATORS} at a time`,
      `${((performance.now() - filling) / 1000).toFixed(1)} s`);

    profiler.start();
    const started = performance.now();
    await call(service.baseUrl, 'POST', `/test-clocks/${clock.id}/advance`, merchant.headers,
      { frozenTime: new Date(Date.parse(clock.frozenTime) + 49 * HOUR_MS).toISOString() });
    let ready = false;
    while (!ready && performance.now() - started < READY_TIMEOUT_MS) {
      ready = (await call(service.baseUrl, 'GET', `/test-clocks/${clock.id}`, merchant.headers)).status === 'ready';
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const profile = profiler.stop();
    const counts = (await database.query<{ table: string; n: string }>(`
      SELECT 'sessions' AS table, count(*)::text AS n FROM checkout_sessions WHERE test_clock_id = $1 AND status = 'EXPIRED'
      UNION ALL SELECT 'payments and deposits', count(*)::text FROM payments WHERE test_clock_id = $1 AND status = 'EXPIRED'
      UNION ALL SELECT 'deposits refunded', count(*)::text FROM deposits WHERE test_clock_id = $1 AND refund_payment_id IS NOT NULL`, [clock.id])).rows;
    const expired = counts.map((row) => `${row.n} ${row.table}`).join(', ');
    report(target, `advance 49 h through every expiry (${OBJECTS.toLocaleString('en-US')} objects)`,
      ready ? `${seconds.toFixed(2)} s until ready (target < 5 s); expired: ${expired}` : `not ready after ${READY_TIMEOUT_MS / 1000} s; expired: ${expired}`);
    const statements = Math.round(profile.backgroundQueriesPerSecond * profile.seconds);
    report(target, 'the advance: statements sent, and CPU of this process',
      `${statements.toLocaleString('en-US')} statements (${(statements / OBJECTS).toFixed(1)} per object), ` +
      `mean wait for a pooled connection ${profile.backgroundPoolWaitMs.toFixed(1)} ms, CPU ${(profile.serviceCpu * 100).toFixed(0)} % of a core`);
  } finally {
    await service.close();
  }
}
