/**
 * Refunds of deposits, and refund children as payments: a deposit settled into an account (matched on arrival, or
 * assigned) is refunded like any SETTLED payment, decided on the deposit's own stream; every refund child (of a
 * payment, of a deposit, and the expiry's refund to the originator) is a row of GET /payments of type REFUND; and
 * their webhooks reach a real receiver with the interface's payloads, identity null where no identity owns the money.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { accountStream } from '../src/accounts/events.ts';
import { paymentStream } from '../src/payments/events.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { expireUnassignedDeposits } from '../src/deposits/jobs.ts';
import { refundNotificationSignature } from '../src/payments/refunds/routes.ts';
import { refundStream } from '../src/payments/refunds/events.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import type { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { databaseTargets } from './support/targets.ts';
import type { ApiResponse, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { payloadProblems, testDispatcher, verifySignatures } from './support/webhooks.ts';
import { until } from './support/until.ts';
import { TEST_CARD } from './support/payments.ts';

const PROVIDER_SECRET = 'deposit-refunds-provider-secret';
const HOUR_MS = 60 * 60 * 1000;

/** A clock that stands still until the test moves it. */
function frozenClock(): Runtime & { advance(ms: number): void } {
  let nowMs = Date.now();
  return { now: () => new Date(nowMs), newId: () => randomUUID(), advance: (ms) => { nowMs += ms; } };
}

