/**
 * Money rules that span a payment and an account, decided by the account's stream, with two service instances
 * over one database racing each other: a close or a block against a settlement, and many writers on one
 * account or one payment at once.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { accountStream } from '../src/accounts/events.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { providerReceipts } from './support/payments.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const ROUNDS = Number(process.env.INVARIANT_ROUNDS ?? 8);

for (const target of databaseTargets()) {
  describe(`account invariants under concurrency, two service instances: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let one: TestService;
    let two: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;

    const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET };
    const via = (service: TestService) => ({
      post: (path: string, body?: unknown) => service.request('POST', path, { headers, body }),
      patch: (path: string, body: unknown) => service.request('PATCH', path, { headers, body }),
      delete: (path: string) => service.request('DELETE', path, { headers }),
      get: (path: string) => service.request('GET', path, { headers }),
      received: providerReceipts(() => service, PROVIDER_SECRET),
    });
    const accountEvents = async (accountId: string) =>
      (await one.services.storage.store.readStream(accountStream(accountId), { limit: 10_000 })).map((e) => e.type);
    const ledgerBalance = async (accountId: string) => (await database.query<{ balance: string }>(
      'SELECT balance::text FROM account_balances WHERE account_id = $1', [accountId])).rows[0]?.balance ?? '0';

    /** A CLP account and a push payment of 1000 CLP to it (INSTANT, no fee), ready to be received. */
    async function accountWithPayment(): Promise<{ accountId: string; paymentId: string }> {
      const account = await via(one).post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' });
      expect(account.status).to.equal(201);
      const payment = await via(one).post('/payments', { externalId: `race-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.body.accountNumber, totalAmount: '1000', currency: 'CLP' });
      expect(payment.status, payment.text).to.equal(200);
      return { accountId: account.body.id, paymentId: payment.body.id };
    }
    const paymentOf = async (paymentId: string) => {
      const events = (await via(one).get(`/payments/${paymentId}/events`)).body.events as Array<{ type: string; data: Record<string, unknown> }>;
      return events[events.length - 1]!;
    };
    const noServerErrors = (answers: ApiResponse[]) =>
      expect(answers.filter((a) => a.status >= 500).map((a) => `${a.status} ${a.text}`)).to.deep.equal([]);

    before(async () => {
      database = await target.open();
      one = await startTestService(database, { env });
      two = await startTestService(database, { env });
      headers = await one.as(await one.createClient('Racer'));
      identityId = (await via(one).post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    });
    after(async () => {
      await one?.close();
      await two?.close();
      await database?.close();
    });

    it('a close racing a settlement: either the account closes empty and the funds wait in suspense, or it keeps the money and stays', async () => {
      const outcomes = new Set<string>();
      for (let round = 0; round < ROUNDS; round++) {
        const { accountId, paymentId } = await accountWithPayment();
        const [closed, received] = await Promise.all([via(one).delete(`/accounts/${accountId}`), via(two).received(paymentId)]);
        noServerErrors([closed, received]);
        expect(received.status, received.text).to.equal(200);
        expect([200, 422], closed.text).to.include(closed.status);
        await until(async () => ['PaymentSettled', 'PaymentUnsettled'].includes((await paymentOf(paymentId)).type));
        const last = await paymentOf(paymentId);
        if (closed.status === 200) {
          expect(last.type, 'a closed account was credited').to.equal('PaymentUnsettled');
          expect(last.data).to.include({ reason: 'ACCOUNT_NOT_ACTIVE' });
          expect(await accountEvents(accountId)).to.deep.equal(['AccountOpened', 'AccountClosed', 'AccountCreditRefused']);
          expect(await ledgerBalance(accountId)).to.equal('0');
        } else {
          expect(last.type).to.equal('PaymentSettled');
          expect(closed.body.message).to.match(/holds 1000 CLP/);
          expect(await accountEvents(accountId)).to.deep.equal(['AccountOpened', 'AccountCredited']);
          expect((await via(one).get(`/accounts/${accountId}`)).body.balance).to.equal('1000');
        }
        outcomes.add(closed.status === 200 ? 'closed first' : 'credited first');
      }
      expect(outcomes.size).to.be.greaterThan(0);
    });

    it('a block racing a settlement: money lands in a blocked account only if it arrived before the block', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const { accountId, paymentId } = await accountWithPayment();
        const [blocked, received] = await Promise.all([
          via(two).patch(`/accounts/${accountId}`, { status: 'BLOCKED' }), via(one).received(paymentId)]);
        noServerErrors([blocked, received]);
        expect([blocked.status, received.status]).to.deep.equal([200, 200]);
        await until(async () => ['PaymentSettled', 'PaymentUnsettled'].includes((await paymentOf(paymentId)).type));
        const history = await accountEvents(accountId);
        if ((await paymentOf(paymentId)).type === 'PaymentSettled') {
          expect(history).to.deep.equal(['AccountOpened', 'AccountCredited', 'AccountStatusChanged']);
        } else {
          expect(history).to.deep.equal(['AccountOpened', 'AccountStatusChanged', 'AccountCreditRefused']);
        }
      }
    });

    it('30 adjustments of one account from two instances at once: each applied once or refused with 409 and Retry-After, never a 5xx', async () => {
      const account = await via(one).post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' });
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? one : two).operator('POST', `/operator/accounts/${account.body.id}/adjustments`, { amount: '1.25', reason: `r${i}` })));
      noServerErrors(answers);
      for (const answer of answers) {
        expect([201, 409], answer.text).to.include(answer.status);
        if (answer.status === 409) expect(answer.headers.get('retry-after')).to.match(/^\d+$/);
      }
      const applied = answers.filter((a) => a.status === 201).length;
      expect((await accountEvents(account.body.id)).filter((t) => t === 'AccountAdjusted')).to.have.length(applied);
      await until(async () => (await via(one).get(`/accounts/${account.body.id}`)).body.balance === (applied * 1.25).toFixed(2));
    });

    it('30 review documents attached to one payment from two instances at once: at most 20 taken, the rest refused, never a 5xx', async () => {
      const account = await via(one).post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' });
      const payment = await via(one).post('/payments', { externalId: `docs-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.body.accountNumber, totalAmount: '1000', currency: 'CLP', description: 'sandbox:review' });
      expect(payment.body.status).to.equal('REQUIRES_REVIEW');
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        via(i % 2 === 0 ? one : two).post(`/payments/${payment.body.id}/documents`, { type: 'INVOICE', url: `https://example.com/${i}` })));
      noServerErrors(answers);
      for (const answer of answers) expect([201, 409, 422], answer.text).to.include(answer.status);
      const taken = answers.filter((a) => a.status === 201).length;
      expect(taken).to.be.within(1, 20);
      const events = (await via(one).get(`/payments/${payment.body.id}/events`)).body.events as Array<{ type: string }>;
      expect(events.filter((e) => e.type === 'PaymentDocumentAttached')).to.have.length(taken);
    });
  });
}
