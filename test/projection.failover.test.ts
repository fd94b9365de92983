/**
 * Two service processes on one Postgres schema: when the process holding the ledger projector's lease dies
 * without a word (kill -9), the other takes the lease over once it expires and the ledger catches up there.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/database.ts';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import type { LeaseChange } from '../src/projection/runner.ts';
import { listeningPort, startService, type ServiceProcess } from './support/serviceProcess.ts';
import { testSchemaName } from './support/targets.ts';
import { startTcpRelay, type TcpRelay } from './support/tcpRelay.ts';
import { totalsProjector } from './support/totalsProjector.ts';
import { until } from './support/until.ts';

const OPERATOR_KEY = 'failover-operator-key-0123456789';
const PROVIDER_SECRET = 'failover-provider-secret';

const url = process.env.DATABASE_URL;
/**
 * These suites need real Postgres: two processes cannot share the embedded database (one holds its data
 * directory's lock), and it lives inside the process, so there is no connection to cut. Without DATABASE_URL
 * they are listed as pending, with that reason in their title.
 */
const onPostgres = (title: string, suite: (this: Mocha.Suite) => void) =>
  url ? describe(`${title}: postgres`, suite) : describe.skip(`${title}: needs DATABASE_URL (real Postgres)`, suite);

onPostgres('projection lease failover between two service processes', function () {
  this.timeout(180_000);
  const schema = testSchemaName();
  const services: Array<{ process: ServiceProcess; port: number }> = [];
  let sql: pg.Client;

  before(async () => {
    sql = new pg.Client({ connectionString: url });
    await sql.connect();
    for (let i = 0; i < 2; i++) {
      const started = startService({
        DATABASE_URL: url!, DATABASE_SCHEMA: schema, PORT: '0', OPERATOR_API_KEY: OPERATOR_KEY,
        PROVIDER_SECRET, SANDBOX_AUTOPILOT: 'false', RATE_LIMIT_PER_SECOND: '0',
      });
      services.push({ process: started, port: 0 });
      // One after the other: the first runs the migrations and takes the leases while the second waits.
      services[i]!.port = await listeningPort(started);
    }
  });
  after(async () => {
    for (const { process: service } of services) {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
    }
    await sql?.end();
    if (url) await dropSchemaAndProjections(url, schema);
  });

  const call = async (port: number, method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, headers: response.headers, body: await response.json() as any };
  };
  const ledgerLeaseOwner = async () => (await sql.query<{ lease_owner: string | null }>(
    `SELECT lease_owner FROM ${schema}.projection_state WHERE name = 'ledger' AND status = 'active'`)).rows[0]?.lease_owner ?? null;
  const balanceOf = async (accountId: string) => (await sql.query<{ balance: string }>(
    `SELECT balance::text FROM ${schema}.account_balances WHERE account_id = $1`, [accountId])).rows[0]?.balance ?? null;
  /** Process ids appear in lease owners as `<host>:<pid>:<random>`. */
  const pidOf = (owner: string) => Number(owner.split(':').at(-2));
  const leasesAcquired = async (port: number, projection: string) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`projection_lease_acquired_total{projection="${projection}"} `));
    return line === undefined ? null : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('kill -9 of the ledger lease holder: the other process takes the lease over and the ledger catches up', async () => {
    await until(async () => (await ledgerLeaseOwner()) !== null, { what: 'a process holds the ledger lease', timeoutMs: 30_000 });
    const holderPid = pidOf((await ledgerLeaseOwner())!);
    const holder = services.find((s) => s.process.child.pid === holderPid)!;
    const survivor = services.find((s) => s !== holder)!;
    expect(holder, `the lease holder (pid ${holderPid}) is one of the two processes`).to.not.equal(undefined);
    expect(await leasesAcquired(survivor.port, 'ledger'), 'the survivor has not held the ledger lease yet').to.equal(0);

    const operator = { 'x-operator-key': OPERATOR_KEY, 'user-agent': 'failover-test' };
    const client = (await call(survivor.port, 'POST', '/operator/clients', operator, { name: 'Failover shop' })).body;
    const auth = await call(survivor.port, 'POST', '/auth', { 'x-api-key': client.apiKey, 'user-agent': 'failover-test' },
      { clientId: client.clientId, clientSecret: client.clientSecret });
    const as = { 'x-api-key': client.apiKey, 'user-agent': 'failover-test', authorization: `Bearer ${auth.body.accessToken}` };
    const identity = await call(survivor.port, 'POST', '/identities', as, { type: 'ORGANIZATION', name: 'Shop', country: 'BRA' });
    const account = await call(survivor.port, 'POST', '/accounts', as, { identityId: identity.body.id, type: 'CHECKING', currency: 'BRL' });
    expect(account.status, JSON.stringify(account.body)).to.equal(201);
    const payment = await call(survivor.port, 'POST', '/payments', as, {
      externalId: 'failover-1', identityId: identity.body.id, type: 'PURCHASE', accountNumber: account.body.accountNumber,
      totalAmount: '50.00', currency: 'BRL', origins: [{ type: 'PIX', pix: { key: 'payer@example.com' } }],
    });
    expect(payment.status, JSON.stringify(payment.body)).to.equal(200);
    expect(await balanceOf(account.body.id), 'nothing credited before the settlement').to.not.equal('49.50');

    holder.process.child.kill('SIGKILL');
    await holder.process.exited;
    const received = await call(survivor.port, 'POST', '/payments/received', { 'user-agent': 'provider' },
      { transactionId: payment.body.id, signature: providerSignature(PROVIDER_SECRET, payment.body.id) });
    expect(received.status, JSON.stringify(received.body)).to.equal(200);
    // The answer waits for the read models at most READ_YOUR_WRITES_TIMEOUT_MS, which a takeover may outlast;
    // an answer that does not say it is stale shows the settlement.
    if (received.headers.get('x-read-models') !== 'stale') expect(received.body.status).to.equal('SETTLED');

    // The old lease runs out within PROJECTION_LEASE_MS of the holder's last heartbeat; the bound leaves room
    // for that, the survivor's next look at it, and catching up, and stays far below the old 30 s stall.
    await until(async () => (await balanceOf(account.body.id)) === '49.50', { what: 'the ledger credits the settlement', timeoutMs: 15_000 });
    expect(pidOf((await ledgerLeaseOwner())!)).to.equal(survivor.process.child.pid);
    expect(await leasesAcquired(survivor.port, 'ledger')).to.equal(1);
    expect(survivor.process.child.exitCode).to.equal(null);
  });
});

