/**
 * The write routes over HTTP, each beside the floor of an HTTP create measured in the same run (bench/floor.ts):
 * the whole service in this process (as bench/http.ts starts it), autocannon in its child process, 16
 * connections, every request with an Idempotency-Key. Per route: requests/s, p50 and p99, and what a request
 * costs the database: round trips (statements) and commits, counted on every `pg` client of this process
 * (bench/pgCounters.ts) over the measured run and until the work it set off (projectors, reactors) is done,
 * divided by the requests answered. The floor is measured just before each route's run and just after it (this
 * machine's speed drifts within minutes), and each route's share is of the mean of those two; the main routes are
 * also run one request at a time (one connection), for what a request costs alone.
 *
 *   payments          POST /payments, a push payment (no method), a new externalId each
 *   deposits          POST /payments/deposits, signed, unmatched (recorded unassigned), originators drawn from 500
 *   deposits-matched  the same, matched to one of the merchant's 10 accounts (only when BENCH_WRITES names it)
 *   assign            POST /payments/:id/assign of the unassigned deposits, each once, to the 10 accounts in turn
 *   refunds-200       POST /payments/:id/refund of 0.01 USD, across 200 SETTLED parents over 10 accounts
 *   refunds-hot       the same on one hot parent (its stream and account take every request)
 *   sessions          POST /checkout-sessions
 *   pay               POST /checkout-sessions/:id/payments, a card and a new payer, each session once
 *   authorize         POST /payments/:id/authorized of card payments recorded beforehand, each once
 *   capture           POST /payments/:id/captured of the payments the authorize run authorized, each once
 *   webhooks          POST /webhooks, a new endpoint each
 *   received          POST /payments/received settling INSTANT payments across 10 accounts (only when named)
 *
 * BENCH_WRITES (comma-separated names) runs only those; BENCH_WRITES_PREPARED (default 20,000) bounds what is
 * prepared per route (notifications, card payments). Prints figures; never fails.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { comparePositions, positionReached, type Position } from '../src/eventstore/position.ts';
import type { EventStore } from '../src/eventstore/port.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { paymentDecider } from '../src/payments/decider.ts';
import { paymentIdFor, paymentStream, type PaymentCreatedData } from '../src/payments/events.ts';
import { providerSignature } from '../src/payments/routes.ts';
import type { Services } from '../src/http/services.ts';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import type { Profile, Profiler } from './profile.ts';
import { call, type BenchService } from './service.ts';
import { card, SEED_IN_FLIGHT, type Merchant } from './dataset.ts';
import { startFloor } from './floor.ts';
import { countsSince, databaseCounts, installDatabaseCounters, statementTally } from './pgCounters.ts';
import { CONNECTIONS, reportLoad, reportProfile, type LoadGenerator, type Report } from './loadReport.ts';

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_HTTP_WARMUP_SECONDS ?? 3);
const PREPARED = Number(process.env.BENCH_WRITES_PREPARED ?? 20_000);
const DEFAULT_ROUTES = 'payments,deposits,assign,refunds-200,refunds-hot,sessions,pay,authorize,capture,webhooks';
const ROUTES = new Set((process.env.BENCH_WRITES ?? DEFAULT_ROUTES).split(',').map((s) => s.trim()).filter(Boolean));
/** Distinct originators of the deposit notifications: each is a customer of the merchant after its first deposit. */
const ORIGINATORS = 500;
const REFUND_PARENTS = 200;
/** How long the work a run set off may take to finish before its cost is counted anyway. */
const DRAIN_TIMEOUT_MS = 120_000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number) => `${fmt(n, n < 10 ? 1 : 0)} ms`;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(values.length, 1);

type Spec = Omit<LoadSpec, 'kind' | 'seconds'>;

interface Figure {
  name: string;
  what: string;
  result: LoadResult;
  queries: number;
  commits: number;
  /** The floor measured just before the run and just after it. */
  floor: LoadResult[];
  /** One connection, one request at a time: latency and cost of a request alone (main routes only). */
  alone?: { result: LoadResult; queries: number; commits: number };
}

