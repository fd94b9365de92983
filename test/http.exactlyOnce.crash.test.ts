/**
 * A request retried with the same Idempotency-Key and body applies its effect once, whichever process died or lost
 * its database, and whenever: two service processes on a Postgres server of the test's own. Process A stops at a
 * failpoint right after an append (src/failpoints.ts); the test then kills it, or stops the database and lets it go
 * on; the client retries on process B. The stored events are counted directly, not through read models.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { depositSignature } from '../src/deposits/routes.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { listeningPort, startService, type ServiceProcess } from './support/serviceProcess.ts';
import { postgresBinaries, startThrowawayPostgres, type ThrowawayPostgres } from './support/throwawayPostgres.ts';
import { until } from './support/until.ts';

const OPERATOR_KEY = 'exactly-once-operator-key-0123456789';
const PROVIDER_SECRET = 'exactly-once-provider-secret';
const SCHEMA = 'exactly_once';
const UA = { 'user-agent': 'exactly-once-test' };

interface Answer { status: number; headers: Headers; body: any }

async function call(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method, headers: { ...UA, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/**
 * What a careful client does: the same request with the same key until it is not told to wait (409 in flight, 503),
 * each wait as long as Retry-After says. Answers the final answer and every status seen.
 */
async function retried(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const seen: number[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer = await call(port, method, path, headers, body);
    seen.push(answer.status);
    if (![409, 503].includes(answer.status) || Date.now() > deadline) return { answer, seen };
    expect(answer.headers.get('retry-after'), `a ${answer.status} says when to retry: ${JSON.stringify(answer.body)}`).to.match(/^\d+$/);
    await new Promise((resolve) => setTimeout(resolve, Number(answer.headers.get('retry-after')) * 1000));
  }
}

const suite = postgresBinaries() ? describe : describe.skip;

