/**
 * A checkout session reserved for a payment whose pay call's process dies (or stalls) between the reservation and
 * the payment's creation, with real service processes on one Postgres schema: a failpoint stops the paying process
 * exactly there (src/failpoints.ts), another process's release job gives the session back, and a payment that does
 * appear later still takes the session.
 */
import { expect } from 'chai';
import pg from 'pg';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { listeningPort, startService, type ServiceProcess } from './support/serviceProcess.ts';
import { testSchemaName } from './support/targets.ts';
import { TEST_CARD } from './support/payments.ts';
import { until } from './support/until.ts';

const OPERATOR_KEY = 'reservations-operator-key-0123456789';
const TIMEOUT_SECONDS = 3;
/** The bound: a stalled reservation is released at most 30 s after its timeout. */
const RELEASE_BOUND_MS = (TIMEOUT_SECONDS + 30) * 1000;
const REACHED = 'failpoint checkout.afterReservation reached';

const url = process.env.DATABASE_URL;
/** Needs real Postgres: several processes share the store (the embedded one has one user). Pending without it. */
const onPostgres = (title: string, suite: (this: Mocha.Suite) => void) =>
  url ? describe(`${title}: postgres`, suite) : describe.skip(`${title}: needs DATABASE_URL (real Postgres)`, suite);