for (const target of databaseTargets()) {
  describe(`refunds of deposits, and refund children as payments: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let tenants: TwoTenants;
    let asAlice: Record<string, string>;
    let identityId: string;
    let sequence = 0;
    const clock = frozenClock();

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const open = async (currency = 'ARS') => {
      const response = await post('/accounts', { identityId, type: 'CHECKING', currency });
      expect(response.status, response.text).to.equal(201);
      return { id: response.body.id as string, accountNumber: response.body.accountNumber as string };
    };
    const deposit = async (reference: string, amount: string): Promise<string> => {
      const body = { clientId: tenants.alice.clientId, depositId: `refundable-${++sequence}`, reference, amount, currency: 'ARS' as const,
        originator: { firstName: 'Juan', lastName: 'Pérez', documentType: 'CUIT', documentNumber: `20-${sequence}-9` } };
      const answer = await service.request('POST', '/payments/deposits', {
        body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) }, headers: { 'user-agent': 'provider' } });
      expect(answer.status, answer.text).to.equal(201);
      return answer.body.id as string;
    };
    /** An unassigned deposit of `amount`, assigned to `accountId`: SETTLED there. */
    const assigned = async (accountId: string, amount: string, expectedAmount?: string) => {
      const id = await deposit('no-such-reference', amount);
      const answer = await post(`/payments/${id}/assign`, { accountId, ...(expectedAmount ? { expectedAmount } : {}) });
      expect(answer.status, answer.text).to.equal(200);
      return answer.body as { id: string; relatedPaymentId: string | null };
    };
    const notify = (refundId: string, outcome: string): Promise<ApiResponse> => service.request('POST', '/refunds/notifications', {
      headers: { 'user-agent': 'provider' }, body: { refundId, outcome, signature: refundNotificationSignature(PROVIDER_SECRET, refundId, outcome) } });
    const balances = async (accountId: string) => {
      const row = (await database.query<{ balance: string; available: string }>(
        'SELECT balance::text, available_funds::text AS available FROM account_balances WHERE account_id = $1', [accountId])).rows[0];
      return { balance: Number(row?.balance ?? 0), available: Number(row?.available ?? 0) };
    };
    const streamTypes = async (stream: string) => (await service.services.storage.store.readStream(stream, { limit: 10_000 })).map((e) => e.type);
    const unbalanced = async () => (await database.query('SELECT currency FROM trial_balance WHERE NOT balanced')).rows;

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ database, service, asAlice } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Tienda', country: 'ARG', email: 'tienda@example.com' })).body.id;
    });
    after(async () => {
      await tenants?.close();
    });

    it('an assigned deposit is refunded like a SETTLED payment: the remainder decided on its stream, the hold and debit on its account, the summary', async () => {
      const account = await open();
      const { id } = await assigned(account.id, '5000.00');
      const refund = await post(`/payments/${id}/refund`, { amount: '2000.00', reason: 'wrong shop' });
      expect(refund.status, refund.text).to.equal(201);
      expect(refund.body).to.include({ parentPaymentId: id, status: 'RECEIVED', totalAmount: '2000.00', currency: 'ARS', description: 'wrong shop' });
      // The deposit's stream reserved it; the account held it (available funds drop, the balance does not).
      expect((await streamTypes(paymentStream(id))).slice(-2)).to.deep.equal(['PaymentRefundRequested', 'PaymentRefundAccepted']);
      expect((await streamTypes(accountStream(account.id))).at(-1)).to.equal('AccountFundsHeld');
      expect(await balances(account.id)).to.deep.equal({ balance: 5000, available: 3000 });
      expect((await get(`/payments/${id}/refunds`)).body).to.include({
        parentPaymentId: id, parentAmount: '5000.00', totalInProgress: '2000.00', maxRefundable: '3000.00', inProgressCount: 1 });

      // Over the remainder: 422 naming it, nothing appended.
      const events = await service.eventCount();
      const over = await post(`/payments/${id}/refund`, { amount: '3000.01' });
      expect(over.status, over.text).to.equal(422);
      expect(over.body.message).to.include('exceeds what is left to refund').and.include('3000.00 ARS');
      expect(await service.eventCount()).to.equal(events);

      // Settled: debited from the account, out through refunds payable; the deposit stays SETTLED, refundedAt set.
      expect((await notify(refund.body.id, 'SETTLED')).status).to.equal(200);
      expect(await balances(account.id)).to.deep.equal({ balance: 3000, available: 3000 });
      const parent = (await get(`/payments?type=LOCAL_DEPOSIT&limit=500`)).body.results.find((p: { id: string }) => p.id === id);
      expect(parent).to.include({ status: 'SETTLED', reconciliationStatus: 'PAID' });
      expect(parent.refundedAt).to.be.a('string');
      // The rest, amount omitted; then nothing is left.
      const rest = await post(`/payments/${id}/refund`, {});
      expect(rest.body).to.include({ totalAmount: '3000.00' });
      const none = await post(`/payments/${id}/refund`, {});
      expect(none.status).to.equal(422);
      expect(none.body.message).to.include('nothing left to refund');
      expect((await get(`/payments/${id}/refunds`)).body).to.include({ totalRefunded: '2000.00', totalInProgress: '3000.00', maxRefundable: '0.00' });
      // The deposit's own rules still hold on its stream: it cannot be assigned again.
      expect((await post(`/payments/${id}/assign`, { accountId: account.id })).status).to.equal(422);
      expect(await unbalanced()).to.deep.equal([]);
    });

    it('refunds of one deposit sent together never exceed what it brought: its stream decides the ceiling', async () => {
      const account = await open();
      const { id } = await assigned(account.id, '1000.00');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`/payments/${id}/refund`, i % 5 === 4 ? {} : { amount: '90.00' })));
      for (const answer of answers) expect(answer.status, answer.text).to.be.oneOf([201, 422]);
      const accepted = answers.filter((a) => a.status === 201).reduce((sum, a) => sum + Number(a.body.totalAmount), 0);
      expect(accepted).to.be.at.most(1000);
      const summary = (await get(`/payments/${id}/refunds`)).body;
      expect(Number(summary.totalInProgress)).to.equal(accepted);
      expect(Number(summary.maxRefundable)).to.equal(1000 - accepted);
      expect(await balances(account.id)).to.deep.equal({ balance: 1000, available: 1000 - accepted });
      expect(await unbalanced()).to.deep.equal([]);
    });

    it('a deposit matched on arrival is refunded the same way; the account’s funds bound it', async () => {
      const account = await open();
      const id = await deposit(account.accountNumber, '1500.00');
      expect((await get(`/payments/${id}`)).body.status).to.equal('SETTLED');
      // The account paid out part of it meanwhile (an operator's debit): its available funds bound the refund.
      expect((await service.operator('POST', `/operator/accounts/${account.id}/adjustments`, { amount: '-1000.00', reason: 'payout' })).status).to.equal(201);
      const short = await post(`/payments/${id}/refund`, {});
      expect(short.status, short.text).to.equal(422);
      expect(short.body.message).to.include('500.00 ARS available');
      const refund = await post(`/payments/${id}/refund`, { amount: '500.00' });
      expect(refund.status, refund.text).to.equal(201);
      expect(await balances(account.id)).to.deep.equal({ balance: 500, available: 0 });
      expect((await get(`/payments/${id}/refunds`)).body).to.include({ maxRefundable: '1000.00' });
    });

    it('a deposit awaiting assignment, an expired one, and a companion child cannot be refunded: 422 naming why, nothing appended', async () => {
      const account = await open();
      const waiting = await deposit('no-such-reference', '1000.00');
      const { relatedPaymentId: companion } = await assigned(account.id, '1000.00', '800.00');
      const expiring = await deposit('no-such-reference', '1000.00');
      clock.advance(48 * HOUR_MS);
      try {
        await expireUnassignedDeposits(service.services);
        const late = await service.as(tenants.alice);
        const events = await service.eventCount();
        for (const [id, text] of [[waiting, 'is EXPIRED'], [expiring, 'is EXPIRED'], [companion!, 'refund the deposit instead']] as const) {
          const answer = await post(`/payments/${id}/refund`, { amount: '1.00' }, late);
          expect(answer.status, `${id}: ${answer.text}`).to.equal(422);
          expect(answer.body.message).to.include(text);
        }
        expect(await service.eventCount()).to.equal(events);
      } finally {
        clock.advance(-48 * HOUR_MS);
      }
      const fresh = await deposit('no-such-reference', '1000.00');
      const answer = await post(`/payments/${fresh}/refund`, {});
      expect(answer.status).to.equal(422);
      expect(answer.body.message).to.include('is CREATED; only a SETTLED payment can be refunded');
    });

    it('what cannot be refunded, assigned, authorized or captured answers 422 naming why (not 404), and its summary says maxRefundable 0', async () => {
      const account = await open();
      const { id: assignedDeposit, relatedPaymentId: companion } = await assigned(account.id, '1000.00', '800.00');
      const refund = await post(`/payments/${assignedDeposit}/refund`, { amount: '10.00' });
      expect(refund.status, refund.text).to.equal(201);
      const child = refund.body.id as string;
      expect((await get(`/payments/${child}`)).body).to.include({ id: child, type: 'REFUND' });
      const waiting = await deposit('no-such-reference', '1000.00');
      const declined = await post('/payments', { externalId: `declined-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: account.accountNumber,
        totalAmount: '5000.00', currency: 'ARS', origins: [{ type: 'CARD', card: { ...TEST_CARD, number: '4000000000000002' } }] });
      expect(declined.status, declined.text).to.equal(200);
      const purchase = declined.body.id as string;
      expect((await post(`/payments/${purchase}/authorized`)).body.status).to.equal('FAILED');

      const events = await service.eventCount();
      const refusals: Array<[string, string, unknown, string]> = [
        [child, 'refund', { amount: '1.00' }, `payment ${child} is a refund of payment ${assignedDeposit}; a refund cannot be refunded`],
        [child, 'authorized', undefined, `payment ${child} is a refund of payment ${assignedDeposit}; only a card payment can be authorized`],
        [child, 'assign', { accountId: account.id }, 'only a deposit awaiting assignment can be assigned'],
        [purchase, 'assign', { accountId: account.id }, `payment ${purchase} is a PURCHASE payment; only a deposit awaiting assignment can be assigned`],
        [companion!, 'assign', { accountId: account.id }, `payment ${companion} is the companion of deposit ${assignedDeposit}; only a deposit awaiting`],
        [waiting, 'authorized', undefined, `payment ${waiting} is a deposit; only a card payment can be authorized`],
        [waiting, 'captured', undefined, `payment ${waiting} is a deposit; only an authorized card payment can be captured`],
        [waiting, 'documents', { type: 'INVOICE' }, `payment ${waiting} is a deposit; only a payment under review (REQUIRES_REVIEW) takes documents`],
        [assignedDeposit, 'authorized', undefined, 'is a deposit; only a card payment can be authorized'],
      ];
      for (const [id, action, body, text] of refusals) {
        const answer = await post(`/payments/${id}/${action}`, body);
        expect(answer.status, `${action} ${id}: ${answer.text}`).to.equal(422);
        expect(answer.body.message).to.include(text);
        // Another client still does not see it at all.
        expect((await post(`/payments/${id}/${action}`, body, tenants.asBob)).status, `${action} as Bob`).to.equal(404);
      }
      expect(await service.eventCount()).to.equal(events);

      for (const id of [child, waiting, purchase, companion!]) {
        const summary = await get(`/payments/${id}/refunds`);
        expect(summary.status, summary.text).to.equal(200);
        expect(summary.body.maxRefundable, id).to.equal('0.00');
      }
      expect((await get(`/payments/${assignedDeposit}/refunds`)).body.maxRefundable).to.equal('990.00');
    });

    it('lists refund children in GET /payments as type REFUND, with status, amount and parent; type=REFUND filters them', async () => {
      const account = await open();
      const { id: depositId } = await assigned(account.id, '3000.00');
      const payment = await post('/payments', { externalId: `refunded-${++sequence}`, identityId, type: 'PURCHASE',
        accountNumber: account.accountNumber, totalAmount: '2000.00', currency: 'ARS' });
      const signature = (await import('../src/payments/routes.ts')).providerSignature(PROVIDER_SECRET, payment.body.id);
      expect((await service.request('POST', '/payments/received', { body: { transactionId: payment.body.id, signature },
        headers: { 'user-agent': 'provider' } })).body.status).to.equal('SETTLED');
      const ofDeposit = (await post(`/payments/${depositId}/refund`, { amount: '100.00' })).body.id as string;
      const ofPayment = (await post(`/payments/${payment.body.id}/refund`, { amount: '200.00', reason: 'damaged' })).body.id as string;
      expect((await notify(ofPayment, 'FAILED')).status).to.equal(200);
      // The expiry's refund to the originator, funded from suspense: no identity, no account.
      const expiring = await deposit('no-such-reference', '1200.00');
      clock.advance(48 * HOUR_MS);
      let late = asAlice;
      let toOriginator = '';
      try {
        await expireUnassignedDeposits(service.services);
        late = await service.as(tenants.alice);
        await until(async () => ((await get(`/payments/${expiring}/refund`, late)).body.total === 1), { what: 'the expiry refund child' });
        toOriginator = (await get(`/payments/${expiring}/refund`, late)).body.refunds[0].id;
      } finally {
        clock.advance(-48 * HOUR_MS);
      }
      late = await service.as(tenants.alice);

      const refunds = (await get('/payments?type=REFUND&limit=500', late)).body;
      expect(refunds.results.every((p: { type: string }) => p.type === 'REFUND')).to.equal(true);
      const byId = new Map<string, any>(refunds.results.map((p: { id: string }) => [p.id, p]));
      expect(byId.get(ofDeposit)).to.include({ status: 'RECEIVED', totalAmount: '100.00', currency: 'ARS', parentPaymentId: depositId,
        relatedPaymentId: depositId, accountNumber: account.accountNumber, identityId, externalId: ofDeposit });
      expect(byId.get(ofPayment)).to.include({ status: 'FAILED', totalAmount: '200.00', parentPaymentId: payment.body.id,
        relatedPaymentId: payment.body.id, description: 'damaged', failureReason: 'PROVIDER_REJECTED', identityId });
      expect(byId.get(toOriginator)).to.include({ status: 'RECEIVED', totalAmount: '1200.00', parentPaymentId: expiring,
        identityId: null, accountNumber: null });
      // Each child once; the other filters and the detailed shape (v2) take them too.
      expect((await get(`/payments?type=REFUND&status=FAILED&limit=500`, late)).body.results.map((p: { id: string }) => p.id)).to.include(ofPayment)
        .and.not.include(ofDeposit);
      expect((await get(`/payments?accountNumber=${account.accountNumber}&type=REFUND`, late)).body.results.map((p: { id: string }) => p.id).sort())
        .to.deep.equal([ofDeposit, ofPayment].sort());
      const detailed = await service.request('GET', `/payments/${ofDeposit}`, { headers: late });
      expect(detailed.status, detailed.text).to.equal(200);
      expect(detailed.body).to.include({ id: ofDeposit, type: 'REFUND', status: 'RECEIVED' });
      const v2 = await service.request('GET', '/payments?type=REFUND&limit=500', { headers: { ...late, 'service-api-version': '24-04-2025' } });
      expect(v2.status, v2.text).to.equal(200);
      expect(v2.body.results.map((p: { id: string }) => p.id)).to.include(toOriginator);
      // Its history for auditors: the child's own stream.
      const history = await service.request('GET', `/payments/${ofPayment}/events`, { headers: late });
      expect(history.body.events.map((e: { type: string }) => e.type)).to.deep.equal(['RefundCreated', 'RefundFailed']);
      // Settled, its row says so.
      expect((await notify(ofDeposit, 'SETTLED')).status).to.equal(200);
      const settled = (await get(`/payments?type=REFUND&status=SETTLED&limit=500`, late)).body.results.find((p: { id: string }) => p.id === ofDeposit);
      expect(settled.settledAt).to.be.a('string');
    });

    it('a refund child stored by the first version with identityId \'\' reads as null, in its events, GET /payments and the events feed', async () => {
      // A store without upcasters writes every type at version 1, as the service did before identityId could be null.
      const older = new PostgresEventStore(database);
      const refundId = randomUUID();
      const parentId = await deposit('no-such-reference', '1000.00');
      const at = clock.now().toISOString();
      const common = { refundId, parentPaymentId: parentId, clientId: tenants.alice.clientId, identityId: '', identityEmail: null, customerId: null };
      try {
        await older.append(refundStream(refundId), [
          { id: randomUUID(), type: 'RefundCreated', data: { ...common, totalAmount: '1000.00', currency: 'ARS', description: 'back to the originator',
            funding: { source: 'SUSPENSE' }, createdAt: at }, metadata: { clientId: tenants.alice.clientId, actor: 'expiry-job' } },
          { id: randomUUID(), type: 'RefundSettled', data: { ...common, currency: 'ARS', amount: '1000.00', fundingSource: 'SUSPENSE', accountId: null,
            from: 'RECEIVED', to: 'SETTLED', at }, metadata: { clientId: tenants.alice.clientId, actor: 'provider' } },
        ], 'no_stream');
      } finally {
        await older.close();
      }
      const stored = await service.services.storage.store.readStream(refundStream(refundId));
      expect(stored.map((e) => [e.type, e.schemaVersion, (e.data as { identityId: unknown }).identityId])).to.deep.equal([
        ['RefundCreated', 2, null], ['RefundSettled', 2, null]]);
      await until(async () => (await get(`/payments/${refundId}`)).status === 200, { what: 'the old refund child in the read model' });
      const row = (await get('/payments?type=REFUND&status=SETTLED&limit=500')).body.results.find((p: { id: string }) => p.id === refundId);
      expect(row).to.include({ identityId: null, parentPaymentId: parentId, status: 'SETTLED' });
      let feed: any[] = [];
      await until(async () => (feed = (await get('/events?type=payment.refund.settled&limit=500')).body.results
        .filter((e: any) => e.payload.transaction.id === refundId)).length === 1, { what: 'the old refund child in the events feed' });
      expect(feed[0].payload.identity).to.deep.equal({ id: null, email: null });
    });

    describe('webhooks', () => {
      let receiver: Receiver | undefined;
      let dispatcher: WebhookDispatcher | undefined;
      afterEach(async () => {
        // The receiver first: a request it holds ends when it closes, so the dispatcher stops without waiting.
        await receiver?.close();
        await dispatcher?.stop();
      });

      it('refund and deposit events reach a real receiver, signed, with the interface’s payloads; the expiry’s refund names no identity', async () => {
        receiver = await startReceiver();
        const hook = await post('/webhooks', { url: receiver.url });
        expect(hook.status, hook.text).to.equal(201);
        dispatcher = testDispatcher(service.services);
        dispatcher.start();
        const account = await open();
        // A deposit waiting, then assigned underpaid; a refund of it settled, another failed.
        const { id, relatedPaymentId } = await assigned(account.id, '2000.00', '2500.00');
        const settled = (await post(`/payments/${id}/refund`, { amount: '300.00' })).body.id as string;
        const failed = (await post(`/payments/${id}/refund`, { amount: '400.00' })).body.id as string;
        await notify(settled, 'SETTLED');
        await notify(failed, 'FAILED');
        // A deposit left to expire: its refund child to the originator.
        const expiring = await deposit('no-such-reference', '1000.00');
        clock.advance(48 * HOUR_MS);
        let toOriginator = '';
        try {
          await expireUnassignedDeposits(service.services);
          const late = await service.as(tenants.alice);
          await until(async () => ((await get(`/payments/${expiring}/refund`, late)).body.total === 1), { what: 'the expiry refund child' });
          toOriginator = (await get(`/payments/${expiring}/refund`, late)).body.refunds[0].id;
        } finally {
          clock.advance(-48 * HOUR_MS);
        }

        const expected: Record<string, string[]> = {
          [id]: ['purchase.pendingAssignment@CREATED', 'transaction.status_changed@SETTLED', 'payment.settled@SETTLED', 'purchase.underpaid@SETTLED'],
          [settled]: ['payment.refund.created@RECEIVED', 'transaction.status_changed@SETTLED', 'payment.refund.settled@SETTLED'],
          [failed]: ['payment.refund.created@RECEIVED', 'transaction.status_changed@FAILED', 'payment.refund.failed@FAILED'],
          [expiring]: ['purchase.pendingAssignment@CREATED', 'transaction.status_changed@EXPIRED', 'payment.expired@EXPIRED'],
          [toOriginator]: ['payment.refund.created@RECEIVED'],
        };
        const total = Object.values(expected).reduce((n, list) => n + list.length, 0);
        const of = (objectId: string) => receiver!.received.filter((r) => r.body.transaction?.id === objectId);
        await until(() => Object.keys(expected).every((objectId) => of(objectId).length >= expected[objectId]!.length), { what: `${total} deliveries` });
        for (const [objectId, history] of Object.entries(expected)) {
          const got = of(objectId).sort((a, b) => Number(a.headers['x-webhook-sequence']) - Number(b.headers['x-webhook-sequence'])
            || history.indexOf(`${a.body.eventType}@${a.body.transaction.status}`) - history.indexOf(`${b.body.eventType}@${b.body.transaction.status}`));
          expect(got.map((r) => `${r.body.eventType}@${r.body.transaction.status}`), objectId).to.deep.equal(history);
          for (const request of got) {
            expect(payloadProblems(request.body), request.rawBody).to.deep.equal([]);
            expect(verifySignatures(hook.body.secretKey, request.rawBody, request.headers)).to.equal(true);
          }
        }
        const payload = (objectId: string, eventType: string) => of(objectId).find((r) => r.body.eventType === eventType)!.body;
        expect(payload(id, 'purchase.underpaid').transaction).to.include({ relatedPaymentId, type: 'LOCAL_DEPOSIT' });
        expect(payload(settled, 'payment.refund.settled').transaction).to.include({
          type: 'REFUND', parentPaymentId: id, relatedPaymentId: id, totalAmount: '300.00', currency: 'ARS', status: 'SETTLED' });
        expect(payload(settled, 'payment.refund.settled').transaction.settledAt).to.be.a('string');
        expect(payload(settled, 'payment.refund.created').identity).to.deep.equal({ id: identityId, email: null });
        const back = payload(toOriginator, 'payment.refund.created');
        expect(back.transaction).to.include({ type: 'REFUND', parentPaymentId: expiring, totalAmount: '1000.00', status: 'RECEIVED' });
        expect(back.identity).to.deep.equal({ id: null, email: null });
        await service.request('DELETE', `/webhooks/${hook.body.id}`, { headers: asAlice });
      });
    });
  });
}