suite('a retried request applies once, whatever died (two service processes, a Postgres server of the test’s own)', function () {
  this.timeout(300_000);
  let database: ThrowawayPostgres;
  let sql: pg.Client;
  const processes: ServiceProcess[] = [];
  let survivor: number;
  let as: Record<string, string>;
  let clientId: string;

  const env = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: database.url, DATABASE_SCHEMA: SCHEMA, PORT: '0', OPERATOR_API_KEY: OPERATOR_KEY, PROVIDER_SECRET,
    SANDBOX_AUTOPILOT: 'false', RATE_LIMIT_PER_SECOND: '0', ADDRESS_RATE_LIMIT_PER_SECOND: '0', ...extra,
  });
  const start = async (extra: Record<string, string> = {}) => {
    const service = startService(env(extra));
    processes.push(service);
    return { service, port: await listeningPort(service) };
  };
  /** A process that stops right after appending an event of `eventType`, until killed or sent SIGUSR2. */
  const pausedAfter = (eventType: string) => start({ FAILPOINTS: `after-append:${eventType}=pause` });
  const reached = (service: ServiceProcess, eventType: string) =>
    until(() => service.output().includes(`failpoint after-append:${eventType} reached`), { what: `the process reaches ${eventType}`, timeoutMs: 30_000 });
  const kill = async (service: ServiceProcess) => {
    service.child.kill('SIGKILL');
    await service.exited;
  };
  const count = async (text: string, values: unknown[]) =>
    Number((await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${SCHEMA}.events WHERE ${text}`, values)).rows[0]!.n);

  let identityId: string;
  let account: { id: string; accountNumber: string };

  before(async () => {
    database = await startThrowawayPostgres();
    sql = new pg.Client({ connectionString: database.url });
    sql.on('error', () => undefined); // the tests stop the server under it; reconnect() opens a new one
    await sql.connect();
    survivor = (await start()).port;
    const client = (await call(survivor, 'POST', '/operator/clients', { 'x-operator-key': OPERATOR_KEY }, { name: 'Exactly once' })).body;
    clientId = client.clientId;
    const auth = await call(survivor, 'POST', '/auth', { 'x-api-key': client.apiKey }, { clientId, clientSecret: client.clientSecret });
    as = { 'x-api-key': client.apiKey, authorization: `Bearer ${auth.body.accessToken}` };
    identityId = (await call(survivor, 'POST', '/identities', as, { type: 'ORGANIZATION', name: 'Shop', country: 'BRA' })).body.id;
    account = (await call(survivor, 'POST', '/accounts', as, { identityId, type: 'CHECKING', currency: 'BRL' })).body;
  });
  after(async () => {
    for (const service of processes) if (service.child.exitCode === null && service.child.signalCode === null) await kill(service);
    await sql?.end().catch(() => undefined);
    database?.destroy();
  });

  async function reconnect(): Promise<void> {
    await sql.end().catch(() => undefined);
    sql = new pg.Client({ connectionString: database.url });
    sql.on('error', () => undefined);
    await sql.connect();
  }

  /** A SETTLED push payment into the account, through process B. */
  async function settledPayment(amount: string): Promise<string> {
    const created = await call(survivor, 'POST', '/payments', as, {
      externalId: `p-${randomUUID()}`, identityId, type: 'PURCHASE', accountNumber: account.accountNumber, totalAmount: amount, currency: 'BRL',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const received = await call(survivor, 'POST', '/payments/received', {},
      { transactionId: created.body.id, signature: providerSignature(PROVIDER_SECRET, created.body.id) });
    expect(received.body.status, JSON.stringify(received.body)).to.equal('SETTLED');
    return created.body.id as string;
  }

  /** An unassigned deposit, through process B. */
  async function unassignedDeposit(amount: string): Promise<string> {
    const notice = { clientId, depositId: `d-${randomUUID()}`, reference: 'NO-SUCH-ACCOUNT', amount, currency: 'BRL' as const };
    const received = await call(survivor, 'POST', '/payments/deposits', {}, {
      ...notice, originator: { firstName: 'Ana', documentNumber: '12345678' }, signature: depositSignature(PROVIDER_SECRET, notice),
    });
    expect(received.status, JSON.stringify(received.body)).to.equal(201);
    return received.body.id as string;
  }

  const refundsOf = (parentId: string) => count(`type = 'RefundCreated' AND data->>'parentPaymentId' = $1`, [parentId]);
  const creditsOf = (paymentId: string) => count(`type = 'AccountCredited' AND data->>'paymentId' = $1`, [paymentId]);
  const adjustmentsWith = (reason: string) => count(`type = 'AccountAdjusted' AND data->>'reason' = $1`, [reason]);

  describe('the process killed after its events are appended, before it answers', () => {
    it('a refund: the retry on another process answers the child the first run created; one child exists', async () => {
      // The survivor's refund reactor sees the request too and may create the child first (under load it sometimes
      // does): then the first process appends no RefundCreated, never pauses, and answers. That run is not the case
      // under test, so it is tried again on a new parent.
      let parent = '';
      let key = '';
      for (let attempt = 1; ; attempt++) {
        parent = await settledPayment('30.00');
        const { service, port } = await pausedAfter('RefundCreated');
        key = randomUUID();
        let answered = false;
        const first = call(port, 'POST', `/payments/${parent}/refund`, { ...as, 'idempotency-key': key }, { amount: '1.00' })
          .catch(() => null).finally(() => { answered = true; });
        await until(() => answered || service.output().includes('failpoint after-append:RefundCreated reached'),
          { what: 'the process reaches RefundCreated, or answers', timeoutMs: 30_000 });
        const paused = !answered;
        await kill(service);
        if (paused) {
          expect(await first, 'the first run never answered').to.equal(null);
          break;
        }
        expect(attempt, 'the first process created the child itself in one of three attempts').to.be.below(3);
      }
      const child = (await sql.query<{ id: string }>(`SELECT data->>'refundId' AS id FROM ${SCHEMA}.events
        WHERE type = 'RefundCreated' AND data->>'parentPaymentId' = $1`, [parent])).rows[0]!.id;

      const { answer } = await retried(survivor, 'POST', `/payments/${parent}/refund`, { ...as, 'idempotency-key': key }, { amount: '1.00' });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(201);
      expect(answer.body.id).to.equal(child);
      expect(await refundsOf(parent)).to.equal(1);
      // The parent's acceptance is appended beside the child's creation: recorded once, whichever run recorded it.
      expect(await count(`type = 'PaymentRefundAccepted' AND data->>'refundId' = $1`, [child])).to.equal(1);
    });

    it('an assignment: the retry answers the settled deposit; the account credited it once', async () => {
      const deposit = await unassignedDeposit('12.00');
      const { service, port } = await pausedAfter('AccountCredited');
      const key = randomUUID();
      const first = call(port, 'POST', `/payments/${deposit}/assign`, { ...as, 'idempotency-key': key }, { accountId: account.id }).catch(() => null);
      await reached(service, 'AccountCredited');
      await kill(service);
      expect(await first).to.equal(null);

      const { answer } = await retried(survivor, 'POST', `/payments/${deposit}/assign`, { ...as, 'idempotency-key': key }, { accountId: account.id });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body).to.include({ id: deposit, status: 'SETTLED' });
      expect(await creditsOf(deposit)).to.equal(1);
    });

    it('an operator adjustment: the retry answers the account; one adjustment exists', async () => {
      const reason = `adjustment ${randomUUID()}`;
      const { service, port } = await pausedAfter('AccountAdjusted');
      const key = randomUUID();
      const headers = { 'x-operator-key': OPERATOR_KEY, 'idempotency-key': key };
      const first = call(port, 'POST', `/operator/accounts/${account.id}/adjustments`, headers, { amount: '5.00', reason }).catch(() => null);
      await reached(service, 'AccountAdjusted');
      await kill(service);
      expect(await first).to.equal(null);

      const { answer } = await retried(survivor, 'POST', `/operator/accounts/${account.id}/adjustments`, headers, { amount: '5.00', reason });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(201);
      expect(answer.body.id).to.equal(account.id);
      expect(await adjustmentsWith(reason)).to.equal(1);
    });
  });

  describe('the database stopped between the append and the answer', () => {
    /**
     * Process A appends `eventType` and stops; the database stops; A goes on and must answer 503 with Retry-After;
     * the database comes back; the client retries on B.
     */
    async function outageAfter(eventType: string, method: string, path: string, headers: Record<string, string>, body: unknown) {
      const { service, port } = await pausedAfter(eventType);
      const first = call(port, method, path, headers, body);
      await reached(service, eventType);
      database.stop();
      service.child.kill('SIGUSR2');
      const answer = await first;
      expect(answer.status, JSON.stringify(answer.body)).to.equal(503);
      expect(answer.body.error).to.equal('serviceUnavailable');
      expect(answer.headers.get('retry-after')).to.match(/^\d+$/);
      database.start();
      await reconnect();
      const retry = await retried(survivor, method, path, headers, body);
      await kill(service);
      return retry.answer;
    }

    it('a refund: 503, then the retry answers the one child', async () => {
      const parent = await settledPayment('30.00');
      const headers = { ...as, 'idempotency-key': randomUUID() };
      const answer = await outageAfter('PaymentRefundRequested', 'POST', `/payments/${parent}/refund`, headers, { amount: '2.00' });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(201);
      expect(await refundsOf(parent)).to.equal(1);
      const child = (await sql.query<{ id: string }>(`SELECT data->>'refundId' AS id FROM ${SCHEMA}.events
        WHERE type = 'RefundCreated' AND data->>'parentPaymentId' = $1`, [parent])).rows[0]!.id;
      expect(answer.body.id).to.equal(child);
    });

    it('an assignment: 503, then the retry answers the settled deposit, credited once', async () => {
      const deposit = await unassignedDeposit('13.00');
      const headers = { ...as, 'idempotency-key': randomUUID() };
      const answer = await outageAfter('DepositAssignmentRequested', 'POST', `/payments/${deposit}/assign`, headers, { accountId: account.id });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answer.body).to.include({ id: deposit, status: 'SETTLED' });
      expect(await creditsOf(deposit)).to.equal(1);
    });

    it('an operator adjustment: 503, then the retry answers the account, adjusted once', async () => {
      const reason = `adjustment ${randomUUID()}`;
      const headers = { 'x-operator-key': OPERATOR_KEY, 'idempotency-key': randomUUID() };
      const answer = await outageAfter('AccountAdjusted', 'POST', `/operator/accounts/${account.id}/adjustments`, headers, { amount: '3.00', reason });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(201);
      expect(await adjustmentsWith(reason)).to.equal(1);
    });
  });

  it('with the database stopped, writes and reads answer 503 with Retry-After and /ready 503; back, the same process serves again and nothing acknowledged is lost', async () => {
    const acknowledged = await settledPayment('7.00');
    database.stop();
    try {
      const write = await call(survivor, 'POST', '/payments', { ...as, 'idempotency-key': randomUUID() }, {
        externalId: `p-${randomUUID()}`, identityId, type: 'PURCHASE', accountNumber: account.accountNumber, totalAmount: '1.00', currency: 'BRL',
      });
      const read = await call(survivor, 'GET', `/payments/${acknowledged}`, as);
      const ready = await call(survivor, 'GET', '/ready', {});
      for (const answer of [write, read]) {
        expect(answer.status, JSON.stringify(answer.body)).to.equal(503);
        expect(answer.body.error).to.equal('serviceUnavailable');
        expect(answer.body.message).to.match(/database/);
        expect(answer.headers.get('retry-after')).to.match(/^\d+$/);
      }
      expect(ready.status).to.equal(503);
    } finally {
      database.start();
    }
    await reconnect();
    await until(async () => (await call(survivor, 'GET', '/ready', {})).status === 200, { what: 'the service is ready again', timeoutMs: 30_000 });
    const read = await call(survivor, 'GET', `/payments/${acknowledged}`, as);
    expect(read.status).to.equal(200);
    expect(read.body.status).to.equal('SETTLED');
    await settledPayment('1.00');
  });
});