onPostgres('projection lease while the database is unreachable', function () {
  this.timeout(60_000);
  const schema = testSchemaName();
  let relay: TcpRelay;
  let viaRelay: Database;
  let direct: Database;
  const closers: Array<() => Promise<void>> = [];

  before(async () => {
    const target = new URL(url!);
    relay = await startTcpRelay(target.hostname, Number(target.port || 5432));
    const relayed = new URL(url!);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(relay.port);
    direct = await openDatabase({ kind: 'postgres', connectionString: url!, poolSize: 4 }, { schema });
    viaRelay = await openDatabase({ kind: 'postgres', connectionString: relayed.toString(), poolSize: 4 }, { schema });
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
    await viaRelay?.close().catch(() => undefined);
    await direct?.close();
    await relay?.close();
    if (url) await dropSchemaAndProjections(url, schema);
  });

  it('a holder that cannot renew keeps running, stops writing once its lease may have expired, and another takes over', async () => {
    const name = `cut_${process.pid % 1000}`;
    const fast = { idlePollMs: 20, leaseTtlMs: 1_000, heartbeatMs: 100, initialBackoffMs: 10, maxBackoffMs: 100 };
    const changes = { a: [] as LeaseChange[], b: [] as LeaseChange[] };
    const storeA = new PostgresEventStore(viaRelay);
    const storeB = new PostgresEventStore(direct);
    const a = new ProjectionDaemon(viaRelay, storeA, { ...fast, owner: 'behind-relay', onLeaseChange: (_p, c) => changes.a.push(c) })
      .addProjector(totalsProjector(name, 1));
    const b = new ProjectionDaemon(direct, storeB, { ...fast, owner: 'direct', onLeaseChange: (_p, c) => changes.b.push(c) })
      .addProjector(totalsProjector(name, 1));
    closers.push(async () => { await a.stop(); await storeA.close(); }, async () => { await b.stop(); await storeB.close(); });
    const [runnerA, runnerB] = [a.projectionRunners[0]!, b.projectionRunners[0]!];
    const stream = `acct-${randomUUID()}`;
    const deposit = (amount: number) => ({ type: 'Deposited', data: { amount } });

    a.start();
    await until(() => runnerA.holdsLease, { what: 'the first instance takes the lease' });
    b.start();
    await until(() => runnerB.state === 'standby', { what: 'the second instance waits' });
    const first = await storeB.append(stream, [deposit(1)], 'no_stream');
    expect(await a.waitFor(first.position, 10_000)).to.equal(true);

    relay.cut();
    await until(() => !runnerA.holdsLease, { what: 'the cut-off holder gives its lease up', timeoutMs: 10_000 });
    await until(() => runnerB.holdsLease, { what: 'the other instance takes it over', timeoutMs: 10_000 });
    const second = await storeB.append(stream, [deposit(2)], 0n);
    expect(await b.waitFor(second.position, 10_000)).to.equal(true);

    relay.restore();
    await until(async () => (await a.status().then(() => true, () => false)), { what: 'the first instance reaches the database again' });
    const third = await storeB.append(stream, [deposit(3)], 1n);
    expect(await b.waitFor(third.position, 10_000)).to.equal(true);
    expect(runnerA.holdsLease, 'the first instance stays on standby while the other holds the lease').to.equal(false);

    const applied = await direct.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${name}_applied WHERE stream = $1 GROUP BY event_id`, [stream]);
    expect(applied.rows.map((r) => r.n)).to.deep.equal([1, 1, 1]);
    const totals = await direct.query(`SELECT events, balance::int AS balance FROM ${name}_totals WHERE stream = $1`, [stream]);
    expect(totals.rows).to.deep.equal([{ events: 3, balance: 6 }]);
    expect(changes).to.deep.equal({ a: ['acquired', 'lost'], b: ['acquired'] });
  });
});