/** Seconds of each floor run beside a route's run (one before, one after). */
const FLOOR_SECONDS = Number(process.env.BENCH_WRITES_FLOOR_SECONDS ?? Math.max(2, SECONDS / 2));
/** Seconds of the one-connection run of the main routes. */
const ALONE_SECONDS = Number(process.env.BENCH_WRITES_ALONE_SECONDS ?? 3);
/** The routes also measured one request at a time. */
const ALONE_ROUTES = new Set(['payments', 'deposits', 'refunds-200', 'sessions']);

/** Waits until every runner of the service holding its lease has passed the head of the feed, and the head stays. */
export async function drain(service: BenchService, timeoutMs = DRAIN_TIMEOUT_MS): Promise<boolean> {
  const store = service.services.storage.store;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const head = await store.headPosition();
    if (!head) return true;
    while (!service.projections.projectionRunners.every((r) => !r.holdsLease || positionReached(r.checkpoint, head))) {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Reactors may have appended meanwhile (their effects): wait for those too.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await store.headPosition();
    if (!again || comparePositions(again, head) === 0) return true;
    if (Date.now() >= deadline) return false;
  }
}

interface Context {
  target: string;
  database: Database;
  report: Report;
  loadgen: LoadGenerator;
  profiler: Profiler;
  service: BenchService;
  merchant: Merchant;
  clp: { id: string; accountNumber: string };
  floorSpec: Spec;
}

/**
 * A warm-up, the run itself with its database round trips and commits counted (and what it set off), between two
 * runs of the floor; for the main routes also a run of one request at a time.
 */
async function measureRoute(ctx: Context, name: string, what: string, spec: Spec): Promise<Figure & { profile: Profile }> {
  const { loadgen, profiler, service } = ctx;
  if (WARMUP_SECONDS > 0) await loadgen.run({ ...spec, seconds: WARMUP_SECONDS });
  await drain(service);
  const floorBefore = name === 'floor' ? null : await loadgen.run({ ...ctx.floorSpec, seconds: FLOOR_SECONDS });
  const counted = async (run: Omit<LoadSpec, 'kind'>) => {
    const before = databaseCounts();
    const result = await loadgen.run(run);
    const drained = await drain(service);
    const used = countsSince(before);
    if (!drained) ctx.report(ctx.target, `${what}: note`, `the work it set off had not finished ${DRAIN_TIMEOUT_MS / 1000} s after the run`);
    const answered = Math.max(result.completed, 1);
    return { result, queries: used.queries / answered, commits: used.commits / answered };
  };
  await profiler.startCpuProfile();
  profiler.start();
  statementTally();
  const before = databaseCounts();
  const result = await loadgen.run({ ...spec, seconds: SECONDS });
  const profile = profiler.stop();
  const cpuProfile = await profiler.saveCpuProfile(`${ctx.target}-${name}`);
  if (cpuProfile) ctx.report(ctx.target, `${what}: CPU profile`, cpuProfile);
  const drained = await drain(service);
  const used = countsSince(before);
  if (!drained) ctx.report(ctx.target, `${what}: note`, `the work it set off had not finished ${DRAIN_TIMEOUT_MS / 1000} s after the run`);
  for (const [shape, count] of statementTally().slice(0, 40)) {
    ctx.report(ctx.target, `${what}: statements per request`, `${fmt(count / Math.max(result.completed, 1), 2)}  ${shape}`);
  }
  const floorAfter = name === 'floor' ? null : await loadgen.run({ ...ctx.floorSpec, seconds: FLOOR_SECONDS });
  const alone = ALONE_ROUTES.has(name) ? await counted({ ...spec, connections: 1, seconds: ALONE_SECONDS }) : undefined;
  const answered = Math.max(result.completed, 1);
  return {
    name, what, result, profile, queries: used.queries / answered, commits: used.commits / answered,
    floor: floorBefore && floorAfter ? [floorBefore, floorAfter] : [], ...(alone ? { alone } : {}),
  };
}

