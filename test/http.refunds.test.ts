/**
 * Refunds through the API: the request and its refusals, every end of a refund child (settled, failed,
 * unsettled, expired) with its ledger effects, the provider's signed notification, the listings and summary,
 * tenancy, and the sandbox autopilot with its triggers.
 */
import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { providerReceipts } from './support/payments.ts';
import { until } from './support/until.ts';
import { refundNotificationSignature } from '../src/payments/refunds/routes.ts';
import { TRIGGERS } from '../src/payments/sandbox/triggers.ts';
import type { Database } from '../src/db/database.ts';

const PROVIDER_SECRET = 'refunds-provider-secret';

interface Balances { balance: string; held: string; available: string }

for (const target of databaseTargets()) {
  describe(`refunds: ${target.name}`, function () {
    this.timeout(120_000);
    let tenants: TwoTenants;
    let service: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;

    const post = (path: string, body?: unknown, as = headers) => service.request('POST', path, { headers: as, body });
    const get = (path: string, as = headers) => service.request('GET', path, { headers: as });
    const notify = (refundId: string, outcome: string, signature = refundNotificationSignature(PROVIDER_SECRET, refundId, outcome)) =>
      service.request('POST', '/refunds/notifications', { headers: { 'user-agent': 'provider' }, body: { refundId, outcome, signature } });
    const balances = async (accountId: string): Promise<Balances> => {
      const row = (await tenants.database.query<{ balance: string; held: string; available: string }>(
        'SELECT balance::text, held::text, available_funds::text AS available FROM account_balances WHERE account_id = $1', [accountId])).rows[0];
      return row ? { balance: String(Number(row.balance)), held: String(Number(row.held)), available: String(Number(row.available)) } : { balance: '0', held: '0', available: '0' };
    };
    const trialBalanceUnbalanced = async () => (await tenants.database.query('SELECT currency FROM trial_balance WHERE NOT balanced')).rows;

    /** A CLP account paid `amount` by a push payment the provider delivered (INSTANT, no fee): SETTLED. */
    async function settledPayment(amount = '1000'): Promise<{ paymentId: string; accountId: string }> {
      const account = await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' });
      expect(account.status, account.text).to.equal(201);
      const payment = await post('/payments', { externalId: `refund-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.body.accountNumber, totalAmount: amount, currency: 'CLP' });
      expect(payment.status, payment.text).to.equal(200);
      const received = await providerReceipts(() => service, PROVIDER_SECRET)(payment.body.id);
      expect(received.body.status, received.text).to.equal('SETTLED');
      return { paymentId: payment.body.id, accountId: account.body.id };
    }

    before(async () => {
      tenants = await startTwoTenants(target, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      service = tenants.service;
      headers = tenants.asAlice;
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    });
    after(async () => {
      await tenants?.close();
    });

    it('refunds part of a SETTLED payment: 201 with a RECEIVED child, the account holds the amount, the parent stays SETTLED', async () => {
      const { paymentId, accountId } = await settledPayment();
      const refund = await post(`/payments/${paymentId}/refund`, { amount: '300', reason: 'damaged item' });
      expect(refund.status, refund.text).to.equal(201);
      expect(refund.body).to.include({ parentPaymentId: paymentId, status: 'RECEIVED', totalAmount: '300', currency: 'CLP', description: 'damaged item' });
      expect(await balances(accountId)).to.deep.equal({ balance: '1000', held: '300', available: '700' });
      expect((await get(`/accounts/${accountId}`)).body).to.include({ balance: '1000', availableFunds: '700' });
      const parent = (await get(`/payments/${paymentId}`)).body;
      expect(parent.status).to.equal('SETTLED');
      const children = await get(`/payments/${paymentId}/refund`);
      expect(children.status).to.equal(200);
      expect(children.body).to.deep.equal({ total: 1, refunds: [refund.body] });
      expect((await get(`/payments/${paymentId}/refunds`)).body).to.deep.equal({
        parentPaymentId: paymentId, parentAmount: '1000', currency: 'CLP', totalRefunded: '0', totalInProgress: '300', totalFailed: '0',
        maxRefundable: '700', completedCount: 0, inProgressCount: 1, failedCount: 0,
      });
      // The parent's history records the reservation and the account's acceptance.
      const types = ((await get(`/payments/${paymentId}/events`)).body.events as Array<{ type: string }>).map((e) => e.type);
      expect(types.slice(-2)).to.deep.equal(['PaymentRefundRequested', 'PaymentRefundAccepted']);
    });

    it('an omitted amount refunds all that is left; then nothing is left (422)', async () => {
      const { paymentId } = await settledPayment('1000');
      expect((await post(`/payments/${paymentId}/refund`, { amount: '250' })).status).to.equal(201);
      const rest = await post(`/payments/${paymentId}/refund`, {});
      expect(rest.status, rest.text).to.equal(201);
      expect(rest.body.totalAmount).to.equal('750');
      const more = await post(`/payments/${paymentId}/refund`, {});
      expect(more.status).to.equal(422);
      expect(more.body).to.include({ error: 'failedPrecondition' });
      expect(more.body.message).to.match(/nothing left to refund/);
    });

    it('refuses with 422, naming the reason and changing nothing: over the remainder, a parent not SETTLED, more than the available funds', async () => {
      const { paymentId, accountId } = await settledPayment('1000');
      const before = await service.eventCount();
      const over = await post(`/payments/${paymentId}/refund`, { amount: '1001' });
      expect(over.status).to.equal(422);
      expect(over.body.message).to.match(/exceeds what is left to refund .*: 1000 CLP/);
      expect(await service.eventCount()).to.equal(before);

      const account = (await get(`/accounts/${accountId}`)).body;
      const unpaid = await post('/payments', { externalId: `unpaid-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.accountNumber, totalAmount: '10', currency: 'CLP' });
      const notSettled = await post(`/payments/${unpaid.body.id}/refund`, {});
      expect(notSettled.status).to.equal(422);
      expect(notSettled.body.message).to.match(/is CREATED; only a SETTLED payment can be refunded/);

      // The account paid most of its money out: the refund is more than it has available.
      expect((await service.operator('POST', `/operator/accounts/${accountId}/adjustments`, { amount: '-900', reason: 'payout' })).status).to.equal(201);
      const short = await post(`/payments/${paymentId}/refund`, { amount: '500' });
      expect(short.status).to.equal(422);
      expect(short.body.message).to.match(/has 100 CLP available; it cannot pay out a refund of 500 CLP/);
      expect(await balances(accountId)).to.deep.equal({ balance: '100', held: '0', available: '100' });
      expect((await get(`/payments/${paymentId}/refund`)).body.total).to.equal(0);
      expect((await get(`/payments/${paymentId}/refunds`)).body.maxRefundable).to.equal('1000');
      // The refused reservation was given back: what the account has can still be refunded.
      expect((await post(`/payments/${paymentId}/refund`, { amount: '100' })).status).to.equal(201);

      const badAmount = await post(`/payments/${paymentId}/refund`, { amount: '1.5' });
      expect(badAmount.status).to.equal(400);
      expect(badAmount.body.message).to.match(/amount/);
    });

    it('a blocked account cannot pay a refund out (422)', async () => {
      const { paymentId, accountId } = await settledPayment('1000');
      expect((await service.request('PATCH', `/accounts/${accountId}`, { headers, body: { status: 'BLOCKED' } })).status).to.equal(200);
      const refused = await post(`/payments/${paymentId}/refund`, { amount: '10' });
      expect(refused.status).to.equal(422);
      expect(refused.body.message).to.match(/is BLOCKED; it cannot pay out a refund/);
    });

    it('SETTLED: the hold is debited into refunds payable and out to clearing; the parent records refundedAt', async () => {
      const { paymentId, accountId } = await settledPayment('1000');
      const { body: refund } = await post(`/payments/${paymentId}/refund`, { amount: '400' });
      const clearingBefore = (await balances('system:CLP:clearing')).balance;
      const settled = await notify(refund.id, 'SETTLED');
      expect(settled.status, settled.text).to.equal(200);
      expect(settled.body).to.include({ id: refund.id, status: 'SETTLED' });
      expect(await balances(accountId)).to.deep.equal({ balance: '600', held: '0', available: '600' });
      expect(Number((await balances('system:CLP:clearing')).balance) - Number(clearingBefore)).to.equal(400);
      expect((await balances('system:CLP:refunds_payable')).balance).to.equal('0');
      const parent = (await get(`/payments/${paymentId}`, headers)).body;
      expect(parent.status).to.equal('SETTLED');
      const flat = (await get(`/payments?limit=500`)).body.results.find((p: { id: string }) => p.id === paymentId);
      expect(flat.refundedAt).to.be.a('string');
      // The detailed shape (GET /payments/:id) carries it too, the same instant.
      expect(parent.refundedAt).to.equal(flat.refundedAt);
      expect((await get(`/payments/${paymentId}/refunds`)).body).to.include({ totalRefunded: '400', totalInProgress: '0', maxRefundable: '600', completedCount: 1 });
      // Two balanced entries: the hold debited (account → refunds payable), then paid out (refunds payable → clearing).
      const lines = (await tenants.database.query<{ account_id: string; amount: string }>(
        `SELECT account_id, amount::text FROM ledger_entry_lines WHERE description LIKE $1 ORDER BY occurred_at, entry_id, line_no`,
        [`%${refund.id}%`])).rows.map((r) => `${r.account_id} ${Number(r.amount)}`);
      expect(lines.sort()).to.deep.equal([`${accountId} -400`, 'system:CLP:clearing 400', 'system:CLP:refunds_payable -400', 'system:CLP:refunds_payable 400']);
      // The same notification again changes nothing; another end is refused, naming the status.
      const before = await service.eventCount();
      expect((await notify(refund.id, 'SETTLED')).status).to.equal(200);
      const failedAfter = await notify(refund.id, 'FAILED');
      expect(failedAfter.status).to.equal(422);
      expect(failedAfter.body.message).to.match(/is SETTLED; it cannot become FAILED/);
      expect(await service.eventCount()).to.equal(before);
      expect(await trialBalanceUnbalanced()).to.deep.equal([]);
    });

    it('the account’s statement carries the refund child’s paymentId on the line its refund paid out, and each line’s own lineNo', async () => {
      const { paymentId, accountId } = await settledPayment('1000');
      const { body: refund } = await post(`/payments/${paymentId}/refund`, { amount: '250' });
      expect((await notify(refund.id, 'SETTLED')).status).to.equal(200);
      expect((await get(`/payments/${refund.id}`)).body).to.include({ id: refund.id, type: 'REFUND' });
      const statement = await get(`/accounts/${accountId}/statement?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`);
      expect(statement.status, statement.text).to.equal(200);
      const lines = statement.body.lines as Array<{ entryId: string; lineNo: number; amount: string; paymentId: string | null; description: string }>;
      expect(lines.map((l) => [l.amount, l.paymentId])).to.deep.equal([['1000', paymentId], ['-250', refund.id]]);
      // lineNo is the account's line within its journal entry.
      for (const line of lines) {
        const { rows } = await tenants.database.query<{ line_no: number }>(
          'SELECT line_no FROM ledger_postings WHERE entry_id = $1 AND account_id = $2', [line.entryId, accountId]);
        expect(rows.map((r) => r.line_no), line.description).to.deep.equal([line.lineNo]);
      }
      const csv = await service.request('GET', `/accounts/${accountId}/statement?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`,
        { headers: { ...headers, accept: 'text/csv' }, unchecked: true });
      expect(csv.text).to.include(`,-250,750,${refund.id},`);
    });

    for (const outcome of ['FAILED', 'UNSETTLED', 'EXPIRED'] as const) {
      it(`${outcome}: the hold is released, the funds are available again, and the amount can be refunded again`, async () => {
        const { paymentId, accountId } = await settledPayment('1000');
        const { body: refund } = await post(`/payments/${paymentId}/refund`, {});
        expect(await balances(accountId)).to.deep.equal({ balance: '1000', held: '1000', available: '0' });
        const ended = await notify(refund.id, outcome);
        expect(ended.status, ended.text).to.equal(200);
        expect(ended.body.status).to.equal(outcome);
        expect(await balances(accountId)).to.deep.equal({ balance: '1000', held: '0', available: '1000' });
        expect((await get(`/payments/${paymentId}/refunds`)).body).to.include({
          totalRefunded: '0', totalInProgress: '0', totalFailed: '1000', maxRefundable: '1000', failedCount: 1,
        });
        expect((await get(`/payments/${paymentId}`)).body.status).to.equal('SETTLED');
        expect((await post(`/payments/${paymentId}/refund`, { amount: '1000' })).status).to.equal(201);
        expect(await trialBalanceUnbalanced()).to.deep.equal([]);
      });
    }

    it('a notification with a bad signature is 401 and changes nothing; an unknown refund is 404', async () => {
      const { paymentId } = await settledPayment('1000');
      const { body: refund } = await post(`/payments/${paymentId}/refund`, { amount: '5' });
      const before = await service.eventCount();
      // A signature of another outcome does not carry over.
      const forged = await notify(refund.id, 'FAILED', refundNotificationSignature(PROVIDER_SECRET, refund.id, 'SETTLED'));
      expect(forged.status).to.equal(401);
      expect(await service.eventCount()).to.equal(before);
      expect((await notify('no-such-refund', 'SETTLED')).status).to.equal(404);
      expect((await get(`/payments/${paymentId}/refund`)).body.refunds[0].status).to.equal('RECEIVED');
    });

    it('GET /refunds lists the caller\'s refunds by status and creation time; another client\'s id is 404', async () => {
      const { paymentId } = await settledPayment('1000');
      const start = new Date().toISOString();
      const first = (await post(`/payments/${paymentId}/refund`, { amount: '1' })).body;
      const second = (await post(`/payments/${paymentId}/refund`, { amount: '2' })).body;
      await notify(second.id, 'SETTLED');
      const all = await get(`/refunds?dateFrom=${encodeURIComponent(start)}`);
      expect(all.status, all.text).to.equal(200);
      expect(all.body.total).to.equal(2);
      expect(all.body.refunds.map((r: { id: string }) => r.id)).to.deep.equal([second.id, first.id]);
      expect((await get(`/refunds?dateFrom=${encodeURIComponent(start)}&status=RECEIVED`)).body.refunds.map((r: { id: string }) => r.id)).to.deep.equal([first.id]);
      // Both bounds inclusive: a window of exactly the first refund's creation instant holds it.
      const exact = encodeURIComponent(first.createdAt);
      expect((await get(`/refunds?dateFrom=${exact}&dateTo=${exact}`)).body.refunds.map((r: { id: string }) => r.id)).to.include(first.id);
      const day = first.createdAt.slice(0, 10);
      expect((await get(`/refunds?dateFrom=${day}&dateTo=${day}&limit=500`)).body.refunds.map((r: { id: string }) => r.id)).to.include(first.id);
      const paged = await get(`/refunds?dateFrom=${encodeURIComponent(start)}&limit=1&offset=1`);
      expect(paged.body).to.deep.equal({ total: 2, refunds: [first] });
      expect((await get(`/refunds?clientId=${tenants.alice.clientId}&dateFrom=${encodeURIComponent(start)}`)).body.total).to.equal(2);
      const others = await get(`/refunds?clientId=${tenants.bob.clientId}`);
      expect(others.status).to.equal(404);
      expect((await get('/refunds?limit=501')).status).to.equal(400);
      expect((await get('/refunds', tenants.asBob)).body.refunds.map((r: { id: string }) => r.id)).to.not.include(first.id);
    });

    it('another client\'s payment: refunding, its children and its summary answer 404, and nothing is appended', async () => {
      const { paymentId } = await settledPayment('1000');
      const before = await service.eventCount();
      const refused = await post(`/payments/${paymentId}/refund`, { amount: '10' }, tenants.asBob);
      expect(refused.status, refused.text).to.equal(404);
      expect(await service.eventCount()).to.equal(before);
      expect((await get(`/payments/${paymentId}/refund`, tenants.asBob)).status).to.equal(404);
      expect((await get(`/payments/${paymentId}/refunds`, tenants.asBob)).status).to.equal(404);
    });
  });

  describe(`refunds with the sandbox autopilot: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;
    const post = (path: string, body?: unknown) => service.request('POST', path, { headers, body });

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'true', PROVIDER_SECRET } });
      headers = await service.as(await service.createClient('Autopilot'));
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    const endsAs = async (reason: string | undefined, status: string) => {
      const account = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' })).body;
      const payment = (await post('/payments', { externalId: `auto-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.accountNumber, totalAmount: '500', currency: 'CLP' })).body;
      await providerReceipts(() => service, PROVIDER_SECRET)(payment.id);
      const refund = await post(`/payments/${payment.id}/refund`, reason === undefined ? { amount: '200' } : { amount: '200', reason });
      expect(refund.status, refund.text).to.equal(201);
      await until(async () => (await service.request('GET', `/payments/${payment.id}/refund`, { headers })).body.refunds[0].status === status,
        { what: `refund ${refund.body.id} ${status}` });
      await until(async () => (await service.request('GET', `/accounts/${account.id}`, { headers })).body.availableFunds === (status === 'SETTLED' ? '300' : '500'),
        { what: 'the account follows the refund' });
    };

    it('settles a refund by itself', () => endsAs(undefined, 'SETTLED'));
    it(`fails one whose reason says ${TRIGGERS.refundFail}`, () => endsAs(`test ${TRIGGERS.refundFail}`, 'FAILED'));
    it(`leaves one unsettled whose reason says ${TRIGGERS.refundUnsettled}`, () => endsAs(TRIGGERS.refundUnsettled, 'UNSETTLED'));
    it(`lets one expire whose reason says ${TRIGGERS.refundExpire}`, () => endsAs(TRIGGERS.refundExpire, 'EXPIRED'));
  });
}
