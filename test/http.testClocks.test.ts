/**
 * Test clocks over HTTP (sandbox): a simulated deposit through its 6-hour window and its 48-hour expiry, a T+2
 * card payment through its settlement date, a payment past its expiresAt, a checkout session and a payment link
 * running out, the advance's refusals and its race, objects not bound to a clock left alone, and every read
 * model rebuilt from the log equal to the live one afterwards.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { paymentIdFor, paymentStream } from '../src/payments/events.ts';
import { runSettlementBatch } from '../src/payments/jobs.ts';
import { sessionStream } from '../src/checkout/events.ts';
import { testClockStream } from '../src/testClocks/events.ts';
import { until } from './support/until.ts';
import { databaseTargets } from './support/targets.ts';
import type { ApiResponse, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { payloadProblems, testDispatcher } from './support/webhooks.ts';
import { expectRebuildEqualsLive } from './support/rebuild.ts';
import { waitForNewestEvent } from './support/newestEvent.ts';
import type { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const MINUTE_MS = 60 * 1000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

const later = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

for (const target of databaseTargets()) {
  describe(`test clocks over HTTP: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let tenants: TwoTenants | null = null;
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let identityId: string;
    let brl: { id: string; accountNumber: string };
    let receiver: Receiver;
    let dispatcher: WebhookDispatcher;
    let sequence = 0;

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const onClock = (clockId: string, headers = asAlice) => ({ ...headers, 'Test-Clock': clockId });
    const ok = (response: ApiResponse, what: string) => {
      expect(response.status, `${what}: ${response.text}`).to.be.oneOf([200, 201]);
      return response.body;
    };
    const newClock = async (name: string, headers = asAlice) => ok(await post('/test-clocks', { name }, headers), 'clock') as { id: string; frozenTime: string };
    const clockEvents = async (clockId: string) =>
      (await service.services.storage.store.readStream(testClockStream(clockId), { limit: 10_000 })).map((e) => e.type);
    /** Advances and waits until every effect is recorded (the clock ready again). */
    const advance = async (clockId: string, frozenTime: string) => {
      const response = await post(`/test-clocks/${clockId}/advance`, { frozenTime });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.frozenTime).to.equal(frozenTime);
      await until(async () => (await get(`/test-clocks/${clockId}`)).body.status === 'ready', { what: `clock ${clockId} ready`, timeoutMs: 60_000 });
    };
    const status = async (paymentId: string) => (await get(`/payments/${paymentId}`)).body.status as string;
    const simulatedDeposit = (headers: Record<string, string>) => post('/sandbox/deposits', {
      reference: `0000003100${String(++sequence).padStart(12, '0')}`, amount: '5000.00', currency: 'ARS',
      originator: { firstName: 'Juan', lastName: 'Pérez', documentType: 'CUIT', documentNumber: `20-${sequence}-9` },
    }, headers);
    const pay = (headers: Record<string, string>, body: Record<string, unknown>) => post('/payments', {
      externalId: `order-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: brl.accountNumber, currency: 'BRL', totalAmount: '100.00', ...body,
    }, headers);
    const card = { type: 'CARD', card: { number: '4111111111111111', holder: 'Ana', expiryMonth: '12', expiryYear: '2099', cvv: '123' } };
    const checkoutTerms = () => ({
      items: [{ description: 'Book', preTaxAmount: '20.00' }], currency: 'BRL', paymentMethodsAllowed: ['CARD'], duration: 1800,
      owner: { identityId },
      destinations: [{ type: 'ACCOUNT', amount: '20.00', account: { type: 'CHECKING', currency: 'BRL', accountNumber: brl.accountNumber, accountHolder: 'Loja' } }],
    });

    before(async () => {
      tenants = await startTwoTenants(target, { env: { PROVIDER_SECRET, WEBHOOK_ALLOW_PRIVATE: 'true' } });
      ({ database, service, asAlice, asBob } = tenants);
      identityId = ok(await post('/identities', { type: 'ORGANIZATION', name: 'Loja', country: 'BRA' }), 'identity').id;
      brl = ok(await post('/accounts', { identityId, type: 'CHECKING', currency: 'BRL' }), 'account');
      receiver = await startReceiver();
      ok(await post('/webhooks', { url: receiver.url, events: ['payment.expired', 'payment.refund.created', 'payment.settled', 'test_clock.ready'] }), 'webhook');
      dispatcher = testDispatcher(service.services);
      dispatcher.start();
    });

    after(async () => {
      await dispatcher?.stop();
      await receiver?.close();
      await tenants?.close();
    });

    it('creates, lists, reads and deletes clocks, each of them the client’s own', async () => {
      const created = await post('/test-clocks', { name: 'first' });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.include({ name: 'first', status: 'ready' });
      expect(Math.abs(Date.parse(created.body.frozenTime) - Date.now())).to.be.below(MINUTE_MS);
      const ahead = ok(await post('/test-clocks', { frozenTime: later(new Date().toISOString(), DAY_MS) }), 'clock ahead');
      expect((await get('/test-clocks')).body.results.map((c: { id: string }) => c.id)).to.include.members([created.body.id, ahead.id]);
      expect((await get(`/test-clocks/${created.body.id}`, asBob)).status).to.equal(404);
      expect((await get('/test-clocks', asBob)).body.results.map((c: { id: string }) => c.id)).to.not.include(created.body.id);
      const past = await post('/test-clocks', { frozenTime: later(new Date().toISOString(), -HOUR_MS) });
      expect(past.status).to.equal(400);
      expect(past.body.message).to.include('frozenTime');
      expect((await service.request('DELETE', `/test-clocks/${created.body.id}`, { headers: asBob })).status).to.equal(404);
      expect((await service.request('DELETE', `/test-clocks/${created.body.id}`, { headers: asAlice })).status).to.equal(200);
      expect((await get(`/test-clocks/${created.body.id}`)).status).to.equal(404);
      expect((await get('/test-clocks')).body.results.map((c: { id: string }) => c.id)).to.not.include(created.body.id);
      // A deleted clock binds nothing.
      expect((await simulatedDeposit(onClock(created.body.id))).status).to.equal(404);
    });

    it('a simulated deposit on a clock: in the 6-hour window at 42.5 h, EXPIRED with one refund child past 48 h, webhooks at the clock’s time', async () => {
      const clock = await newClock('deposit');
      const created = await simulatedDeposit(onClock(clock.id));
      expect(created.status, created.text).to.equal(201);
      const deposit = created.body;
      expect(deposit).to.include({ status: 'CREATED', type: 'LOCAL_DEPOSIT', createdAt: clock.frozenTime });
      expect(deposit.expiresAt).to.equal(later(clock.frozenTime, 48 * HOUR_MS));
      const unbound = ok(await simulatedDeposit(asAlice), 'deposit on the wall clock');

      const inWindow = async (id: string) => {
        const listed = (await get('/payments/unassigned?expiresWithin=6h&limit=500')).body.results as Array<{ id: string; hoursRemaining: number }>;
        const widget = (await get('/accounts/unassigned?currency=ARS')).body.urgent as Array<{ paymentId: string; hoursRemaining: number }>;
        return { listed: listed.find((d) => d.id === id), urgent: widget.find((d) => d.paymentId === id) };
      };
      expect(await inWindow(deposit.id)).to.deep.equal({ listed: undefined, urgent: undefined });

      await advance(clock.id, later(clock.frozenTime, 42.5 * HOUR_MS));
      const window = await inWindow(deposit.id);
      expect(window.listed?.hoursRemaining).to.equal(5.5);
      expect(window.urgent?.hoursRemaining).to.equal(5.5);
      expect(await status(deposit.id)).to.equal('CREATED');
      // The wall clock's deposit is judged by the wall clock: 48 hours away still.
      expect(await inWindow(unbound.id)).to.deep.equal({ listed: undefined, urgent: undefined });

      await advance(clock.id, later(clock.frozenTime, 48 * HOUR_MS + MINUTE_MS));
      expect(await status(deposit.id)).to.equal('EXPIRED');
      const children = (await get(`/payments/${deposit.id}/refund`)).body.refunds as Array<{ id: string; totalAmount: string; createdAt: string }>;
      expect(children).to.have.length(1);
      expect(children[0]!.totalAmount).to.equal('5000.00');
      expect(await status(unbound.id)).to.equal('CREATED');

      // The expiry's business time is the deposit's expiresAt on the clock; the store's is now.
      const history = (await get(`/payments/${deposit.id}/events`)).body.events as Array<{ type: string; occurredAt: string; recordedAt: string }>;
      const expired = history.find((e) => e.type === 'PaymentExpired')!;
      expect(expired.occurredAt).to.equal(deposit.expiresAt);
      expect(Math.abs(Date.parse(expired.recordedAt) - Date.now())).to.be.below(10 * MINUTE_MS);

      const about = (type: string, id: string) => receiver.received.filter((r) => r.body.eventType === type && r.body.transaction?.id === id);
      await until(() => about('payment.expired', deposit.id).length > 0 && about('payment.refund.created', children[0]!.id).length > 0
        && receiver.received.some((r) => r.body.eventType === 'test_clock.ready' && r.body.testClock.id === clock.id
          && r.body.timestamp === later(clock.frozenTime, 48 * HOUR_MS + MINUTE_MS)), { what: 'the deposit’s webhooks' });
      expect(about('payment.expired', deposit.id)[0]!.body.timestamp).to.equal(deposit.expiresAt);
      expect(about('payment.refund.created', children[0]!.id)[0]!.body.timestamp).to.equal(deposit.expiresAt);
      for (const request of receiver.received) expect(payloadProblems(request.body), request.rawBody).to.deep.equal([]);
    });

    it('a T+2 card payment on a clock settles once the clock passes its settlement date; one with expiresAt an hour ahead expires', async () => {
      const clock = await newClock('settlement');
      const cardPayment = ok(await pay(onClock(clock.id), { origins: [card] }), 'card payment');
      expect(cardPayment.createdAt).to.equal(clock.frozenTime);
      const expiring = ok(await pay(onClock(clock.id), { expiresAt: later(clock.frozenTime, HOUR_MS) }), 'expiring payment');
      const unboundCard = ok(await pay(asAlice, { origins: [card] }), 'card payment on the wall clock');
      const unboundExpiring = ok(await pay(asAlice, { expiresAt: later(new Date().toISOString(), HOUR_MS) }), 'expiring payment on the wall clock');
      await until(async () => (await status(cardPayment.id)) === 'RECEIVED' && (await status(unboundCard.id)) === 'RECEIVED',
        { what: 'card payments received' });
      // The scheduled batch settles the wall clock's payment, never the clock's.
      await runSettlementBatch(service.services);
      expect(await status(unboundCard.id)).to.equal('SETTLED');
      expect(await status(cardPayment.id)).to.equal('RECEIVED');

      await advance(clock.id, later(clock.frozenTime, 2 * HOUR_MS));
      expect(await status(expiring.id)).to.equal('EXPIRED');
      expect(await status(cardPayment.id)).to.equal('RECEIVED');
      expect(await status(unboundExpiring.id)).to.be.oneOf(['CREATED', 'PENDING']);

      await advance(clock.id, later(clock.frozenTime, 47 * HOUR_MS));
      expect(await status(cardPayment.id)).to.equal('RECEIVED');
      await advance(clock.id, later(clock.frozenTime, 48 * HOUR_MS + MINUTE_MS));
      expect(await status(cardPayment.id)).to.equal('SETTLED');
      const history = (await get(`/payments/${cardPayment.id}/events`)).body.events as Array<{ type: string; occurredAt: string; data: { at?: string } }>;
      const received = history.find((e) => e.type === 'PaymentReceived')!;
      const settled = history.find((e) => e.type === 'PaymentSettled')!;
      expect(received.occurredAt).to.equal(clock.frozenTime);
      expect(settled.occurredAt).to.equal(later(clock.frozenTime, 48 * HOUR_MS));
      expect(settled.data.at).to.equal(settled.occurredAt);
    });

    it('a checkout session and a payment link on a clock run out when it is advanced', async () => {
      const clock = await newClock('checkout');
      const session = ok(await post('/checkout-sessions', checkoutTerms(), onClock(clock.id)), 'session');
      expect(session).to.include({ status: 'ACTIVE', createdAt: clock.frozenTime, expiresAt: later(clock.frozenTime, 1800 * 1000) });
      const link = ok(await post('/payment-links', { ...checkoutTerms(), duration: 3600 }, onClock(clock.id)), 'link');
      expect(link.status).to.equal(true);
      const fromLink = ok(await post(`/payment-links/token/${link.checkoutToken}/checkout-sessions`), 'session from the link');
      expect(fromLink.createdAt, 'a link’s session follows the link’s clock').to.equal(clock.frozenTime);
      const unbound = ok(await post('/checkout-sessions', checkoutTerms()), 'session on the wall clock');

      await advance(clock.id, later(clock.frozenTime, 31 * MINUTE_MS));
      expect((await get(`/checkout-sessions/${session.id}`)).body.status).to.equal('EXPIRED');
      expect((await get(`/checkout-sessions/${fromLink.id}`)).body.status).to.equal('EXPIRED');
      const expired = (await service.services.storage.store.readStream(sessionStream(session.id), { limit: 100 })).find((e) => e.type === 'CheckoutSessionExpired')!;
      expect((expired.data as { at: string }).at).to.equal(session.expiresAt);
      expect((await get(`/payment-links/${link.id}`)).body.status).to.equal(true);
      expect((await get(`/checkout-sessions/${unbound.id}`)).body.status).to.equal('ACTIVE');

      await advance(clock.id, later(clock.frozenTime, 61 * MINUTE_MS));
      expect((await get(`/payment-links/${link.id}`)).body.status).to.equal(false);
      expect((await service.request('GET', `/pay/${link.checkoutToken}`, { unchecked: true })).status).to.equal(410);
      expect((await post(`/payment-links/token/${link.checkoutToken}/checkout-sessions`)).status).to.equal(422);
      expect((await get(`/payment-links?statuses=false`)).body.results.map((l: { id: string }) => l.id)).to.include(link.id);
    });

    it('refuses an advance backwards, equal, past 90 days or of another client’s clock, recording nothing; of two at once one wins', async () => {
      const clock = await newClock('refusals');
      const before = await clockEvents(clock.id);
      for (const frozenTime of [later(clock.frozenTime, -HOUR_MS), clock.frozenTime, later(clock.frozenTime, 90 * DAY_MS + 1000)]) {
        const refused = await post(`/test-clocks/${clock.id}/advance`, { frozenTime });
        expect(refused.status, refused.text).to.equal(400);
        expect(refused.body.message).to.include('frozenTime');
      }
      expect((await post(`/test-clocks/${clock.id}/advance`, { frozenTime: later(clock.frozenTime, HOUR_MS) }, asBob)).status).to.equal(404);
      expect(await clockEvents(clock.id)).to.deep.equal(before);

      const target = later(clock.frozenTime, 3 * HOUR_MS);
      const raced = await Promise.all([1, 2].map(() => post(`/test-clocks/${clock.id}/advance`, { frozenTime: target })));
      expect(raced.map((r) => r.status).sort()).to.satisfy((statuses: number[]) => statuses[0] === 200 && [400, 422].includes(statuses[1]!));
      expect((await clockEvents(clock.id)).filter((type) => type === 'TestClockAdvanced')).to.have.length(1);
      await until(async () => (await get(`/test-clocks/${clock.id}`)).body.status === 'ready', { what: 'clock ready' });
      // 90 days exactly is allowed.
      await advance(clock.id, later(target, 90 * DAY_MS));
    });

    it('binds nothing to an unknown or another client’s clock: 404, and nothing is created', async () => {
      const bobs = await newClock('bob', asBob);
      const externalId = `order-${++sequence}`;
      for (const clockId of ['no-such-clock', bobs.id]) {
        const refused = await post('/payments', { externalId, identityId, type: 'PURCHASE', accountNumber: brl.accountNumber, currency: 'BRL',
          totalAmount: '10.00' }, onClock(clockId));
        expect(refused.status, refused.text).to.equal(404);
        expect((await post('/checkout-sessions', checkoutTerms(), onClock(clockId))).status).to.equal(404);
        expect((await simulatedDeposit(onClock(clockId))).status).to.equal(404);
      }
      const [created] = await service.services.storage.store.readStream(paymentStream(paymentIdFor(tenants!.alice.clientId, externalId)), { limit: 1 });
      expect(created).to.equal(undefined);
      expect((await post('/payments', {}, { ...asAlice, 'Test-Clock': 'not a clock id!' })).status).to.equal(400);
    });

    it('rebuilds every read model from the log into rows identical to those built live', async () => {
      await waitForNewestEvent(service.services, 60_000);
      await dispatcher.stop();
      await expectRebuildEqualsLive(database, async () => {
        await service.close();
      });
      await database.close();
      tenants = null;
    });
  });
}
