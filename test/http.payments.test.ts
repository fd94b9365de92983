import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import type { TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { expireDuePayments, runSettlementBatch } from '../src/payments/jobs.ts';
import { movableClock, providerReceipts, TEST_CARD } from './support/payments.ts';
import { storedEvents } from '../src/contexts.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const card = { ...TEST_CARD, cvv: '123' };

for (const target of databaseTargets()) {
  describe(`payments over HTTP, autopilot off: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let tenants: TwoTenants;
    let identityId: string;
    let usd: { id: string; accountNumber: string };
    let brl: { id: string; accountNumber: string };
    const clock = movableClock();
    let sequence = 0;

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const create = (body: Record<string, unknown>) => post('/payments', {
      externalId: `order-${++sequence}`, identityId, type: 'PURCHASE', ...body,
    });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const balanceOf = async (accountId: string) => (await get(`/accounts/${accountId}`)).body.balance as string;
    const trialBalance = async () => (await database.query<{ currency: string; balance_sum: string; balanced: boolean }>(
      'SELECT currency, balance_sum::text, balanced FROM trial_balance ORDER BY currency')).rows;
    const systemBalance = async (accountId: string) => (await database.query<{ balance: string }>(
      'SELECT balance::text FROM account_balances WHERE account_id = $1', [accountId])).rows[0]?.balance ?? '0';

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ database, service, asAlice, asBob } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'BRA', email: 'shop@example.com' })).body.id;
      const open = async (currency: string) => {
        const response = await post('/accounts', { identityId, type: 'CHECKING', currency });
        return { id: response.body.id as string, accountNumber: response.body.accountNumber as string };
      };
      usd = await open('USD');
      brl = await open('BRL');
    });
    after(async () => {
      await tenants?.close();
    });

    it('drives a card payment CREATED → AUTHORIZED → CAPTURED → RECEIVED → SETTLED, and the ledger follows', async () => {
      const created = await create({ accountNumber: usd.accountNumber, totalAmount: '100.00', currency: 'USD', origins: [{ type: 'CARD', card }] });
      expect(created.status).to.equal(200);
      expect(created.body).to.include({ status: 'CREATED', totalAmount: '100.00', currency: 'USD', settlement: 'T+2' });
      expect(created.body.fees).to.deep.equal([{ name: 'CARD fee', type: 'PERCENTAGE', value: '2.9', amount: '2.90', currency: 'USD' }]);
      expect(JSON.stringify(created.body)).not.to.include(card.number);
      const id = created.body.id as string;

      expect((await post(`/payments/${id}/captured`)).status).to.equal(422);
      const authorized = await post(`/payments/${id}/authorized`);
      expect(authorized.body.status).to.equal('AUTHORIZED');
      expect(authorized.body.authorizedAt).to.be.a('string');
      const again = await post(`/payments/${id}/authorized`);
      expect(again.status).to.equal(422);
      expect(again.body.message).to.include('AUTHORIZED');
      const captured = await post(`/payments/${id}/captured`);
      expect(captured.body).to.include({ status: 'CAPTURED' });
      expect(captured.body.capturedAt).to.be.a('string');

      const receivedAnswer = await received(id);
      expect(receivedAnswer.status).to.equal(200);
      expect(receivedAnswer.body.status).to.equal('RECEIVED');

      const batch = await runSettlementBatch(service.services);
      expect(batch.settled).to.be.at.least(1);
      const detail = await get(`/payments/${id}`);
      expect(detail.body).to.include({ status: 'SETTLED', settlementBatchId: batch.batchId });
      expect(detail.body.destinationAmount).to.deep.equal({ amount: '97.10', currency: 'USD' });
      expect(detail.body.settledAt).to.be.a('string');

      expect(await balanceOf(usd.id)).to.equal('97.10');
      expect(await systemBalance('system:USD:fees')).to.equal('2.90');
      expect(await systemBalance('system:USD:clearing')).to.equal('-100.00');
      for (const row of await trialBalance()) expect(row.balanced, `trial balance of ${row.currency}`).to.equal(true);

      const history = await get(`/payments/${id}/events`);
      expect(history.body.events.map((e: { type: string }) => e.type)).to.deep.equal(
        ['PaymentCreated', 'PaymentAuthorized', 'PaymentCaptured', 'PaymentReceived', 'PaymentSettled']);
      expect(history.body.events[3].actor).to.equal('provider');
    });

    it('receives a push-rail payment through a signed notification; a bad signature is 401 and changes nothing', async () => {
      const created = await create({
        accountNumber: brl.accountNumber, totalAmount: '50.00', currency: 'BRL', origins: [{ type: 'PIX', pix: { key: 'payer@example.com' } }],
      });
      const id = created.body.id as string;
      expect(created.body.settlement).to.equal('INSTANT');
      expect((await post(`/payments/${id}/authorized`)).status).to.equal(422);

      const events = await service.eventCount();
      const forged = await received(id, providerSignature('another-secret', id));
      expect(forged.status).to.equal(401);
      expect(forged.body.error).to.equal('unauthorized');
      expect(await service.eventCount()).to.equal(events);
      expect((await get(`/payments/${id}`)).body.status).to.equal('CREATED');

      const answer = await received(id);
      expect(answer.body.status).to.equal('SETTLED');
      expect(answer.body.settlementBatchId).to.equal(null);
      expect(await balanceOf(brl.id)).to.equal('49.50'); // the PIX fee, 0.99 % of 50.00 = 0.495, rounds half-up to 0.50
      expect((await received(id)).status).to.equal(422);
      expect((await received('no-such-payment')).status).to.equal(404);
    });

    it('reviews by operation level: approval resumes the lifecycle, rejection fails the payment', async () => {
      const customer = (await post('/customers', { documentNumber: `doc-${sequence}`, firstName: 'Ana' })).body.id as string;
      const big = { accountNumber: usd.accountNumber, totalAmount: '1500.00', currency: 'USD', customerId: customer, origins: [{ type: 'CARD', card }] };
      const first = await create(big);
      expect(first.body.status).to.equal('REQUIRES_REVIEW');
      expect((await post(`/payments/${first.body.id}/authorized`)).status).to.equal(422);
      const document = await post(`/payments/${first.body.id}/documents`, { type: 'INVOICE', url: 'https://example.com/invoice.pdf' });
      expect(document.status).to.equal(201);
      expect(document.body).to.include({ paymentId: first.body.id, type: 'INVOICE' });
      const approved = await service.operator('POST', `/operator/payments/${first.body.id}/review`, { decision: 'APPROVED' });
      expect(approved.body.status).to.equal('CREATED');
      expect((await post(`/payments/${first.body.id}/authorized`)).body.status).to.equal('AUTHORIZED');
      expect((await post(`/payments/${first.body.id}/documents`, { type: 'INVOICE' })).status).to.equal(422);

      const second = await create(big);
      const rejected = await service.operator('POST', `/operator/payments/${second.body.id}/review`, { decision: 'REJECTED' });
      expect(rejected.body).to.include({ status: 'FAILED', failureReason: 'REVIEW_REJECTED' });
      expect((await service.operator('POST', `/operator/payments/${second.body.id}/review`, { decision: 'APPROVED' })).status).to.equal(422);

      const link = await get(`/payments/${second.body.id}/customer`);
      expect(link.body).to.include({ paymentId: second.body.id, attached: true });
      expect(link.body.customer.id).to.equal(customer);

      expect((await service.operator('POST', `/operator/customers/${customer}/operation-level`, { operationLevel: 'INACTIVE' })).status).to.equal(200);
      expect((await create(big)).body).to.include({ status: 'FAILED', failureReason: 'CUSTOMER_INACTIVE' });
      await service.operator('POST', `/operator/customers/${customer}/operation-level`, { operationLevel: 'FULL' });
      expect((await create(big)).body.status).to.equal('CREATED');
    });

    it('takes the payer as customer fields: matched on documentNumber, else created as autoCreated', async () => {
      const payer = { documentNumber: `payer-${sequence}`, firstName: 'Bea', email: 'bea@example.com' };
      const first = await create({ accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD', customer: payer });
      const customerId = first.body.customerId as string;
      const created = (await get(`/customers/${customerId}`)).body;
      expect(created).to.include({ documentNumber: payer.documentNumber, autoCreated: true });
      const second = await create({ accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD', customer: payer });
      expect(second.body.customerId).to.equal(customerId);
      const both = await create({ accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD', customer: payer, customerId });
      expect(both.status).to.equal(400);
      const customers = (await get(`/customers?documentNumber=${payer.documentNumber}`)).body.pagination.total;
      expect(customers).to.equal(1);
    });

    it('expires a payment whose expiresAt has passed, and only then', async () => {
      const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString();
      const created = await create({ accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD', expiresAt });
      const id = created.body.id as string;
      await expireDuePayments(service.services);
      expect((await get(`/payments/${id}`)).body.status).to.equal('CREATED');
      clock.advance(61_000);
      const result = await expireDuePayments(service.services);
      expect(result.expired).to.be.at.least(1);
      const detail = (await get(`/payments/${id}`)).body;
      expect(detail.status).to.equal('EXPIRED');
      expect(detail.expiredAt).to.be.a('string');
      expect((await received(id)).status).to.equal(422);
    });

    it('leaves a payment to a BLOCKED account UNSETTLED, with its funds in suspense', async () => {
      const account = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body;
      const created = await create({ accountNumber: account.accountNumber, totalAmount: '20.00', currency: 'USD' });
      await service.request('PATCH', `/accounts/${account.id}`, { headers: asAlice, body: { status: 'BLOCKED' } });
      const suspenseBefore = await systemBalance('system:USD:suspense');
      const answer = await received(created.body.id);
      expect(answer.body).to.include({ status: 'UNSETTLED', unsettledReason: 'ACCOUNT_NOT_ACTIVE' });
      expect(answer.body.unsettledAt).to.be.a('string');
      expect(await balanceOf(account.id)).to.equal('0.00');
      expect(Number(await systemBalance('system:USD:suspense')) - Number(suspenseBefore)).to.equal(20);
      for (const row of await trialBalance()) expect(row.balanced, `trial balance of ${row.currency}`).to.equal(true);
    });

    it('refuses what does not fit: another client’s payment or account is 404, a reused externalId 409, a currency mismatch 400', async () => {
      const created = await create({ accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD' });
      expect((await get(`/payments/${created.body.id}`, asBob)).status).to.equal(404);
      expect((await post(`/payments/${created.body.id}/authorized`, undefined, asBob)).status).to.equal(404);
      const reused = await post('/payments', { externalId: created.body.externalId, identityId, type: 'PURCHASE', accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD' });
      expect(reused.status).to.equal(409);
      const mismatch = await create({ accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'BRL' });
      expect(mismatch.status).to.equal(400);
      expect(mismatch.body.message).to.include('currency');
      const scale = await create({ accountNumber: usd.accountNumber, totalAmount: '5.001', currency: 'USD' });
      expect(scale.status).to.equal(400);
      expect(scale.body.message).to.include('totalAmount');
      const foreign = await create({ accountNumber: '999999999999', totalAmount: '5.00', currency: 'USD' });
      expect(foreign.status).to.equal(404);
      const below = await create({ accountNumber: brl.accountNumber, totalAmount: '0.50', currency: 'BRL', origins: [{ type: 'PIX', pix: { key: 'k' } }] });
      expect(below.status).to.equal(400);
      expect(below.body.message).to.match(/minimum/i);
    });

    it('refuses an ACCOUNT node naming another client’s account or none (400 naming the field, as attempts do), and records nothing', async () => {
      const bobsIdentity = (await post('/identities', { type: 'USER', name: 'Bo' }, asBob)).body.id;
      const bobsAccount = (await post('/accounts', { identityId: bobsIdentity, type: 'CHECKING', currency: 'USD' }, asBob)).body.accountNumber as string;
      const usdMore = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body.accountNumber as string;
      for (const [side, accountNumber, refusal] of [
        ['destinations', bobsAccount, /^destinations\[0\]\.account\.accountNumber: no account \d+ of this client$/],
        ['destinations', '999999999999', /^destinations\[0\]\.account\.accountNumber: no account 999999999999 of this client$/],
        ['destinations', brl.accountNumber, /^destinations\[0\]\.account\.accountNumber: account \d+ holds BRL, not USD$/],
        ['origins', bobsAccount, /^origins\[0\]\.account\.accountNumber: no account \d+ of this client$/],
      ] as Array<[string, string, RegExp]>) {
        const body = { accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD', [side]: [{ type: 'ACCOUNT', account: { accountNumber } }] };
        const events = await service.eventCount();
        const externalId = `order-${++sequence}`;
        const refused = await create({ externalId, ...body });
        expect(refused.status, `${side} ${accountNumber}: ${refused.text}`).to.equal(400);
        expect(refused.body.error).to.equal('invalidParam');
        expect(refused.body.message).to.match(refusal);
        expect(await service.eventCount()).to.equal(events);
        // The attempt route answers the same body the same way.
        const attempt = await post('/payment-attempts', { identityId, type: 'PURCHASE', ...body });
        expect(attempt.status, attempt.text).to.equal(400);
        expect(attempt.body.message).to.equal(refused.body.message);
      }
      // The client's own account, in the node's currency, passes.
      const own = await create({ accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD',
        destinations: [{ type: 'ACCOUNT', account: { accountNumber: usdMore } }] });
      expect(own.status, own.text).to.equal(200);
      expect(own.body.destinations[0].account).to.deep.equal({ accountNumber: usdMore });
    });

    it('refuses type REFUND on create with a 400 naming type and the refund route, and records nothing', async () => {
      const externalId = `order-${++sequence}`;
      const refused = await post('/payments', { externalId, identityId, type: 'REFUND', accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD' });
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.message).to.match(/^type: /).and.to.include('POST /payments/{id}/refund');
      const attempt = await post('/payment-attempts', { identityId, type: 'REFUND', accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD' });
      expect(attempt.status, attempt.text).to.equal(400);
      expect(attempt.body.message).to.match(/^type: /);
      const listed = await get('/payments?type=REFUND&limit=500');
      expect(listed.body.results.filter((p: any) => p.externalId === externalId)).to.deep.equal([]);
      // The same externalId is still free.
      expect((await create({ externalId, accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD' })).status).to.equal(200);
    });

    it('refuses origins whose amounts contradict what the payment charges (400 naming the amount), and records nothing', async () => {
      const cardFor = (amount?: string) => ({ type: 'CARD', card, ...(amount === undefined ? {} : { amount }) });
      const refused = async (origins: unknown[], pattern: RegExp) => {
        const externalId = `order-${++sequence}`;
        const response = await create({ externalId, accountNumber: usd.accountNumber, totalAmount: '12.50', currency: 'USD', origins });
        expect(response.status, response.text).to.equal(400);
        expect(response.body.message).to.match(pattern);
        expect((await get(`/payments?limit=500`)).body.results.filter((p: any) => p.externalId === externalId)).to.deep.equal([]);
      };
      await refused([cardFor('5.00')], /^origins\[0\]\.amount: 5\.00 USD differs from the 12\.50 USD the payment charges$/);
      await refused([{ ...cardFor('12.50'), currency: 'EUR' }], /^origins\[0\]\.amount: .* is not in USD/);
      await refused([cardFor('5.00'), cardFor('5.00')], /^origins\[0\.\.1\]\.amount: they add up to 10\.00 USD, not the 12\.50 USD/);
      await refused([cardFor('5.00'), cardFor()], /^origins\[1\]\.amount: required when the payment has several origins/);

      const exact = await create({ accountNumber: usd.accountNumber, totalAmount: '12.50', currency: 'USD', origins: [cardFor('12.5')] });
      expect(exact.status, exact.text).to.equal(200);
      expect(exact.body.origins[0]).to.include({ amount: '12.50', currency: 'USD' });
      const split = await create({ accountNumber: usd.accountNumber, totalAmount: '12.50', currency: 'USD', origins: [cardFor('10.00'), cardFor('2.50')] });
      expect(split.status, split.text).to.equal(200);
      expect(split.body.origins.map((o: any) => o.amount)).to.deep.equal(['10.00', '2.50']);
      const defaulted = await create({ accountNumber: usd.accountNumber, totalAmount: '12.50', currency: 'USD', origins: [cardFor()] });
      expect(defaulted.body.origins[0]).to.include({ amount: '12.50' });
    });

    it('masks a card to its last four digits, and its first six only from 16 digits, in answers, reads and stored events', async () => {
      const cases = [
        ['411111111117', '********1117', undefined],
        ['378282246310005', '***********0005', undefined],
        ['4111111111111111', '411111******1111', '411111'],
      ] as const;
      for (const [number, masked, bin] of cases) {
        const created = await create({ accountNumber: usd.accountNumber, totalAmount: '20.00', currency: 'USD', origins: [{ type: 'CARD', card: { ...card, number } }] });
        expect(created.status, created.text).to.equal(200);
        const id = created.body.id as string;
        const shown = [created.body.origins[0].card, (await get(`/payments/${id}`)).body.origins[0].card,
          (await get('/payments?limit=500')).body.results.find((p: any) => p.id === id).origins[0].card];
        for (const stored of shown) {
          expect(stored).to.include({ number: masked, last4: number.slice(-4) });
          expect(stored.bin).to.equal(bin);
        }
        const history = JSON.stringify((await get(`/payments/${id}/events`)).body);
        expect(history).to.include(masked);
        if (!bin) expect(history).not.to.include(number.slice(0, 6));
      }
      // A PaymentCreated stored by version 1 (first six kept for any length) reads masked as now.
      const v1 = storedEvents.upcasters.upcast({ type: 'PaymentCreated', schemaVersion: 1, data: {
        origins: [{ type: 'CARD', card: { number: '411111**1117', last4: '1117', bin: '411111', holder: 'A' } }],
        destinations: [{ type: 'CARD', card: { number: '411111******1111', last4: '1111', bin: '411111', holder: 'A' } }],
      } } as never) as unknown as { data: { origins: Array<{ card: object }>; destinations: Array<{ card: object }> }; schemaVersion: number };
      expect(v1.data.origins[0]!.card).to.deep.equal({ number: '********1117', last4: '1117', holder: 'A' });
      expect(v1.data.destinations[0]!.card).to.deep.equal({ number: '411111******1111', last4: '1111', bin: '411111', holder: 'A' });
    });

    it('prices an exchange from the catalog when the payer pays in another currency', async () => {
      const created = await create({ accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD', purchaseCurrency: 'BRL' });
      expect(created.body).to.include({ purchaseCurrency: 'BRL' });
      const detail = (await get(`/payments/${created.body.id}`)).body;
      expect(detail.exchange).to.include({ type: 'SPOT', status: 'CREATED' });
      expect(detail.originAmount.currency).to.equal('BRL');
      expect(detail.originAmount.amount).to.equal(created.body.purchaseAmount);
    });
  });
}
