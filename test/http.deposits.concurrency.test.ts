/**
 * Deposits decided by their streams with two service instances over one database racing each other: two
 * assignments of one deposit, an assignment against a block of its account, and the expiry job running on both
 * instances at once. Each race has exactly one outcome, and money never
 * lands in an account after it was blocked.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { accountStream } from '../src/accounts/events.ts';
import { paymentStream } from '../src/payments/events.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { expireUnassignedDeposits } from '../src/deposits/jobs.ts';
import { refundStream } from '../src/payments/refunds/events.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const ROUNDS = Number(process.env.INVARIANT_ROUNDS ?? 8);
const HOUR_MS = 60 * 60 * 1000;

for (const target of databaseTargets()) {
  describe(`deposits under concurrency, two service instances: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let one: TestService;
    let two: TestService;
    let clientId: string;
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;
    let offsetMs = 0;
    // Both instances read the same clock, which the expiry tests move.
    const clock: Runtime = { now: () => new Date(Date.now() + offsetMs), newId: () => randomUUID() };

    const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET };
    const post = (service: TestService, path: string, body?: unknown) => service.request('POST', path, { headers, body });
    const typesOf = async (stream: string) => (await one.services.storage.store.readStream(stream, { limit: 10_000 })).map((e) => e.type);
    const balance = async (accountId: string) => (await database.query<{ balance: string }>(
      'SELECT balance::text FROM account_balances WHERE account_id = $1', [accountId])).rows[0]?.balance ?? '0';
    const noServerErrors = (answers: ApiResponse[]) =>
      expect(answers.filter((a) => a.status >= 500).map((a) => `${a.status} ${a.text}`)).to.deep.equal([]);
    const newAccount = async () => {
      const account = await post(one, '/accounts', { identityId, type: 'CHECKING', currency: 'CLP' });
      expect(account.status, account.text).to.equal(201);
      return account.body.id as string;
    };
    const newDeposit = async () => {
      const body = { clientId, depositId: `race-${++sequence}`, reference: 'unknown', amount: '5000', currency: 'CLP' as const,
        originator: { firstName: 'Rosa', documentNumber: '11.111.111-1' } };
      const answer = await one.request('POST', '/payments/deposits', { body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) } });
      expect(answer.status, answer.text).to.equal(201);
      return answer.body.id as string;
    };

    before(async () => {
      database = await target.open();
      one = await startTestService(database, { env, runtime: clock });
      two = await startTestService(database, { env, runtime: clock });
      const client = await one.createClient('Racer');
      clientId = client.clientId;
      headers = await one.as(client);
      identityId = (await post(one, '/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    });
    after(async () => {
      await one?.close();
      await two?.close();
      await database?.close();
    });

    it('two assignments of one deposit, one per instance, to two accounts: exactly one takes it', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [first, second] = [await newAccount(), await newAccount()];
        const deposit = await newDeposit();
        const answers = await Promise.all([
          post(one, `/payments/${deposit}/assign`, { accountId: first }), post(two, `/payments/${deposit}/assign`, { accountId: second })]);
        noServerErrors(answers);
        expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join(' | ')).to.deep.equal([200, 422]);
        const winner = answers[0]!.status === 200 ? first : second;
        const loser = winner === first ? second : first;
        expect((await typesOf(paymentStream(deposit))).filter((t) => t === 'PaymentSettled')).to.have.length(1);
        expect(await typesOf(accountStream(winner))).to.deep.equal(['AccountOpened', 'AccountCredited']);
        expect(await typesOf(accountStream(loser))).to.deep.equal(['AccountOpened']);
        await until(async () => (await balance(winner)) === '5000', { what: 'the winner credited' });
        expect(await balance(loser)).to.equal('0');
      }
    });

    it('an assignment racing a block of its account: the account took the funds before the block, or the deposit still waits', async () => {
      const outcomes = new Set<string>();
      for (let round = 0; round < ROUNDS; round++) {
        const accountId = await newAccount();
        const deposit = await newDeposit();
        const [assigned, blocked] = await Promise.all([
          post(one, `/payments/${deposit}/assign`, { accountId }), two.request('PATCH', `/accounts/${accountId}`, { headers, body: { status: 'BLOCKED' } })]);
        noServerErrors([assigned, blocked]);
        expect(blocked.status, blocked.text).to.equal(200);
        expect([200, 422], assigned.text).to.include(assigned.status);
        const history = await typesOf(accountStream(accountId));
        if (assigned.status === 200) {
          expect(history).to.deep.equal(['AccountOpened', 'AccountCredited', 'AccountStatusChanged']);
          expect((await one.request('GET', `/payments/${deposit}`, { headers })).body.status).to.equal('SETTLED');
        } else {
          expect(assigned.body.message).to.include('BLOCKED');
          // Refused before anything was recorded, or by the account's own answer after the block.
          expect([['AccountOpened', 'AccountStatusChanged'], ['AccountOpened', 'AccountStatusChanged', 'AccountCreditRefused']]).to.deep.include(history);
          const deposited = await typesOf(paymentStream(deposit));
          expect(deposited).not.to.include('PaymentSettled');
          if (deposited.includes('DepositAssignmentRequested')) expect(deposited.at(-1)).to.equal('DepositAssignmentRefused');
          expect((await one.request('GET', `/payments/${deposit}`, { headers })).body.status).to.equal('CREATED');
          expect(await balance(accountId)).to.equal('0');
        }
        outcomes.add(assigned.status === 200 ? 'credited first' : 'blocked first');
      }
      expect(outcomes.size).to.be.greaterThan(0);
    });

    it('the expiry job on both instances at once: each deposit past its expiresAt expires once, its refund child issued once', async () => {
      const accountId = await newAccount();
      await Promise.all(Array.from({ length: 6 }, () => newDeposit()));
      const waiting = (await database.query<{ payment_id: string }>(
        "SELECT payment_id FROM deposits WHERE client_id = $1 AND status = 'CREATED'", [clientId])).rows.map((row) => row.payment_id);
      expect(waiting.length).to.be.at.least(6);
      offsetMs = 48 * HOUR_MS;
      try {
        const runs = await Promise.all([expireUnassignedDeposits(one.services), expireUnassignedDeposits(two.services)]);
        expect(runs.reduce((sum, run) => sum + run.expired, 0)).to.equal(waiting.length);
        for (const deposit of waiting) {
          const types = await typesOf(paymentStream(deposit));
          expect(types.filter((t) => t === 'PaymentExpired'), deposit).to.have.length(1);
          expect(types.filter((t) => t === 'DepositRefundDue'), deposit).to.have.length(1);
          const due = (await one.services.storage.store.readStream(paymentStream(deposit), { limit: 100 })).find((e) => e.type === 'DepositRefundDue')!;
          expect(await typesOf(refundStream((due.data as { refundPaymentId: string }).refundPaymentId)), 'one refund child').to.deep.equal(['RefundCreated']);
        }
        expect(await balance(accountId)).to.equal('0');
      } finally {
        offsetMs = 0;
      }
    });
  });
}
