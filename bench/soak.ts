/**
 * The soak (`BENCH_ONLY=soak`): the whole service in this process with every scheduled job and worker running
 * (settlement batches, expiries, the release of checkout reservations, the retention jobs, the webhook dispatcher, the
 * sandbox autopilot), under a mixed load for BENCH_SOAK_SECONDS (default 600): push and card payments, refunds,
 * matched and unmatched deposits and their assignments (some underpaid, their amounts still due cancelled or paid by a
 * later deposit), checkout sessions paid from the hosted page, lists and the events feed, with two webhook endpoints
 * receiving everything (one answering 200, one failing one attempt in ten, so retries happen).
 *
 * It prints the size (rows and bytes) of every table that is not business history at the start, every minute and at
 * the end: they must stay flat once their retention is reached. So that the run reaches it, the webhooks' retention is
 * BENCH_SOAK_RETENTION_DAYS (default 0: purged at the next run of the retention job, which runs every minute here);
 * idempotency keys keep their 24 hours, so they grow through a run shorter than that, by one row per POST. The event
 * store and the read models grow with the history, as they must; the events' count and size are printed for scale.
 * BENCH_SOAK_WORKERS (default 4) sets the requests in flight. Prints figures and never fails.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { assembleService } from '../src/assemble.ts';
import { createApp } from '../src/http/app.ts';
import { systemRuntime } from '../src/domain/runtime.ts';
import { stopService } from '../src/shutdown.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { provisionMerchant, card, type Merchant } from './dataset.ts';
import { OPERATOR_KEY } from './service.ts';
import type { Report } from './loadReport.ts';

const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const RETENTION_DAYS = process.env.BENCH_SOAK_RETENTION_DAYS ?? '0';
const WORKERS = Number(process.env.BENCH_SOAK_WORKERS ?? 4);
/** How often the sizes are printed during the run. */
const SAMPLE_MS = 60_000;
/** The settled payments kept to refund, at most (the oldest are dropped). */
const MAX_REFUNDABLE = 1_000;

interface TableSize { table: string; rows: number; bytes: number }