/** `count` signed notifications of 10.00 USD, to `reference(i)`, each with a new provider deposit id. */
function notifications(secret: string, merchant: Merchant, label: string, count: number, reference: (i: number) => string) {
  return Array.from({ length: count }, (_, i) => {
    const originator = Math.floor(Math.random() * ORIGINATORS);
    const body = {
      clientId: merchant.clientId, depositId: `${label}-${i}`, reference: reference(i), amount: '10.00', currency: 'USD' as const,
      originator: { firstName: 'Ana', lastName: `Bench${originator}`, documentType: 'DNI' as const, documentNumber: `bench-${originator}` },
    };
    return { ...body, signature: depositSignature(secret, body) };
  });
}

/**
 * `count` SETTLED payments of 999.00 USD (below the review threshold) without fee, through the API (created,
 * then the provider's notification settles them INSTANT), to the merchant's accounts in turn.
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

/** `count` payments of the template's method (CREATED), recorded straight in the store; answers their ids. */
async function recordPayments(
  store: EventStore, services: Services, merchant: Merchant, template: PaymentCreatedData, count: number,
  shape: Partial<PaymentCreatedData>,
): Promise<{ ids: string[]; last: Position | null }> {
  const metadata = { clientId: merchant.clientId, actor: `client:${merchant.clientId}` };
  const ids: string[] = [];
  let last: Position | null = null;
  let next = 0;
  await Promise.all(Array.from({ length: SEED_IN_FLIGHT }, async () => {
    for (let i = next++; i < count; i = next++) {
      const externalId = `prepared-${randomUUID()}`;
      const paymentId = paymentIdFor(merchant.clientId, externalId);
      const account = merchant.accounts[i % merchant.accounts.length]!;
      const created = paymentDecider.decide({ type: 'CreatePayment', tenant: { clientId: merchant.clientId }, now: services.runtime.now(), screening: { outcome: 'CLEAR' }, payment: {
        ...template, paymentId, externalId, accountId: account.id, accountNumber: account.accountNumber, ...shape,
      } }, paymentDecider.initialState);
      const { position } = await store.append(paymentStream(paymentId), created.map((e) => ({ type: e.type, data: e.data, metadata })), 'no_stream');
      if (!last || comparePositions(position, last) > 0) last = position;
      ids.push(paymentId);
    }
  }));
  return { ids, last };
}

/** The payments of the merchant in `status`, from the read model (the service caught up first). */
async function paymentsIn(ctx: Context, status: string, ids: string[]): Promise<string[]> {
  const { rows } = await ctx.database.query<{ payment_id: string }>(
    'SELECT payment_id FROM payments WHERE client_id = $1 AND status = $2 AND payment_id = ANY($3::text[])', [ctx.merchant.clientId, status, ids]);
  return rows.map((row) => row.payment_id);
}

