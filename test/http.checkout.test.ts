import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { runSettlementBatch } from '../src/payments/jobs.ts';
import { expireDueSessions } from '../src/checkout/jobs.ts';
import { movableClock, providerReceipts, TEST_CARD } from './support/payments.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const card = { ...TEST_CARD, cvv: '123' };

for (const target of databaseTargets()) {
  describe(`checkout sessions and payment links over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let tenants: TwoTenants;
    let identityId: string;
    let clp: { id: string; accountNumber: string };
    const clock = movableClock();

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const del = (path: string, headers = asAlice) => service.request('DELETE', path, { headers });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const terms = (extra: Record<string, unknown> = {}) => ({
      items: [
        { description: 'Coffee 1 kg', preTaxAmount: '10000', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19' } },
        { description: 'Shipping', preTaxAmount: '2990', tax: { name: 'Fixed fee', type: 'FIXED', value: '10' } },
        { description: 'Sticker', preTaxAmount: '500' },
      ],
      currency: 'CLP', paymentMethodsAllowed: ['CARD', 'FINTOC'],
      destinations: [{ type: 'ACCOUNT', amount: '15400', account: { type: 'CHECKING', currency: 'CLP', accountNumber: clp.accountNumber, accountHolder: 'Shop' } }],
      duration: 600, owner: { identityId, name: 'Shop' }, customerRequirements: ['email', 'firstName'],
      successUrl: 'https://shop.example.com/thanks', failedUrl: 'https://shop.example.com/sorry', ...extra,
    });
    const newSession = async (extra: Record<string, unknown> = {}) => {
      const created = await post('/checkout-sessions', terms(extra));
      expect(created.status, created.text).to.equal(201);
      return created.body;
    };
    const payer = { email: 'ana@example.com', firstName: 'Ana' };

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ service, asAlice, asBob } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL', email: 'shop@example.com' })).body.id;
      const account = await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' });
      clp = { id: account.body.id, accountNumber: account.body.accountNumber };
    });
    after(async () => {
      await tenants?.close();
    });

    it('creates a session with amounts, taxes and payment configs computed from its items', async () => {
      const session = await newSession();
      expect(session).to.include({ status: 'ACTIVE', currency: 'CLP', preTaxAmount: '13490', totalAmount: '15400', paymentLinkId: null, paymentId: null });
      expect(session.items[0]).to.deep.equal({ description: 'Coffee 1 kg', preTaxAmount: '10000', totalAmount: '11900', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19', amount: '1900' } });
      expect(session.items[1].totalAmount).to.equal('3000');
      expect(session.items[2]).to.include({ totalAmount: '500', tax: null });
      expect(session.url).to.equal(`${service.baseUrl}/checkout/${session.checkoutToken}`);
      expect(Date.parse(session.expiresAt) - Date.parse(session.createdAt)).to.equal(600_000);
      const own = session.paymentConfigs[0];
      expect(own).to.include({ currency: 'CLP', product: 'CLP:CLP', exchangeRate: '1' });
      expect(own.paymentMethods.map((m: { type: string }) => m.type)).to.deep.equal(['CARD', 'FINTOC']);
      expect(own.paymentMethods[0]).to.include({ id: 'card-clp', enabled: true, purchaseAmount: '15400' });
      const usdc = session.paymentConfigs.find((c: { currency: string }) => c.currency === 'USD');
      if (usdc) expect(usdc).to.include({ product: 'CLP:USD', exchangeRate: '0.00105' });
      expect((await get(`/checkout-sessions/${session.id}`)).body).to.deep.equal(session);
    });

    it('refuses a client total that disagrees with the items, a pay-out method, a foreign account, naming the field', async () => {
      const wrongTotal = await post('/checkout-sessions', terms({ totalAmount: '15401' }));
      expect(wrongTotal.status).to.equal(400);
      expect(wrongTotal.body.message).to.match(/^totalAmount: 15401 disagrees with the items, which come to 15400 CLP/);
      const wrongItem = await post('/checkout-sessions', { ...terms(), items: [{ description: 'x', preTaxAmount: '100', totalAmount: '120', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19' } }] });
      expect(wrongItem.status).to.equal(400);
      expect(wrongItem.body.message).to.match(/^items\[0\]\.totalAmount/);
      const decimals = await post('/checkout-sessions', { ...terms(), items: [{ description: 'x', preTaxAmount: '100.5' }] });
      expect(decimals.status).to.equal(400);
      expect(decimals.body.message).to.match(/^items\[0\]\.preTaxAmount/);
      const payOut = await post('/checkout-sessions', terms({ paymentMethodsAllowed: ['BANK_ACCOUNT'] }));
      expect(payOut.status).to.equal(400);
      expect(payOut.body.message).to.include('paymentMethodsAllowed[0]');
      const short = await post('/checkout-sessions', terms({ duration: 10 }));
      expect(short.status).to.equal(400);
      expect(short.body.message).to.include('duration');
      const bobs = await post('/checkout-sessions', terms(), asBob);
      expect(bobs.status).to.equal(404);
    });

    it('refuses a session or link no payer could pay: no method of paymentMethodsAllowed is enabled in any of its currencies; nothing is recorded', async () => {
      const before = (await get('/checkout-sessions?limit=1')).body.pagination.total;
      const links = (await get('/payment-links?limit=1')).body.pagination.total;
      for (const path of ['/checkout-sessions', '/payment-links']) {
        for (const [methods, why] of [[['SPEI'], 'SPEI moves MXN'], [['PIX'], 'PIX moves BRL'], [['SPEI', 'PIX'], 'SPEI moves MXN; PIX moves BRL']] as const) {
          const refused = await post(path, terms({ paymentMethodsAllowed: methods }));
          expect(refused.status, `${path} ${methods.join()}: ${refused.text}`).to.equal(400);
          expect(refused.body.message).to.equal(`paymentMethodsAllowed: no method of the list is available for a session of 15400 CLP, so no payer could pay it (${why})`);
        }
        // Moved, but not this amount: CARD takes at least 500 CLP.
        const tiny = await post(path, terms({ paymentMethodsAllowed: ['CARD'], items: [{ description: 'Sticker', preTaxAmount: '100' }],
          destinations: [{ type: 'ACCOUNT', amount: '100', account: { type: 'CHECKING', currency: 'CLP', accountNumber: clp.accountNumber, accountHolder: 'Shop' } }] }));
        expect(tiny.status, tiny.text).to.equal(400);
        expect(tiny.body.message).to.equal('paymentMethodsAllowed: no method of the list is available for a session of 100 CLP, so no payer could pay it '
          + '(CARD takes 500 to 50000000 CLP, the session comes to 100 CLP)');
        // One method a payer can use is enough.
        expect((await post(path, terms({ paymentMethodsAllowed: ['SPEI', 'CARD'] }))).status).to.equal(201);
      }
      expect((await get('/checkout-sessions?limit=1')).body.pagination.total).to.equal(before + 1);
      expect((await get('/payment-links?limit=1')).body.pagination.total).to.equal(links + 1);
    });

    it('refuses destinations that do not add up to the total, pay another account or another rail, naming the destination; nothing is recorded', async () => {
      const account = (amount: string, accountNumber = clp.accountNumber) =>
        ({ type: 'ACCOUNT', amount, account: { type: 'CHECKING', currency: 'CLP', accountNumber, accountHolder: 'Shop' } });
      const other = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' })).body.accountNumber;
      const before = (await get('/checkout-sessions?limit=1')).body.pagination.total;
      const refusals: Array<[string, unknown[], RegExp]> = [
        ['short of the total', [account('15000')], /^destinations: their amounts add up to 15000 CLP; they must add up to the session's totalAmount, 15400 CLP/],
        ['beyond the total', [account('11900'), account('3501')], /^destinations: their amounts add up to 15401 CLP/],
        ['a zero part', [account('15400'), account('0')], /^destinations\[1\]\.amount/],
        ['beyond the scale', [account('15399.5'), account('0.5')], /^destinations\[0\]\.amount/],
        ['a part below the ACCOUNT minimum', [account('15000'), account('400')], /^destinations\[1\]: amount 400 CLP is below the ACCOUNT minimum 500 CLP/],
        ['another rail', [{ type: 'CARD', amount: '15400' }], /^destinations\[0\]\.type: a checkout pays your own accounts only/],
        ['no account object', [{ type: 'ACCOUNT', amount: '15400' }], /^destinations\[0\]\.account: required/],
        ['two accounts', [account('11900'), account('3500', other)], /^destinations\[1\]\.account\.accountNumber: a session's payment credits one account/],
      ];
      for (const [label, destinations, message] of refusals) {
        for (const path of ['/checkout-sessions', '/payment-links']) {
          const refused = await post(path, terms({ destinations }));
          expect(refused.status, `${label} (${path}): ${refused.text}`).to.equal(400);
          expect(refused.body.message, label).to.match(message);
        }
      }
      expect((await get('/checkout-sessions?limit=1')).body.pagination.total).to.equal(before);
    });

    it('pays only with a method of paymentMethodsAllowed: no origin is a 400 naming origins, another method one naming origins[0], and nothing is recorded', async () => {
      const session = await newSession({ paymentMethodsAllowed: ['CARD'] });
      const events = await service.eventCount();
      for (const [body, message] of [
        [{ customer: payer }, /^origins: required: the payer's method, one of paymentMethodsAllowed \(CARD\), with its fields/],
        [{ origins: [], customer: payer }, /^origins: required: /],
        [{}, /^origins: required: /],
        [{ origins: [{ type: 'FINTOC', fintoc: { bank: 'x', documentNumber: '1' } }], customer: payer },
          /^origins\[0\]\.type: FINTOC is not allowed here \(paymentMethodsAllowed: CARD\)$/],
      ] as Array<[Record<string, unknown>, RegExp]>) {
        const refused = await post(`/checkout-sessions/${session.id}/payments`, body);
        expect(refused.status, `${JSON.stringify(body)}: ${refused.text}`).to.equal(400);
        expect(refused.body.error).to.equal('invalidParam');
        expect(refused.body.message).to.match(message);
      }
      expect(await service.eventCount()).to.equal(events);
      expect((await get(`/checkout-sessions/${session.id}`)).body).to.include({ status: 'ACTIVE', paymentId: null });
      expect((await get(`/payments?checkoutSessionId=${session.id}`)).body.results).to.deep.equal([]);
      const paid = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      expect(paid.status, paid.text).to.equal(200);
      expect(paid.body.origins.map((o: { type: string }) => o.type)).to.deep.equal(['CARD']);
    });

    it('pays a session: the payment carries checkoutSessionId and the destinations’ parts of the total, the session follows it to FINISHED', async () => {
      const part = (name: string, amount: string) => ({
        type: 'ACCOUNT', name, externalId: `part-${name}`, amount, metadata: { image: 'https://shop.example.com/i.png', description: name, category: 'shop' },
        account: { type: 'CHECKING', currency: 'CLP', accountNumber: clp.accountNumber, accountHolder: 'Shop' },
      });
      const session = await newSession({ destinations: [part('goods', '11900'), part('shipping', '3500')] });
      expect(session.destinations.map((d: { amount: string }) => d.amount)).to.deep.equal(['11900', '3500']);
      const missing = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: { email: 'ana@example.com' } });
      expect(missing.status).to.equal(400);
      expect(missing.body.message).to.equal('customer: missing required fields firstName');
      const notAllowed = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'WEBPAY', webpay: {} }], customer: payer });
      expect(notAllowed.status).to.equal(400);
      expect(notAllowed.body.message).to.include('paymentMethodsAllowed: CARD, FINTOC');
      expect((await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer }, asBob)).status).to.equal(404);

      const paid = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      expect(paid.status, paid.text).to.equal(200);
      expect(paid.body).to.include({ checkoutSessionId: session.id, totalAmount: '15400', currency: 'CLP', accountNumber: clp.accountNumber, type: 'PURCHASE' });
      // The payment's destinations are the session's parts, ACCOUNT nodes of the credited account, adding up to its total.
      expect(paid.body.destinations.map((d: Record<string, unknown>) => [d.type, d.name, d.externalId, d.amount, d.currency, (d.account as { accountNumber: string }).accountNumber]))
        .to.deep.equal([['ACCOUNT', 'goods', 'part-goods', '11900', 'CLP', clp.accountNumber], ['ACCOUNT', 'shipping', 'part-shipping', '3500', 'CLP', clp.accountNumber]]);
      const detailed = (await get(`/payments/${paid.body.id}`)).body;
      expect(detailed.destinations.map((d: { amount: string }) => d.amount)).to.deep.equal(['11900', '3500']);
      expect(JSON.stringify(paid.body)).not.to.include(card.number);
      const after = (await get(`/checkout-sessions/${session.id}`)).body;
      expect(after).to.include({ status: 'PROCESSING_PAYMENT', paymentId: paid.body.id });
      const again = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      expect(again.status).to.equal(422);
      expect(again.body.message).to.include('PROCESSING_PAYMENT');
      const listed = await get(`/payments?checkoutSessionId=${session.id}`);
      expect(listed.body.results.map((p: { id: string }) => p.id)).to.deep.equal([paid.body.id]);

      await post(`/payments/${paid.body.id}/authorized`);
      await post(`/payments/${paid.body.id}/captured`);
      expect((await received(paid.body.id)).status).to.equal(200);
      await runSettlementBatch(service.services);
      await until(async () => (await get(`/checkout-sessions/${session.id}`)).body.status === 'FINISHED', { what: 'session FINISHED' });
      const v2 = await service.request('GET', `/checkout-sessions?identityId=${identityId}&status=FINISHED`, { headers: { ...asAlice, 'service-api-version': '24-04-2025' } });
      const mine = v2.body.results.find((s: { id: string }) => s.id === session.id);
      expect(mine.payments.map((p: { id: string; status: string }) => [p.id, p.status])).to.deep.equal([[paid.body.id, 'SETTLED']]);
      const bad = await service.request('GET', '/checkout-sessions', { headers: { ...asAlice, 'service-api-version': 'v3' } });
      expect(bad.status).to.equal(400);
    });

    it('pays in another currency of its paymentConfigs: the payment carries that config’s purchaseCurrency, purchaseAmount and product', async () => {
      const session = await newSession();
      const usd = session.paymentConfigs.find((c: { currency: string }) => c.currency === 'USD');
      expect(usd).to.include({ product: 'CLP:USD', exchangeRate: '0.00105' });
      const cardInUsd = usd.paymentMethods.find((m: { type: string }) => m.type === 'CARD');
      expect(cardInUsd).to.include({ enabled: true, purchaseAmount: '16.17' });
      expect(usd.paymentMethods.find((m: { type: string }) => m.type === 'FINTOC')).to.include({ enabled: false });

      const fintocInUsd = await post(`/checkout-sessions/${session.id}/payments`, {
        origins: [{ type: 'FINTOC', currency: 'USD', fintoc: { bank: '001', documentNumber: '12345678-5' } }], customer: payer,
      });
      expect(fintocInUsd.status).to.equal(400);
      expect(fintocInUsd.body.message).to.equal('origins[0].currency: the session does not take FINTOC in USD (it does in CLP)');
      const inEur = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', currency: 'EUR', card }], customer: payer });
      expect(inEur.status).to.equal(400);
      expect(inEur.body.message).to.equal('origins[0].currency: the session does not take CARD in EUR (it does in CLP, USD)');
      expect((await get(`/checkout-sessions/${session.id}`)).body.status).to.equal('ACTIVE');

      const paid = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', currency: 'USD', card }], customer: payer });
      expect(paid.status, paid.text).to.equal(200);
      expect(paid.body).to.include({ totalAmount: '15400', currency: 'CLP', purchaseCurrency: 'USD', purchaseAmount: '16.17', product: 'CLP:USD' });
      expect(paid.body.origins[0]).to.include({ type: 'CARD', currency: 'USD', amount: '16.17' });
      const detailed = (await get(`/payments/${paid.body.id}`)).body;
      expect(detailed.originAmount).to.deep.equal({ amount: '16.17', currency: 'USD' });
      expect(detailed.exchange).to.include({ product: 'CLP:USD', exchangeRate: '0.00105' });
    });

    it('pay from the page raced against DELETE, 20 times: exactly one wins each time, and an EXPIRED session never has a payment', async () => {
      const hostedPay = (token: string) => service.request('POST', `/checkout/${token}/pay`, { body: { method: 'CARD', fields: card, customer: payer } });
      const apiPay = (id: string) => post(`/checkout-sessions/${id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      for (let round = 0; round < 20; round++) {
        const session = await newSession();
        // Both routes pay through the one path; the hosted page is the one the tester raced, the API route every fourth round.
        const [paid, deleted] = await Promise.all([round % 4 === 3 ? apiPay(session.id) : hostedPay(session.checkoutToken), del(`/checkout-sessions/${session.id}`)]);
        expect([paid.status, deleted.status].sort(), `round ${round}: pay ${paid.text} / delete ${deleted.text}`).to.deep.equal([200, 422]);
        const payments = (await get(`/payments?checkoutSessionId=${session.id}`)).body.results as Array<{ id: string }>;
        const now = (await get(`/checkout-sessions/${session.id}`)).body;
        if (deleted.status === 200) {
          expect(now, `round ${round}`).to.include({ status: 'EXPIRED', paymentId: null });
          expect(payments, `round ${round}: payments of an EXPIRED session`).to.deep.equal([]);
          expect(paid.body.message).to.include('EXPIRED');
        } else {
          expect(now, `round ${round}`).to.include({ status: 'PROCESSING_PAYMENT' });
          expect(payments.map((p) => p.id)).to.deep.equal([now.paymentId]);
          expect(deleted.body.message).to.include('PROCESSING_PAYMENT');
        }
      }
    });

    it('a payment refused after the session was reserved for it releases the session: open again, and payable', async () => {
      const session = await newSession();
      // The card's shape is the payments context's to check, after the session's stream took the session for the payment.
      const refused = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card: { ...card, expiryYear: '2001' } }], customer: payer });
      expect(refused.status, refused.text).to.equal(400);
      const events = await service.services.storage.store.readStream(`checkout-session-${session.id}`, { limit: 100 });
      expect(events.map((e) => e.type)).to.deep.equal(['CheckoutSessionCreated', 'CheckoutSessionPaymentStarted', 'CheckoutSessionPaymentReleased']);
      expect((await get(`/checkout-sessions/${session.id}`)).body).to.include({ status: 'ACTIVE', paymentId: null });
      expect((await get(`/payments?checkoutSessionId=${session.id}`)).body.results).to.deep.equal([]);
      const paid = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      expect(paid.status, paid.text).to.equal(200);
      expect((await get(`/checkout-sessions/${session.id}`)).body).to.include({ status: 'PROCESSING_PAYMENT', paymentId: paid.body.id });
    });

    it('a payer on the hosted page who types a known customer’s document number pays as an unknown payer: reviewed, not booked to that customer', async () => {
      const documentNumber = `VIP-${Date.now()}`;
      const vip = await post('/customers', { firstName: 'Vera', lastName: 'Big', email: `vip-${documentNumber}@example.com`, documentType: 'DNI', documentNumber, country: 'CHL' });
      expect(vip.status, vip.text).to.equal(201);
      expect((await service.operator('POST', `/operator/customers/${vip.body.id}/operation-level`, { operationLevel: 'FULL' })).status).to.equal(200);
      // 2,000,000 CLP is about 2,100 USD: past the BASIC review threshold (1,000 USD), under none for a FULL customer.
      const large = (customer?: Record<string, unknown>) => newSession({
        items: [{ description: 'Television', preTaxAmount: '2000000' }], customerRequirements: ['documentNumber', 'firstName'],
        destinations: [{ type: 'ACCOUNT', amount: '2000000', account: { type: 'CHECKING', currency: 'CLP', accountNumber: clp.accountNumber, accountHolder: 'Shop' } }],
        ...(customer ? { customer } : {}),
      });
      const hostedPay = (token: string, customer: Record<string, unknown>) =>
        service.request('POST', `/checkout/${token}/pay`, { body: { method: 'CARD', fields: card, customer } });
      const paymentOf = async (sessionId: string) => (await get(`/payments/${(await get(`/checkout-sessions/${sessionId}`)).body.paymentId}`)).body;

      const claimed = await large();
      const mallory = await hostedPay(claimed.checkoutToken, { documentNumber, firstName: 'Mallory' });
      expect(mallory.status, mallory.text).to.equal(200);
      expect(mallory.body.paymentStatus).to.equal('REQUIRES_REVIEW');
      expect((await paymentOf(claimed.id)).customerId).to.equal(null);
      const unknown = await large();
      const stranger = await hostedPay(unknown.checkoutToken, { documentNumber: `NEW-${Date.now()}`, firstName: 'Anon' });
      expect(stranger.body.paymentStatus).to.equal('REQUIRES_REVIEW');
      expect((await paymentOf(unknown.id)).customerId).to.be.a('string').and.not.equal(vip.body.id);
      const byId = await large();
      expect((await hostedPay(byId.checkoutToken, { id: vip.body.id, documentNumber: 'x12', firstName: 'M' })).body.message)
        .to.equal('body field customer.id is not allowed');
      expect((await get(`/checkout-sessions/${byId.id}`)).body).to.include({ status: 'ACTIVE', paymentId: null });

      // The merchant named the customer on the session (by id, or by document number the payer keeps): it is the payer.
      for (const customer of [{ id: vip.body.id }, { documentNumber }]) {
        const named = await large(customer);
        const paid = await hostedPay(named.checkoutToken, { documentNumber, firstName: 'Vera' });
        expect(paid.status, paid.text).to.equal(200);
        expect(paid.body.paymentStatus, JSON.stringify(customer)).to.equal('CREATED');
        expect((await paymentOf(named.id)).customerId).to.equal(vip.body.id);
      }
      // Through the API the fields are the merchant's own word, matched as POST /payments matches them.
      const api = await large();
      const paid = await post(`/checkout-sessions/${api.id}/payments`, { origins: [{ type: 'CARD', card }], customer: { documentNumber, firstName: 'Vera' } });
      expect(paid.body).to.include({ customerId: vip.body.id, status: 'CREATED' });
    });

    it('pay from the page is held to the API’s schema: an unknown card field or a malformed cvv is a 400 naming the field, and nothing changes', async () => {
      const session = await newSession();
      const hostedPay = (fields: Record<string, string>, method = 'CARD') =>
        service.request('POST', `/checkout/${session.checkoutToken}/pay`, { body: { method, fields, customer: payer } });
      const refusals: Array<[Record<string, string>, string]> = [
        [{ ...card, pin: '1234' }, 'body field fields.pin is not allowed'],
        [{ ...card, cvv: '12' }, 'body field fields.cvv must match pattern "^\\d{3,4}$"'],
      ];
      for (const [fields, message] of refusals) {
        const refused = await hostedPay(fields);
        expect(refused.status, refused.text).to.equal(400);
        expect(refused.body.message).to.equal(message);
      }
      const api = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card: { ...card, pin: '1234' } }], customer: payer });
      expect(api.body.message).to.equal('body field origins[0].card.pin is not allowed');
      expect((await get(`/checkout-sessions/${session.id}`)).body).to.include({ status: 'ACTIVE', paymentId: null });
      const events = await service.services.storage.store.readStream(`checkout-session-${session.id}`, { limit: 100 });
      expect(events.map((e) => e.type)).to.deep.equal(['CheckoutSessionCreated']);
      expect((await get(`/payments?checkoutSessionId=${session.id}`)).body.results).to.deep.equal([]);
      const paid = await hostedPay(card);
      expect(paid.status, paid.text).to.equal(200);
    });

    it('refuses a pay whose origin amount contradicts what the session charges, naming origins[0].amount; the session stays ACTIVE', async () => {
      const session = await newSession();
      const wrong = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', amount: '5000', card }], customer: payer });
      expect(wrong.status, wrong.text).to.equal(400);
      expect(wrong.body.message).to.equal('origins[0].amount: 5000 CLP differs from the 15400 CLP the payment charges');
      const wrongInUsd = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', currency: 'USD', amount: '5.00', card }], customer: payer });
      expect(wrongInUsd.status, wrongInUsd.text).to.equal(400);
      expect(wrongInUsd.body.message).to.equal('origins[0].amount: 5.00 USD differs from the 16.17 USD the payment charges');
      expect((await get(`/checkout-sessions/${session.id}`)).body.status).to.equal('ACTIVE');
      const paid = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', amount: '15400', card }], customer: payer });
      expect(paid.status, paid.text).to.equal(200);
    });

    it('a declined card fails the session', async () => {
      const session = await newSession();
      const paid = await post(`/checkout-sessions/${session.id}/payments`, {
        origins: [{ type: 'CARD', card: { ...card, number: '4000000000000002' } }], customer: payer,
      });
      expect(paid.status, paid.text).to.equal(200);
      await post(`/payments/${paid.body.id}/authorized`);
      await until(async () => (await get(`/checkout-sessions/${session.id}`)).body.status === 'FAILED', { what: 'session FAILED' });
      expect((await del(`/checkout-sessions/${session.id}`)).status).to.equal(422);
    });

    it('expires by time (readers at once, the job records it), refreshes, and expires on DELETE', async () => {
      const session = await newSession({ duration: 60 });
      clock.advance(30_000);
      const refreshed = await post(`/checkout-sessions/token/${session.checkoutToken}/refresh`);
      expect(refreshed.status).to.equal(200);
      // now + duration: 30 s (the clock's move) or more later than the first expiresAt.
      expect(Date.parse(refreshed.body.expiresAt) - Date.parse(session.expiresAt)).to.be.at.least(30_000);
      expect(refreshed.body.status).to.equal('ACTIVE');
      expect((await post(`/checkout-sessions/token/${session.checkoutToken}/refresh`, undefined, asBob)).status).to.equal(404);
      clock.advance(61_000);
      expect((await get(`/checkout-sessions/${session.id}`)).body.status).to.equal('EXPIRED');
      const late = await post(`/checkout-sessions/${session.id}/payments`, { origins: [{ type: 'CARD', card }], customer: payer });
      expect(late.status).to.equal(422);
      expect(late.body.message).to.include('EXPIRED');
      expect((await post(`/checkout-sessions/token/${session.checkoutToken}/refresh`)).status).to.equal(422);
      const run = await expireDueSessions(service.services);
      expect(run.expired).to.be.at.least(1);
      const listed = await get(`/checkout-sessions?status=EXPIRED&sort=expiresAt:asc&limit=500`);
      expect(listed.body.results.map((s: { id: string }) => s.id)).to.include(session.id);

      const deleted = await newSession();
      expect((await del(`/checkout-sessions/${deleted.id}`, asBob)).status).to.equal(404);
      const answer = await del(`/checkout-sessions/${deleted.id}`);
      expect(answer.status).to.equal(200);
      expect(answer.body.status).to.equal('EXPIRED');
      expect((await del(`/checkout-sessions/${deleted.id}`)).status).to.equal(200);
      expect((await get(`/checkout-sessions/${deleted.id}`, asBob)).status).to.equal(404);
    });

    it('the expiry job on two instances at once records each expiry once: the session’s stream decides', async () => {
      const sessions = [await newSession({ duration: 30 }), await newSession({ duration: 30 })];
      clock.advance(31_000);
      await Promise.all([expireDueSessions(service.services), expireDueSessions(service.services)]);
      for (const session of sessions) {
        const events = await service.services.storage.store.readStream(`checkout-session-${session.id}`, { limit: 100 });
        expect(events.map((e) => e.type)).to.deep.equal(['CheckoutSessionCreated', 'CheckoutSessionExpired']);
      }
      expect((await expireDueSessions(service.services)).expired).to.equal(0);
    });

    it('lists with filters, dates, sort and paging, only the client’s own', async () => {
      const today = new Date(clock.now());
      const day = `${String(today.getUTCDate()).padStart(2, '0')}/${String(today.getUTCMonth() + 1).padStart(2, '0')}/${today.getUTCFullYear()}`;
      const all = await get(`/checkout-sessions?startDate=${day}&endDate=${day}&limit=500`);
      expect(all.status).to.equal(200);
      // The interface's shape: {pagination {count, next, previous, total}, results}.
      expect(Object.keys(all.body).sort()).to.deep.equal(['pagination', 'results']);
      expect(Object.keys(all.body.pagination).sort()).to.deep.equal(['count', 'next', 'previous', 'total']);
      expect(all.body.pagination.total).to.be.at.least(4);
      const byAccount = await get(`/checkout-sessions?accountNumber=${clp.accountNumber}&limit=2&offset=1&sort=totalAmount:desc`);
      expect(byAccount.body.results).to.have.length(2);
      expect(byAccount.body.pagination).to.include({ count: 2, previous: 0 });
      expect((await get('/checkout-sessions?accountNumber=none')).body.results).to.deep.equal([]);
      expect((await get('/checkout-sessions', asBob)).body.pagination.total).to.equal(0);
      expect((await get('/checkout-sessions?startDate=31/02/2026')).status).to.equal(400);
      expect((await get('/checkout-sessions?sort=color:asc')).status).to.equal(400);
      expect((await get('/checkout-sessions/nope')).status).to.equal(404);
    });

    it('payment links: active for duration seconds, activation, a session from the link, delete then 404, list filters', async () => {
      const created = await post('/payment-links', terms({ duration: 120, customer: { email: 'Payer@Example.com' } }));
      expect(created.status, created.text).to.equal(201);
      const link = created.body;
      expect(link).to.include({ status: true, duration: 120, totalAmount: '15400', currency: 'CLP' });
      expect(link.url).to.equal(`${service.baseUrl}/pay/${link.checkoutToken}`);
      expect((await get(`/payment-links/${link.id}`, asBob)).status).to.equal(404);

      const opened = await post(`/payment-links/token/${link.checkoutToken}/checkout-sessions`);
      expect(opened.status, opened.text).to.equal(201);
      expect(opened.body).to.include({ status: 'ATTEMPT', paymentLinkId: link.id, totalAmount: '15400' });
      expect((await post(`/payment-links/token/${link.checkoutToken}/checkout-sessions`, undefined, asBob)).status).to.equal(404);
      const chooseMethod = (method: string) => service.request('POST', `/checkout/${opened.body.checkoutToken}/method`, { body: { method } });
      const refused = await chooseMethod('PIX');
      expect(refused.status).to.equal(400);
      expect(refused.body.message).to.include('paymentMethodsAllowed: CARD, FINTOC');
      expect((await chooseMethod('FINTOC')).body.status).to.equal('ACTIVE');
      expect((await get(`/checkout-sessions/${opened.body.id}`)).body.status).to.equal('ACTIVE');

      clock.advance(121_000);
      expect((await get(`/payment-links/${link.id}`)).body.status).to.equal(false);
      const inactive = await post(`/payment-links/token/${link.checkoutToken}/checkout-sessions`);
      expect(inactive.status).to.equal(422);
      expect((await get(`/payment-links?ids=${link.id}&statuses=false`)).body.results.map((l: { id: string }) => l.id)).to.deep.equal([link.id]);
      expect((await get(`/payment-links?ids=${link.id}&statuses=ACTIVE`)).body.results).to.deep.equal([]);
      const activated = await post(`/payment-links/${link.id}/activate`);
      expect(activated.status).to.equal(200);
      expect(activated.body.status).to.equal(true);
      expect((await post(`/payment-links/${link.id}/activate`, undefined, asBob)).status).to.equal(404);

      const filtered = await get(`/payment-links?customerEmails=payer@example.com,other@example.com&identityIds=${identityId}&accountNumbers=${clp.accountNumber}&limit=1`);
      expect(filtered.body.results.map((l: { id: string }) => l.id)).to.deep.equal([link.id]);
      expect(filtered.body.pagination).to.deep.equal({ count: 1, next: 1, previous: 0, total: 1 });
      expect((await get('/payment-links', asBob)).body).to.deep.equal({ pagination: { count: 0, next: 0, previous: 0, total: 0 }, results: [] });
      const bobsIdentity = await post('/payment-links', terms(), asBob);
      expect(bobsIdentity.status, 'a link for another client’s identity and account').to.equal(404);
      expect((await get('/payment-links?statuses=maybe')).status).to.equal(400);
      expect((await get(`/payment-links?cursor=0&limit=500`)).body.results.length).to.be.at.least(1);

      expect((await del(`/payment-links/${link.id}`, asBob)).status).to.equal(404);
      expect((await del(`/payment-links/${link.id}`)).status).to.equal(200);
      expect((await get(`/payment-links/${link.id}`)).status).to.equal(404);
      expect((await del(`/payment-links/${link.id}`)).status).to.equal(404);
      expect((await get(`/payment-links?ids=${link.id}`)).body.results).to.deep.equal([]);
      const page = await service.request('GET', `/pay/${link.checkoutToken}`, { unchecked: true });
      expect(page.status).to.equal(410);
      expect(page.text).to.include('This payment link is deactivated');
    });

    it('every session and link endpoint with an id or token: malformed is a 400 naming it, unknown or another client’s a 404, and nothing is recorded', async () => {
      const session = await newSession();
      const link = (await post('/payment-links', terms())).body;
      const pay = { origins: [{ type: 'CARD', card }], customer: payer };
      const endpoints: Array<{ method: string; path: (key: string) => string; own: string; param: 'id' | 'token'; body?: unknown }> = [
        { method: 'GET', path: (id) => `/checkout-sessions/${id}`, own: session.id, param: 'id' },
        { method: 'DELETE', path: (id) => `/checkout-sessions/${id}`, own: session.id, param: 'id' },
        { method: 'POST', path: (id) => `/checkout-sessions/${id}/payments`, own: session.id, param: 'id', body: pay },
        { method: 'POST', path: (token) => `/checkout-sessions/token/${token}/refresh`, own: session.checkoutToken, param: 'token' },
        { method: 'POST', path: (token) => `/payment-links/token/${token}/checkout-sessions`, own: link.checkoutToken, param: 'token' },
        { method: 'GET', path: (id) => `/payment-links/${id}`, own: link.id, param: 'id' },
        { method: 'DELETE', path: (id) => `/payment-links/${id}`, own: link.id, param: 'id' },
        { method: 'POST', path: (id) => `/payment-links/${id}/activate`, own: link.id, param: 'id' },
      ];
      const streams = async () => Promise.all([`checkout-session-${session.id}`, `payment-link-${link.id}`]
        .map(async (stream) => (await service.services.storage.store.readStream(stream, { limit: 100 })).length));
      const recorded = await streams();
      const sessions = (await get('/checkout-sessions?limit=1')).body.pagination.total;
      for (const { method, path, own, param, body } of endpoints) {
        const call = (key: string, headers = asAlice) => service.request(method, path(key), { headers, body });
        const malformed = await call(param === 'id' ? 'not%20an%20id' : 'short');
        expect(malformed.status, `${method} ${path(':' + param)} malformed: ${malformed.text}`).to.equal(400);
        expect(malformed.body.message).to.include(param);
        const unknown = await call(param === 'id' ? 'no-such-object' : 'unknownunknownunknown');
        expect(unknown.status, `${method} ${path(':' + param)} unknown`).to.equal(404);
        expect(unknown.body.error).to.equal('notFound');
        const bobs = await call(own, asBob);
        expect(bobs.status, `${method} ${path(':' + param)} as another client`).to.equal(404);
        expect(bobs.body.error).to.equal('notFound');
      }
      expect(await streams()).to.deep.equal(recorded);
      expect((await get('/checkout-sessions?limit=1')).body.pagination.total).to.equal(sessions);
      expect((await get(`/checkout-sessions/${session.id}`)).body.status).to.equal('ACTIVE');
      expect((await get(`/payment-links/${link.id}`)).body.status).to.equal(true);
    });

    it('serves the session page with a strict Content-Security-Policy and no inline script', async () => {
      const session = await newSession();
      const page = await service.request('GET', `/checkout/${session.checkoutToken}`, { unchecked: true });
      expect(page.status).to.equal(200);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).to.include("default-src 'none'");
      expect(csp).not.to.include('unsafe-inline');
      expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
      expect(page.text).not.to.match(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(page.text).not.to.match(/\b(?:src|href)="(?:https?:)?\/\//);
      expect(page.text).to.include('15400 CLP');
      expect(page.text).to.include('IVA (19%)');
      expect(page.text).to.include('<label for="customer-email">');
      const status = await service.request('GET', `/checkout/${session.checkoutToken}/status`);
      expect(status.body).to.deep.equal({ status: 'ACTIVE', paymentStatus: null, redirectTo: null });
      expect((await service.request('GET', '/checkout/unknownunknownunknown', { unchecked: true })).status).to.equal(404);
    });

    it('the page’s status poll draws on its checkout token’s budget, not its address’s: past the address’s limit it answers, and it is bounded itself', async () => {
      const limited = await startTestService(tenants.database, { runtime: clock, env: {
        ADDRESS_RATE_LIMIT_PER_SECOND: '1', ADDRESS_RATE_LIMIT_BURST: '3', CHECKOUT_STATUS_RATE_LIMIT_PER_SECOND: '1', CHECKOUT_STATUS_RATE_LIMIT_BURST: '10',
      } });
      try {
        const session = await newSession();
        const poll = (token: string = session.checkoutToken) => limited.request('GET', `/checkout/${token}/status`);
        /** Spends the address's budget on the session's page (a public route), bounded; answers the last answer. */
        const exhaustAddress = async () => {
          let last = await limited.request('GET', `/checkout/${session.checkoutToken}`, { unchecked: true });
          for (let i = 0; i < 10 && last.status !== 429; i++) last = await limited.request('GET', `/checkout/${session.checkoutToken}`, { unchecked: true });
          return last;
        };
        expect((await poll()).status).to.equal(200);
        expect((await exhaustAddress()).status).to.equal(429);
        // More polls than the address's whole burst, each answered: the poll does not draw on the address's budget.
        for (let n = 0; n < 6; n++) {
          const answer = await poll();
          expect(answer.status, `poll ${n}: ${answer.text}`).to.equal(200);
          expect(answer.body.status).to.equal('ACTIVE');
        }
        // The poll's own budget (10, a token a second) runs out too: bounded, at most 40 polls here.
        let last = await poll();
        for (let i = 0; i < 40 && last.status !== 429; i++) last = await poll();
        expect(last.status, last.text).to.equal(429);
        expect(last.body.error).to.equal('tooManyRequests');
        expect(Number(last.headers.get('retry-after'))).to.be.greaterThan(0);
        // A token the poll has not seen needs a token left at its address: guessing tokens costs what any public request does.
        // The address refills a token a second, so on a slow machine empty it again until a guess meets an empty bucket.
        let guess = await poll('unknownunknownunknown');
        for (let i = 0; i < 5 && guess.status !== 429; i++) {
          expect(guess.status).to.equal(404);
          await exhaustAddress();
          guess = await poll('unknownunknownunknown');
        }
        expect(guess.status).to.equal(429);
      } finally {
        await limited.close();
      }
    });
  });
}