/** The tables that are not business history: every table of the main schema but `events`, and the events feed of GET /events. */
async function tableSizes(database: Database): Promise<TableSize[]> {
  const { rows: tables } = await database.query<{ name: string; regclass: string }>(`
    SELECT c.relname AS name, format('%I.%I', n.nspname, c.relname) AS regclass
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'events'
    UNION ALL
    SELECT 'webhook_events', format('%I.%I', schema_name, 'webhook_events') FROM projection_state
     WHERE name = 'webhooks' AND status = 'active' AND schema_name IS NOT NULL
    UNION ALL
    SELECT 'events (history, for scale)', format('%I.%I', current_schema(), 'events')
    ORDER BY 1`);
  const sizes: TableSize[] = [];
  for (const { name, regclass } of tables) {
    const { rows } = await database.query<{ rows: string; bytes: string }>(
      `SELECT (SELECT count(*) FROM ${regclass})::text AS rows, pg_total_relation_size('${regclass}'::regclass)::text AS bytes`);
    sizes.push({ table: name, rows: Number(rows[0]!.rows), bytes: Number(rows[0]!.bytes) });
  }
  const { rows: schemas } = await database.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_namespace WHERE starts_with(nspname, current_schema() || '__')`);
  sizes.push({ table: 'projection schemas beside the main one (count)', rows: Number(schemas[0]!.n), bytes: 0 });
  return sizes;
}

const kb = (bytes: number) => `${Math.round(bytes / 1024).toLocaleString('en-US')} kB`;

/** The projections that recorded an error, and how far each lags the head of the feed (events). */
async function projectionHealth(database: Database): Promise<string[]> {
  const { rows } = await database.query<{ name: string; lag: string; last_error: string | null }>(`
    SELECT s.name, (SELECT count(*) FROM events e WHERE (e.transaction_id::text::bigint, e.global_position)
              > (coalesce(s.checkpoint_commit, 0), coalesce(s.checkpoint_prepare, 0)))::text AS lag, s.last_error
      FROM projection_state s WHERE s.status = 'active' ORDER BY s.name`);
  return rows.filter((r) => Number(r.lag) > 100 || r.last_error).map((r) => `${r.name}: ${r.lag} behind${r.last_error ? `, last error ${r.last_error.slice(0, 160)}` : ''}`);
}

function printSizes(target: string, label: string, sizes: TableSize[]): void {
  console.log(`${target.padEnd(9)} soak table sizes, ${label}:`);
  for (const { table, rows, bytes } of sizes) {
    console.log(`${''.padEnd(9)}   ${table.padEnd(48)} ${rows.toLocaleString('en-US').padStart(10)} rows ${kb(bytes).padStart(12)}`);
  }
}

/** A webhook receiver on this machine: 200, or 503 for one attempt in `failEvery` (0: never). */
async function receiver(failEvery: number): Promise<{ url: string; received: () => number; close(): Promise<void> }> {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.statusCode = failEvery > 0 && received % failEvery === 0 ? 503 : 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received: () => received,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export async function benchSoak(target: string, database: Database, report: Report): Promise<void> {
  const config = loadConfig({
    OPERATOR_API_KEY: OPERATOR_KEY, RATE_LIMIT_PER_SECOND: '0', ADDRESS_RATE_LIMIT_PER_SECOND: '0', SANDBOX_AUTOPILOT: 'true',
    WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_DELIVERY_RETENTION_DAYS: RETENTION_DAYS,
    // Every job runs within the soak: settlement and expiries often, the retention every minute.
    SETTLEMENT_CRON: '*/10 * * * * *', EXPIRY_CRON: '*/30 * * * * *', RETENTION_CRON: '0 * * * * *',
    ...(database.connectionString ? { DATABASE_URL: database.connectionString } : {}),
  });
  // Warnings and errors of the service go to BENCH_SOAK_LOG when it names a file (a stall or a failing job shows there).
  const logger = pino({ level: 'warn' }, pino.destination({ dest: process.env.BENCH_SOAK_LOG ?? '/dev/null', sync: false }));
  const store = new PostgresEventStore(database);
  const { services, projections, scheduler } = await assembleService({
    config, logger, runtime: systemRuntime, schedule: true,
    storage: { mode: database.kind === 'postgres' ? 'postgres' : 'embedded', database, store, describe: 'bench', close: async () => store.close() },
  });
  const { app } = createApp(services);
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const receivers = [await receiver(0), await receiver(10)];
  const counts = new Map<string, number>();
  const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);

  const send = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'user-agent': 'soak', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.headers.get('x-read-models') === 'stale') count('answers marked X-Read-Models: stale');
    // Refusals by route and reason (ids cut out), so that an unexpected one shows in the figures.
    if (response.status >= 400) count(`HTTP ${response.status} ${method} ${path.replace(/[0-9a-f-]{36}|[A-Za-z0-9_-]{32}/g, ':id')}: ${text.slice(0, 120)}`);
    return { status: response.status, body: text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null };
  };

  try {
    const merchant: Merchant = await provisionMerchant(baseUrl);
    const as = merchant.headers;
    for (const { url } of receivers) await send('POST', '/webhooks', as, { url });
    const secret = config.providerSecret;
    const settled: string[] = [];
    const companions: string[] = [];
    let sequence = 0;
    const account = () => merchant.accounts[sequence % merchant.accounts.length]!;
    const idempotent = () => ({ ...as, 'idempotency-key': randomUUID() });
    const depositBody = (reference: string, amount = '10.00') => {
      const body = { clientId: merchant.clientId, depositId: `soak-${randomUUID()}`, reference, amount, currency: 'USD' as const,
        originator: { firstName: 'Ana', lastName: `Soak${sequence % 50}`, documentType: 'DNI' as const, documentNumber: `soak-${sequence % 50}` } };
      return { ...body, signature: depositSignature(secret, body) };
    };

    /** One operation of the mix, chosen by `n` (0–99). */
    const operations: Array<[number, string, () => Promise<void>]> = [
      [25, 'push payment, received', async () => {
        const { accountNumber } = account();
        const created = await send('POST', '/payments', idempotent(), {
          externalId: `soak-${randomUUID()}`, identityId: merchant.identityId, type: 'PURCHASE', accountNumber, currency: 'USD', totalAmount: '10.00' });
        if (created.status !== 200) return;
        const received = await send('POST', '/payments/received', { 'user-agent': 'provider' },
          { transactionId: created.body.id, signature: providerSignature(secret, created.body.id) });
        if (received.body?.status === 'SETTLED') settled.push(created.body.id);
        if (settled.length > MAX_REFUNDABLE) settled.shift();
      }],
      [15, 'card payment (autopilot, settlement batch)', async () => {
        await send('POST', '/payments', idempotent(), {
          externalId: `soak-${randomUUID()}`, identityId: merchant.identityId, type: 'PURCHASE', accountNumber: account().accountNumber,
          currency: 'USD', totalAmount: '12.00', origins: [{ type: 'CARD', card }] });
      }],
      [10, 'refund of 1.00', async () => {
        const parent = settled[Math.floor(Math.random() * settled.length)];
        if (parent) await send('POST', `/payments/${parent}/refund`, idempotent(), { amount: '1.00' });
      }],
      [10, 'matched deposit', async () => {
        await send('POST', '/payments/deposits', { 'user-agent': 'provider' }, depositBody(account().accountNumber));
      }],
      [15, 'unmatched deposit, assigned (half underpaid)', async () => {
        const deposited = await send('POST', '/payments/deposits', { 'user-agent': 'provider' }, depositBody(`unknown-${randomUUID().slice(0, 18)}`));
        if (deposited.status !== 201) return;
        const pays = sequence % 4 === 0 ? companions.shift() : undefined;
        const assigned = await send('POST', `/payments/${deposited.body.id}/assign`, idempotent(), {
          accountId: pays ? merchant.accounts[0]!.id : account().id,
          ...(pays ? { companionId: pays } : sequence % 2 === 0 ? { expectedAmount: '12.00' } : {}),
        });
        if (assigned.body?.reconciliationStatus === 'UNDERPAID') {
          // Half the amounts still due are cancelled; the others wait to be paid by a later deposit, or to expire.
          if (sequence % 3 === 0) await send('POST', `/payments/${assigned.body.relatedPaymentId}/cancel`, idempotent());
          else if (assigned.body.accountNumber === merchant.accounts[0]!.accountNumber) companions.push(assigned.body.relatedPaymentId);
        }
      }],
      [15, 'checkout session paid from the hosted page', async () => {
        const { accountNumber } = account();
        const session = await send('POST', '/checkout-sessions', idempotent(), {
          items: [{ description: 'Soak item', preTaxAmount: '20.00' }], currency: 'USD', paymentMethodsAllowed: ['CARD'], duration: 600,
          destinations: [{ type: 'ACCOUNT', amount: '20.00', account: { type: 'CHECKING', currency: 'USD', accountNumber, accountHolder: 'Soak' } }],
          owner: { identityId: merchant.identityId },
        });
        if (session.status !== 201) return;
        await send('POST', `/checkout/${session.body.checkoutToken}/pay`, {},
          { method: 'CARD', fields: card, customer: { email: 'payer@example.com' } });
      }],
      [10, 'lists and the events feed', async () => {
        await send('GET', '/payments?limit=50', as);
        await send('GET', '/events?limit=100', as);
      }],
    ];
    const pick = (n: number) => {
      let bound = 0;
      for (const [share, what, run] of operations) {
        bound += share;
        if (n < bound) return { what, run };
      }
      return { what: operations[0]![1], run: operations[0]![2] };
    };

    const start = await tableSizes(database);
    printSizes(target, 'at the start', start);
    const startedAt = Date.now();
    const deadline = startedAt + SOAK_SECONDS * 1000;
    const sampler = setInterval(() => {
      tableSizes(database).then(async (sizes) => {
        printSizes(target, `after ${Math.round((Date.now() - startedAt) / 1000)} s`, sizes);
        for (const line of await projectionHealth(database)) console.log(`${''.padEnd(9)}   projection ${line}`);
      })
        // A sample that fails (the database busy) is only a missing line of output.
        .catch((error: unknown) => console.log(`${target.padEnd(9)} soak: a size sample failed: ${String(error)}`));
    }, SAMPLE_MS);
    try {
      await Promise.all(Array.from({ length: WORKERS }, async () => {
        while (Date.now() < deadline) {
          const { what, run } = pick(Math.floor(Math.random() * 100));
          sequence++;
          try {
            await run();
            count(what);
          } catch (error) {
            count(`failed: ${what}: ${error instanceof Error ? error.message.slice(0, 80) : String(error)}`);
          }
        }
      }));
    } finally {
      clearInterval(sampler);
    }
    const end = await tableSizes(database);
    printSizes(target, `at the end (${SOAK_SECONDS} s)`, end);
    for (const { table, rows, bytes } of end) {
      const before = start.find((s) => s.table === table);
      report(target, `soak: ${table}`, `${(before?.rows ?? 0).toLocaleString('en-US')} → ${rows.toLocaleString('en-US')} rows, `
        + `${kb(before?.bytes ?? 0)} → ${kb(bytes)}`);
    }
    for (const [what, n] of [...counts.entries()].sort()) report(target, `soak: ${what}`, n.toLocaleString('en-US'));
    report(target, 'soak: webhook requests received (200 / 1 in 10 refused)', receivers.map((r) => r.received().toLocaleString('en-US')).join(' / '));
  } finally {
    await stopService({ server, scheduler, projections, closeStorage: () => store.close() }, 0);
    await Promise.all(receivers.map((r) => r.close()));
    logger.flush();
  }
}
