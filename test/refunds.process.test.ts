/**
 * The refund process manager across the parent's, the account's and the child's streams: a process that stopped
 * half way (simulated by recording only the first step) is finished by the refund reactor, and every step run
 * twice, or by two callers at once, changes nothing more than running it once.
 */
import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { providerReceipts } from './support/payments.ts';
import { until } from './support/until.ts';
import { waitForNewestEvent } from './support/newestEvent.ts';
import type { Database } from '../src/db/database.ts';
import { handleCommand } from '../src/eventstore/commandHandler.ts';
import { paymentStream } from '../src/payments/events.ts';
import { accountStream } from '../src/accounts/events.ts';
import { parentRefundDecider, refundDecider } from '../src/payments/refunds/decider.ts';
import { refundStream } from '../src/payments/refunds/events.ts';
import { requestHold } from '../src/accounts/handlers.ts';
import {
  advanceRefund, endRefund, followRefundEnd, issueRefundChild, loadParent, loadRefund, refundAdvance, refundEndFollowed,
} from '../src/payments/refunds/handlers.ts';

const PROVIDER_SECRET = 'refund-process-secret';

for (const target of databaseTargets()) {
  describe(`refund process: finished after a crash, safe to run twice: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let clientId: string;
    let identityId: string;
    let sequence = 0;
    const metadata = () => ({ clientId, actor: 'test' });
    const post = (path: string, body?: unknown) => service.request('POST', path, { headers, body });
    const typesOf = async (stream: string) => (await service.services.storage.store.readStream(stream, { limit: 1000 })).map((e) => e.type);

    async function settledPayment(): Promise<{ paymentId: string; accountId: string }> {
      const account = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' })).body;
      const payment = (await post('/payments', { externalId: `process-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.accountNumber, totalAmount: '1000', currency: 'CLP' })).body;
      expect((await providerReceipts(() => service, PROVIDER_SECRET)(payment.id)).body.status).to.equal('SETTLED');
      return { paymentId: payment.id, accountId: account.id };
    }
    /** Only the first step of a refund request: the reservation on the parent, as a process that then stopped. */
    const reserveOnly = (paymentId: string, refundId: string, amount: string) => handleCommand(service.services.storage.store,
      paymentStream(paymentId), parentRefundDecider,
      { type: 'RequestRefund', tenant: { clientId }, refundId, amount, description: null, now: new Date() }, metadata());

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      const client = await service.createClient('Process');
      clientId = client.clientId;
      headers = await service.as(client);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).body.id;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('a request that stopped after its reservation is finished by the reactor: the hold, the acceptance, the child', async () => {
      const { paymentId, accountId } = await settledPayment();
      await reserveOnly(paymentId, 'crashed-1', '300');
      await until(async () => (await loadRefund(service.services, 'crashed-1')).status === 'RECEIVED', { what: 'the child created by the reactor' });
      // The acceptance is appended beside the child's creation, not necessarily before it.
      await until(async () => (await loadParent(service.services, paymentId)).refunds.get('crashed-1')?.state === 'ACCEPTED', { what: 'the acceptance' });
      expect((await typesOf(accountStream(accountId))).filter((t) => t === 'AccountFundsHeld')).to.have.length(1);
      await until(async () => (await service.request('GET', `/accounts/${accountId}`, { headers })).body.availableFunds === '700');
    });

    it('a request the account refuses, stopped after its reservation, is given back by the reactor', async () => {
      const { paymentId, accountId } = await settledPayment();
      expect((await service.operator('POST', `/operator/accounts/${accountId}/adjustments`, { amount: '-900', reason: 'payout' })).status).to.equal(201);
      await reserveOnly(paymentId, 'crashed-2', '500');
      await until(async () => (await loadParent(service.services, paymentId)).refunds.get('crashed-2')?.state === 'REFUSED', { what: 'the refusal recorded' });
      expect((await loadRefund(service.services, 'crashed-2')).refund).to.equal(null);
      expect((await typesOf(accountStream(accountId))).filter((t) => t === 'AccountHoldRefused')).to.have.length(1);
      expect((await loadParent(service.services, paymentId)).reserved).to.equal('0');
    });

    it('an end that stopped after the child recorded it is followed by the reactor: the hold debited, the parent told', async () => {
      const { paymentId, accountId } = await settledPayment();
      const refund = (await post(`/payments/${paymentId}/refund`, { amount: '400' })).body;
      // Only the child's step, as a notification handler that then stopped.
      await handleCommand(service.services.storage.store, refundStream(refund.id), refundDecider,
        { type: 'EndRefund', tenant: 'any', outcome: 'SETTLED', reason: '', now: new Date() }, metadata());
      await until(async () => (await loadParent(service.services, paymentId)).refunds.get(refund.id)?.state === 'SETTLED', { what: 'the parent told' });
      expect((await typesOf(accountStream(accountId))).filter((t) => t === 'AccountHoldDebited')).to.have.length(1);
      await until(async () => (await service.request('GET', `/accounts/${accountId}`, { headers })).body.balance === '600');
    });

    it('steps a request of this process ran, and ended well, are not run again by the reactor; steps that failed are', async () => {
      const { paymentId } = await settledPayment();
      const inFlight = service.services.inFlight;
      // A run that says it ended well having done only the reservation: the reactor takes its word, so the refund
      // stays REQUESTED (a real run would have done every step; this one shows the reactor did not repeat them).
      await inFlight.run(refundAdvance('done-here'), () => reserveOnly(paymentId, 'done-here', '100'));
      // A run that failed after its reservation: the reactor finishes it.
      await inFlight.run(refundAdvance('failed-here'), async () => {
        await reserveOnly(paymentId, 'failed-here', '200');
        throw new Error('stopped after the reservation');
      }).catch(() => undefined);
      // Events of one parent react in feed order: once the later refund is finished, the earlier ones were handled.
      await reserveOnly(paymentId, 'after-both', '300');
      await until(async () => (await loadRefund(service.services, 'after-both')).status === 'RECEIVED', { what: 'the last child created by the reactor' });
      expect((await loadRefund(service.services, 'failed-here')).status).to.equal('RECEIVED');
      expect((await loadParent(service.services, paymentId)).refunds.get('done-here')?.state).to.equal('REQUESTED');
      expect((await loadRefund(service.services, 'done-here')).refund).to.equal(null);
    });

    it("a refund request and a child's end run their steps under the keys the reactor looks for", async () => {
      const { paymentId } = await settledPayment();
      const refund = await post(`/payments/${paymentId}/refund`, { amount: '100' });
      expect(refund.status).to.equal(201);
      const inFlight = service.services.inFlight;
      expect(await inFlight.doneByAnother(refundAdvance(refund.body.id)), 'the request ran the steps under its key').to.equal(true);
      await endRefund(service.services, 'any', refund.body.id, 'SETTLED', { actor: 'provider' });
      expect(await inFlight.doneByAnother(refundEndFollowed(refund.body.id)), 'the end was followed under its key').to.equal(true);
      expect((await loadParent(service.services, paymentId)).refunds.get(refund.body.id)?.state).to.equal('SETTLED');
    });

    it('every step run twice, and twice at once, moves nothing twice', async () => {
      const { paymentId, accountId } = await settledPayment();
      await reserveOnly(paymentId, 'twice', '250');
      const progress = await Promise.all([1, 2, 3].map(() => advanceRefund(service.services, paymentId, 'twice', metadata())));
      expect(progress.map((p) => p?.outcome)).to.deep.equal(['ACCEPTED', 'ACCEPTED', 'ACCEPTED']);
      expect(await advanceRefund(service.services, paymentId, 'twice', metadata())).to.include({ outcome: 'ACCEPTED' });
      const child = (await loadRefund(service.services, 'twice')).refund!;
      expect(await issueRefundChild(service.services, child, metadata())).to.equal(null);
      await handleCommand(service.services.storage.store, refundStream('twice'), refundDecider,
        { type: 'EndRefund', tenant: 'any', outcome: 'FAILED', reason: 'PROVIDER_REJECTED', now: new Date() }, metadata());
      const ended = await loadRefund(service.services, 'twice');
      await Promise.all([1, 2, 3].map(() => followRefundEnd(service.services, ended, metadata())));
      await followRefundEnd(service.services, ended, metadata());
      const accountTypes = await typesOf(accountStream(accountId));
      expect(accountTypes.filter((t) => t === 'AccountFundsHeld')).to.have.length(1);
      expect(accountTypes.filter((t) => t === 'AccountHoldReleased')).to.have.length(1);
      const parentTypes = await typesOf(paymentStream(paymentId));
      expect(parentTypes.filter((t) => t.startsWith('PaymentRefund'))).to.deep.equal(['PaymentRefundRequested', 'PaymentRefundAccepted', 'PaymentRefundReleased']);
      expect(await typesOf(refundStream('twice'))).to.deep.equal(['RefundCreated', 'RefundFailed']);
    });

    it("a child that ended before its parent recorded the acceptance: the end records both, the answer after it nothing", async () => {
      const { paymentId, accountId } = await settledPayment();
      // The hold and the child's creation recorded, the parent's acceptance beside the creation not (a process
      // stopped between the two appends), and the provider's word on the child before the reactor finished.
      await service.services.inFlight.run(refundAdvance('ended-first'), async () => {
        await reserveOnly(paymentId, 'ended-first', '350');
        await requestHold(service.services, accountId, { holdId: 'ended-first', amount: '350', reason: 'refund ended-first' }, metadata());
        await issueRefundChild(service.services, {
          refundId: 'ended-first', parentPaymentId: paymentId, clientId, identityId, identityEmail: null, customerId: null,
          totalAmount: '350', currency: 'CLP', description: null, funding: { source: 'ACCOUNT', accountId, holdId: 'ended-first' },
        }, metadata());
        await endRefund(service.services, 'any', 'ended-first', 'SETTLED', { actor: 'provider' });
      });
      // The acceptance that was on its way, arriving now, and the steps run again by the reactor: nothing more.
      expect((await handleCommand(service.services.storage.store, paymentStream(paymentId), parentRefundDecider,
        { type: 'AnswerRefund', tenant: 'any', refundId: 'ended-first', answer: { outcome: 'HELD' }, now: new Date() }, metadata())).events).to.deep.equal([]);
      expect(await advanceRefund(service.services, paymentId, 'ended-first', metadata())).to.include({ outcome: 'ACCEPTED' });
      const parentTypes = (await typesOf(paymentStream(paymentId))).filter((t) => t.startsWith('PaymentRefund'));
      expect(parentTypes).to.deep.equal(['PaymentRefundRequested', 'PaymentRefundAccepted', 'PaymentRefundSettled']);
      expect((await loadParent(service.services, paymentId)).reserved).to.equal('350');
      expect((await typesOf(accountStream(accountId))).filter((t) => t.startsWith('AccountHold') || t === 'AccountFundsHeld'))
        .to.deep.equal(['AccountFundsHeld', 'AccountHoldDebited']);
    });

    it('a child funded from suspense moves no account and leaves the parent alone', async () => {
      const { paymentId, accountId } = await settledPayment();
      const before = await typesOf(accountStream(accountId));
      await issueRefundChild(service.services, {
        refundId: 'from-suspense', parentPaymentId: paymentId, clientId, identityId, identityEmail: null, customerId: null,
        totalAmount: '50', currency: 'CLP', description: 'deposit returned', funding: { source: 'SUSPENSE' },
      }, metadata());
      await handleCommand(service.services.storage.store, refundStream('from-suspense'), refundDecider,
        { type: 'EndRefund', tenant: 'any', outcome: 'SETTLED', reason: '', now: new Date() }, metadata());
      await followRefundEnd(service.services, await loadRefund(service.services, 'from-suspense'), metadata());
      expect(await typesOf(accountStream(accountId))).to.deep.equal(before);
      expect((await typesOf(paymentStream(paymentId))).filter((t) => t.startsWith('PaymentRefund'))).to.deep.equal([]);
      await waitForNewestEvent(service.services, 30_000);
      const suspense = (await database.query<{ description: string; account_id: string; amount: string }>(
        `SELECT description, account_id, amount::text FROM ledger_entry_lines WHERE description LIKE '%from-suspense%' ORDER BY entry_id, line_no`)).rows;
      expect(suspense.map((r) => `${r.account_id} ${Number(r.amount)}`).sort()).to.deep.equal(
        ['system:CLP:clearing 50', 'system:CLP:refunds_payable -50', 'system:CLP:refunds_payable 50', 'system:CLP:suspense -50']);
    });
  });
}