onPostgres('checkout reservations whose payment does not appear', function () {
  this.timeout(240_000);
  const schema = testSchemaName();
  const env = {
    DATABASE_URL: url!, DATABASE_SCHEMA: schema, PORT: '0', OPERATOR_API_KEY: OPERATOR_KEY, RATE_LIMIT_PER_SECOND: '0',
    ADDRESS_RATE_LIMIT_PER_SECOND: '0', CHECKOUT_RESERVATION_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS), SETTLEMENT_CRON: '*/2 * * * * *',
  };
  const started: ServiceProcess[] = [];
  let sql: pg.Client;
  let port: number;
  let as: Record<string, string>;
  let identityId: string;
  let accountNumber: string;

  const start = async (extra: Record<string, string> = {}) => {
    const service = startService({ ...env, ...extra });
    started.push(service);
    return { service, port: await listeningPort(service) };
  };
  const call = async (at: number, method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${at}${path}`, {
      method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: await response.json() as any };
  };
  const newSession = async () => {
    const created = await call(port, 'POST', '/checkout-sessions', as, {
      items: [{ description: 'Coffee 1 kg', preTaxAmount: '10000' }], currency: 'CLP', paymentMethodsAllowed: ['CARD'], duration: 600,
      destinations: [{ type: 'ACCOUNT', amount: '10000', account: { type: 'CHECKING', currency: 'CLP', accountNumber, accountHolder: 'Shop' } }],
      owner: { identityId },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    return created.body as { id: string; checkoutToken: string };
  };
  const hostedPay = (at: number, token: string) => call(at, 'POST', `/checkout/${token}/pay`, { 'user-agent': 'payer' },
    { method: 'CARD', fields: { ...TEST_CARD, cvv: '123' }, customer: { email: 'ana@example.com', firstName: 'Ana' } });
  const session = async (id: string) => (await call(port, 'GET', `/checkout-sessions/${id}`, as)).body as { status: string; paymentId: string | null };
  const sessionEvents = async (id: string) => (await sql.query<{ type: string }>(
    `SELECT type FROM ${schema}.events WHERE stream = $1 ORDER BY revision`, [`checkout-session-${id}`])).rows.map((r) => r.type);
  /** Seconds from the reservation to its release, as the store recorded them. */
  const releasedAfterSeconds = async (id: string) => Number((await sql.query<{ s: string }>(
    `SELECT extract(epoch FROM max(recorded_at) FILTER (WHERE type = 'CheckoutSessionPaymentReleased')
                           - max(recorded_at) FILTER (WHERE type = 'CheckoutSessionPaymentStarted')) AS s
       FROM ${schema}.events WHERE stream = $1`, [`checkout-session-${id}`])).rows[0]!.s);
  const paymentsOf = async (id: string) => (await call(port, 'GET', `/payments?checkoutSessionId=${id}`, as)).body.results as Array<{ id: string; status: string }>;

  before(async () => {
    sql = new pg.Client({ connectionString: url });
    await sql.connect();
    // The process that stays up: it serves the checks and runs the release job (the paying ones run it too).
    ({ port } = await start());
    const operator = { 'x-operator-key': OPERATOR_KEY, 'user-agent': 'reservations-test' };
    const client = (await call(port, 'POST', '/operator/clients', operator, { name: 'Reservations shop' })).body;
    const auth = await call(port, 'POST', '/auth', { 'x-api-key': client.apiKey, 'user-agent': 'reservations-test' },
      { clientId: client.clientId, clientSecret: client.clientSecret });
    as = { 'x-api-key': client.apiKey, 'user-agent': 'reservations-test', authorization: `Bearer ${auth.body.accessToken}` };
    identityId = (await call(port, 'POST', '/identities', as, { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    const account = await call(port, 'POST', '/accounts', as, { identityId, type: 'CHECKING', currency: 'CLP' });
    expect(account.status, JSON.stringify(account.body)).to.equal(201);
    accountNumber = account.body.accountNumber;
  });
  after(async () => {
    for (const service of started) {
      if (service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
    }
    await sql?.end();
    if (url) await dropSchemaAndProjections(url, schema);
  });

  it('a pay from the hosted page whose process is SIGKILLed after the reservation: the session is ACTIVE again and can be paid', async () => {
    const paying = await start({ FAILPOINTS: 'checkout.afterReservation=pause' });
    const { id, checkoutToken } = await newSession();
    // Never answered: the process stops at the failpoint and is killed there.
    const lost = hostedPay(paying.port, checkoutToken).catch((error: unknown) => error);
    await until(() => paying.service.output().includes(REACHED), { what: 'the paying process reached the failpoint' });
    paying.service.child.kill('SIGKILL');
    await paying.service.exited;
    expect(await lost).to.be.instanceOf(Error);
    expect((await sessionEvents(id)).at(-1)).to.equal('CheckoutSessionPaymentStarted');

    await until(async () => (await sessionEvents(id)).includes('CheckoutSessionPaymentReleased'),
      { what: 'the reservation released', timeoutMs: RELEASE_BOUND_MS, intervalMs: 200 });
    const waited = await releasedAfterSeconds(id);
    expect(waited).to.be.at.least(TIMEOUT_SECONDS).and.at.most(TIMEOUT_SECONDS + 30);
    await until(async () => (await session(id)).status === 'ACTIVE', { what: 'the session reads ACTIVE', timeoutMs: 30_000, intervalMs: 200 });
    expect(await session(id)).to.include({ status: 'ACTIVE', paymentId: null });
    expect(await paymentsOf(id)).to.deep.equal([]);
    expect(await sessionEvents(id)).to.deep.equal(['CheckoutSessionCreated', 'CheckoutSessionPaymentStarted', 'CheckoutSessionPaymentReleased']);

    const paid = await hostedPay(port, checkoutToken);
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    await until(async () => (await session(id)).status === 'FINISHED', { what: 'the session finished with its payment', timeoutMs: 60_000, intervalMs: 200 });
    // The payments' read model is its own projector: it may show the payment SETTLED a moment after the session's.
    await until(async () => (await paymentsOf(id))[0]?.status === 'SETTLED', { what: 'the payment reads SETTLED', timeoutMs: 60_000, intervalMs: 200 });
    const [payment] = await paymentsOf(id);
    expect(payment).to.include({ status: 'SETTLED' });
    expect((await session(id)).paymentId).to.equal(payment!.id);
    // Released once, whichever of the processes' jobs asked first.
    expect((await sessionEvents(id)).filter((type) => type === 'CheckoutSessionPaymentReleased')).to.have.length(1);
  });

  it('a payment recorded late, after the reservation was released: the session follows the payment', async () => {
    // The paying process stalls at the failpoint past the timeout; once the session is released it goes on (SIGUSR2
    // resumes a paused failpoint) and creates the payment.
    const paying = await start({ FAILPOINTS: 'checkout.afterReservation=pause' });
    const { id, checkoutToken } = await newSession();
    const late = hostedPay(paying.port, checkoutToken);
    await until(() => paying.service.output().includes(REACHED), { what: 'the paying process reached the failpoint' });
    await until(async () => (await sessionEvents(id)).includes('CheckoutSessionPaymentReleased'),
      { what: 'the reservation released', timeoutMs: RELEASE_BOUND_MS, intervalMs: 200 });
    expect(await paymentsOf(id)).to.deep.equal([]);
    paying.service.child.kill('SIGUSR2');

    const answer = await late;
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    await until(async () => (await session(id)).status === 'FINISHED', { what: 'the session follows the late payment', timeoutMs: 60_000, intervalMs: 200 });
    // The payments' read model is its own projector: it may show the payment SETTLED a moment after the session's.
    await until(async () => (await paymentsOf(id))[0]?.status === 'SETTLED', { what: 'the payment reads SETTLED', timeoutMs: 60_000, intervalMs: 200 });
    const [payment] = await paymentsOf(id);
    expect(payment).to.include({ status: 'SETTLED' });
    expect((await session(id)).paymentId).to.equal(payment!.id);
    expect(await sessionEvents(id)).to.deep.equal([
      'CheckoutSessionCreated', 'CheckoutSessionPaymentStarted', 'CheckoutSessionPaymentReleased', 'CheckoutSessionPaymentStarted',
      'CheckoutSessionFinished',
    ]);
  });
});