function checkoutTerms(ctx: Context) {
  return {
    items: [
      { description: 'Coffee 1 kg', preTaxAmount: '10000', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19' } },
      { description: 'Sticker', preTaxAmount: '500' },
    ],
    currency: 'CLP', paymentMethodsAllowed: ['CARD'],
    destinations: [{ type: 'ACCOUNT', amount: '12400', account: { type: 'CHECKING', currency: 'CLP', accountNumber: ctx.clp.accountNumber, accountHolder: 'Shop' } }],
    duration: 3600, owner: { identityId: ctx.merchant.identityId, name: 'Shop' }, customerRequirements: ['email', 'firstName'],
    successUrl: 'https://shop.example.com/thanks', failedUrl: 'https://shop.example.com/sorry',
  };
}

/** Bounds of the issue and the goals of PERFORMANCE.md, by route: a share of the floor's rate, and of its latency. */
const targets: Record<string, { share?: number; p99x?: number; p50x?: number }> = {
  payments: { share: 0.5, p99x: 3 },
  deposits: { share: 0.3, p50x: 4 },
  'refunds-200': { share: 0.3 },
  'refunds-hot': { share: 0.1 },
  sessions: { share: 0.4 },
};

export async function benchWrites(
  target: string, database: Database, report: Report, loadgen: LoadGenerator, profiler: Profiler,
  service: BenchService, merchant: Merchant, template: PaymentCreatedData,
): Promise<void> {
  installDatabaseCounters();
  const services = service.services;
  const base = { baseUrl: service.baseUrl, connections: CONNECTIONS, method: 'POST' as const, idempotencyKeys: true };
  const clpAccount = await call(service.baseUrl, 'POST', '/accounts', merchant.headers, { identityId: merchant.identityId, type: 'CHECKING', currency: 'CLP' });
  const floor = await startFloor(database, services.config.databasePoolSize);
  const floorSpec: Spec = {
    ...base, baseUrl: floor.baseUrl, paths: ['/floor'], headers: {}, idempotencyKeys: false,
    body: { identityId: merchant.identityId, type: 'PURCHASE', accountNumber: merchant.accounts[0]!.accountNumber, totalAmount: '100.00', currency: 'USD' },
  };
  const ctx: Context = {
    target, database, report, loadgen, profiler, service, merchant, clp: { id: clpAccount.id, accountNumber: clpAccount.accountNumber }, floorSpec,
  };
  const figures: Figure[] = [];
  const floors: LoadResult[] = [];
  const runFloor = async (when: string) => {
    const figure = await measureRoute(ctx, 'floor', `floor: express + INSERT … RETURNING (${when})`, floorSpec);
    reportLoad(target, figure.what, figure.result, report, { latency: '' });
    report(target, `${figure.what}: per request`, `${fmt(figure.queries, 1)} round trips, ${fmt(figure.commits, 1)} commits`);
    floors.push(figure.result);
  };
  const run = async (name: string, what: string, spec: Spec, note?: (figure: Figure) => string | null) => {
    const figure = await measureRoute(ctx, name, what, spec);
    reportLoad(target, what, figure.result, report, { latency: '' });
    reportProfile(target, what, figure.profile, figure.result, report);
    report(target, `${what}: per request`, `${fmt(figure.queries, 1)} round trips, ${fmt(figure.commits, 1)} commits`);
    const floorRate = mean(figure.floor.map((f) => f.requestsPerSecond));
    report(target, `${what}: the floor beside it (before, after)`,
      `${figure.floor.map((f) => `${fmt(f.requestsPerSecond)}/s p99 ${ms(f.latency.p99)}`).join(', ')}: share ${fmt(figure.result.requestsPerSecond / floorRate, 2)}`);
    if (figure.alone) {
      report(target, `${what}: one request at a time`,
        `p50 ${ms(figure.alone.result.latency.p50)}, p99 ${ms(figure.alone.result.latency.p99)}, ${fmt(figure.alone.queries, 1)} round trips, ${fmt(figure.alone.commits, 1)} commits per request`);
    }
    const extra = note?.(figure);
    if (extra) report(target, `${what}: note`, extra);
    figures.push(figure);
    return figure;
  };
  try {
    await runFloor('before the routes');

    if (ROUTES.has('payments')) {
      await run('payments', 'POST /payments (push payment)', {
        ...base, paths: ['/payments'], headers: merchant.headers,
        body: { identityId: merchant.identityId, type: 'PURCHASE', accountNumber: merchant.accounts[0]!.accountNumber, totalAmount: '100.00', currency: 'USD' },
      });
    }

    for (const label of ['deposits', 'deposits-matched'] as const) {
      if (!ROUTES.has(label) && !(label === 'deposits' && ROUTES.has('assign'))) continue;
      const matched = label === 'deposits-matched';
      const bodies = notifications(services.config.providerSecret, merchant, `${label}-${Date.now()}`, PREPARED,
        (i) => (matched ? merchant.accounts[i % merchant.accounts.length]!.accountNumber : `unknown-${i}`));
      const spec: Spec = { ...base, paths: ['/payments/deposits'], headers: { 'user-agent': 'provider' }, bodies, bodiesKey: label };
      if (ROUTES.has(label)) {
        await run(label, `POST /payments/deposits (${matched ? 'matched' : 'unmatched'}, ${ORIGINATORS} originators)`, spec,
          (f) => (f.result.completed + WARMUP_SECONDS * f.result.requestsPerSecond >= PREPARED ? `sent all ${fmt(PREPARED)} notifications; raise BENCH_WRITES_PREPARED` : null));
      }
      // As many deposits again, not measured, for the assignments (an assignment costs about what a notification does).
      if (!matched && ROUTES.has('assign')) {
        await loadgen.run({ ...spec, seconds: SECONDS + WARMUP_SECONDS });
        await drain(service);
      }
    }

    if (ROUTES.has('assign')) {
      const waiting = (await database.query<{ payment_id: string }>(
        `SELECT payment_id FROM deposits WHERE client_id = $1 AND status = 'CREATED' ORDER BY created_at, payment_id`, [merchant.clientId])).rows;
      if (waiting.length === 0) report(target, 'POST /payments/:id/assign', 'skipped: no deposit awaits assignment');
      else {
        await run('assign', `POST /payments/:id/assign (${merchant.accounts.length} accounts)`, {
          ...base, paths: ['/payments/assign'], headers: merchant.headers,
          bodies: waiting.map((_, i) => ({ accountId: merchant.accounts[i % merchant.accounts.length]!.id })),
          bodyPaths: waiting.map((row) => `/payments/${row.payment_id}/assign`), bodiesKey: 'assign',
        }, (f) => (f.result.non2xx > 0 ? `some were sent again (refused): ${fmt(waiting.length)} deposits awaited assignment before the warm-up` : null));
      }
    }

    for (const [name, parents] of [['refunds-200', REFUND_PARENTS], ['refunds-hot', 1]] as const) {
      if (!ROUTES.has(name)) continue;
      const ids = await settledParents(service.baseUrl, merchant, parents, services.config.providerSecret);
      await run(name, `POST /payments/:id/refund (0.01 USD, ${parents === 1 ? 'one hot parent' : `${parents} parents`})`, {
        ...base, paths: ids.map((id) => `/payments/${id}/refund`), headers: merchant.headers, bodies: [{ amount: '0.01' }], bodiesKey: name,
      });
    }

    if (ROUTES.has('sessions') || ROUTES.has('pay')) {
      const spec: Spec = { ...base, paths: ['/checkout-sessions'], headers: merchant.headers, body: checkoutTerms(ctx), uniqueField: '' };
      if (ROUTES.has('sessions')) await run('sessions', 'POST /checkout-sessions', spec);
      if (ROUTES.has('pay')) {
        // As many sessions again, not measured, to be paid.
        await loadgen.run({ ...spec, seconds: SECONDS + WARMUP_SECONDS });
        await drain(service);
        const sessions = (await database.query<{ session_id: string }>(
          `SELECT session_id FROM checkout_sessions WHERE client_id = $1 AND status = 'ACTIVE'`, [merchant.clientId])).rows;
        await run('pay', 'POST /checkout-sessions/:id/payments (card, a new payer)', {
          ...base, paths: ['/checkout-sessions/pay'], headers: merchant.headers, bodiesKey: 'pay',
          bodies: sessions.map((_, i) => ({ origins: [{ type: 'CARD', card }], customer: { email: `payer-${i}@example.com`, firstName: 'Ana' } })),
          bodyPaths: sessions.map((row) => `/checkout-sessions/${row.session_id}/payments`),
        }, (f) => (f.result.non2xx > 0 ? `some were sent again (refused): ${fmt(sessions.length)} sessions awaited payment before the warm-up` : null));
      }
    }

    if (ROUTES.has('authorize') || ROUTES.has('capture')) {
      // The template is a card payment of 100.00 USD (its method, fees and settlement period).
      const prepared = await recordPayments(services.storage.store, services, merchant, template, PREPARED, {});
      await drain(service);
      const moves = async (name: string, move: string, ids: string[]) => run(name, `POST /payments/:id/${move}`, {
        ...base, paths: [`/payments/${move}`], headers: merchant.headers, bodiesKey: name,
        bodies: ids.map(() => null), bodyPaths: ids.map((id) => `/payments/${id}/${move}`),
      }, (f) => (f.result.non2xx > 0 ? `some were sent again (refused): ${fmt(ids.length)} payments were ready before the warm-up` : null));
      if (ROUTES.has('authorize')) await moves('authorize', 'authorized', prepared.ids);
      else await loadgen.run({ ...base, seconds: SECONDS + WARMUP_SECONDS, paths: ['/payments/authorized'], headers: merchant.headers, bodiesKey: 'authorize',
        bodies: prepared.ids.map(() => null), bodyPaths: prepared.ids.map((id) => `/payments/${id}/authorized`) });
      if (ROUTES.has('capture')) await moves('capture', 'captured', await paymentsIn(ctx, 'AUTHORIZED', prepared.ids));
    }

    if (ROUTES.has('webhooks')) {
      await run('webhooks', 'POST /webhooks (register an endpoint)', {
        ...base, paths: ['/webhooks'], headers: merchant.headers, body: { url: 'https://hooks.example.com/bench' }, uniqueField: 'url',
        uniquePrefix: 'https://hooks.example.com/bench/',
      });
    }

    if (ROUTES.has('received')) {
      const pending = await recordPayments(services.storage.store, services, merchant, template, PREPARED,
        { totalAmount: '10.00', origins: [], fees: [], feeAmount: '0.00', flow: 'PUSH', method: null, settlement: 'INSTANT' });
      await drain(service);
      await run('received', `POST /payments/received (settles, ${merchant.accounts.length} accounts)`, {
        ...base, paths: ['/payments/received'], headers: { 'user-agent': 'provider' }, bodiesKey: 'received',
        bodies: pending.ids.map((transactionId) => ({ transactionId, signature: providerSignature(services.config.providerSecret, transactionId) })),
      });
    }

    await runFloor('after the routes');
  } finally {
    await floor.close();
  }

  // The summary: each route as a share of the floor measured beside it (just before and just after its run).
  const all = [...floors, ...figures.flatMap((f) => f.floor)];
  report(target, 'writes: the floor over the whole section',
    `${fmt(Math.min(...all.map((f) => f.requestsPerSecond)))} to ${fmt(Math.max(...all.map((f) => f.requestsPerSecond)))} req/s, ` +
    `p99 ${ms(Math.min(...all.map((f) => f.latency.p99)))} to ${ms(Math.max(...all.map((f) => f.latency.p99)))} (the machine's drift: compare shares, not rates)`);
  console.log(`\n${target}: route | req/s | p50 | p99 | round trips/req | commits/req | share of the floor beside it | p99 / floor p99 | alone: p50, round trips, commits | bounds`);
  for (const f of figures) {
    const floorRate = mean(f.floor.map((x) => x.requestsPerSecond));
    const floorP50 = mean(f.floor.map((x) => x.latency.p50));
    const floorP99 = mean(f.floor.map((x) => x.latency.p99));
    const share = f.result.requestsPerSecond / floorRate;
    const p99x = f.result.latency.p99 / floorP99;
    const p50x = f.result.latency.p50 / floorP50;
    const bound = targets[f.name];
    const checks = [
      ...(bound?.share !== undefined ? [`≥ ${bound.share} ${verdict(share >= bound.share)}`] : []),
      ...(bound?.p99x !== undefined ? [`p99 ≤ ${bound.p99x}× ${verdict(p99x <= bound.p99x)}`] : []),
      ...(bound?.p50x !== undefined ? [`p50 ≤ ${bound.p50x}× ${verdict(p50x <= bound.p50x)}`] : []),
      `goal ≥ 0.75 ${verdict(share >= 0.75)}, p99 ≤ 2× ${verdict(p99x <= 2)}`,
    ];
    const alone = f.alone ? `${ms(f.alone.result.latency.p50)}, ${fmt(f.alone.queries, 1)}, ${fmt(f.alone.commits, 1)}` : '–';
    console.log(`${target}: ${f.what} | ${fmt(f.result.requestsPerSecond)} | ${ms(f.result.latency.p50)} | ${ms(f.result.latency.p99)} | ` +
      `${fmt(f.queries, 1)} | ${fmt(f.commits, 1)} | ${fmt(share, 2)} (floor ${fmt(floorRate)}/s) | ${fmt(p99x, 1)}× | ${alone} | ${checks.join('; ')}` +
      (f.result.non2xx ? ` | ${fmt(f.result.non2xx)} non-2xx` : ''));
  }
  console.log('');
}
