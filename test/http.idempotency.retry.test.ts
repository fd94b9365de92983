/**
 * The answer kept for an Idempotency-Key is a cache, not the guard: with it gone (as when the process that ran the
 * request died, or lost the database, before keeping it), the same request sent again finds what its first run
 * recorded and answers from it, applying nothing twice. The stored events are counted directly.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { requestFingerprint } from '../src/http/idempotency.ts';
import { providerReceipts, TEST_CARD } from './support/payments.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type Credentials, type TestService } from './support/testService.ts';

const PROVIDER_SECRET = 'retry-provider-secret';
const card = { ...TEST_CARD, cvv: '123' };

for (const target of databaseTargets()) {
  describe(`a request sent again with its Idempotency-Key once its kept answer is gone: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let client: Credentials;
    let as: Record<string, string>;
    let identityId: string;
    let account: { id: string; accountNumber: string };

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      client = await service.createClient('Retries');
      as = await service.as(client);
      identityId = (await service.request('POST', '/identities', { headers: as, body: { type: 'ORGANIZATION', name: 'Shop', country: 'BRA' } })).body.id;
      account = (await service.request('POST', '/accounts', { headers: as, body: { identityId, type: 'CHECKING', currency: 'USD' } })).body;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    /** Sends the request with `key`, forgets the kept answer, sends it again: both answers. */
    async function twice(path: string, body?: unknown, headers = as): Promise<[ApiResponse, ApiResponse]> {
      const key = randomUUID();
      const send = () => service.request('POST', path, { headers: { ...headers, 'idempotency-key': key }, body });
      const first = await send();
      const forgotten = await database.query('DELETE FROM idempotency_keys WHERE key = $1', [key]);
      expect(forgotten.rowCount, `the first answer was kept, and is now gone: ${first.status} ${first.text}`).to.equal(1);
      const second = await send();
      expect(second.headers.get('idempotent-replayed'), 'answered by running again, not from the kept answer').to.equal(null);
      return [first, second];
    }
    const count = async (where: string, values: unknown[]) =>
      Number((await database.query<{ n: string }>(`SELECT count(*)::text AS n FROM events WHERE ${where}`, values)).rows[0]!.n);
    const payment = (body: Record<string, unknown> = {}) => ({
      externalId: `order-${randomUUID()}`, identityId, type: 'PURCHASE', accountNumber: account.accountNumber, totalAmount: '40.00', currency: 'USD', ...body,
    });

    it('a payment: the same payment, as first recorded (not a 409 for its own externalId)', async () => {
      const [first, second] = await twice('/payments', payment());
      expect(first.status).to.equal(200);
      expect(second.status, second.text).to.equal(200);
      expect(second.body).to.deep.equal(first.body);
      expect(await count(`type = 'PaymentCreated' AND stream = $1`, [`payment-${first.body.id}`])).to.equal(1);
    });

    it('a payment with a new payer: one customer is created, and the payment names it', async () => {
      const documentNumber = `doc-${randomUUID().slice(0, 8)}`;
      const [first, second] = await twice('/payments', payment({ customer: { firstName: 'Ana', documentNumber } }));
      expect(second.status, second.text).to.equal(200);
      expect(second.body.id).to.equal(first.body.id);
      expect(await count(`type = 'CustomerCreated' AND data->>'documentNumber' = $1`, [documentNumber])).to.equal(1);
    });

    it('a move already made (a card authorized): answered as made, not refused for the status it led to', async () => {
      const created = await service.request('POST', '/payments', { headers: as, body: payment({ origins: [{ type: 'CARD', card }] }) });
      const [first, second] = await twice(`/payments/${created.body.id}/authorized`);
      expect(first.body.status).to.equal('AUTHORIZED');
      expect(second.status, second.text).to.equal(200);
      expect(second.body.status).to.equal('AUTHORIZED');
      expect(await count(`type = 'PaymentAuthorized' AND stream = $1`, [`payment-${created.body.id}`])).to.equal(1);
    });

    it('an identity, an account (one account number reserved) and a customer: the same object', async () => {
      const [identity, identityAgain] = await twice('/identities', { type: 'USER', name: 'Ana', country: 'BRA' });
      expect(identityAgain.status, identityAgain.text).to.equal(201);
      expect(identityAgain.body.id).to.equal(identity.body.id);
      const [opened, openedAgain] = await twice('/accounts', { identityId: identity.body.id, type: 'CHECKING', currency: 'BRL' });
      expect(openedAgain.status, openedAgain.text).to.equal(201);
      expect(openedAgain.body).to.include({ id: opened.body.id, accountNumber: opened.body.accountNumber });
      expect(await count(`type = 'AccountNumberReserved' AND data->>'accountId' = $1`, [opened.body.id])).to.equal(1);
      const [customer, customerAgain] = await twice('/customers', { firstName: 'Ana', documentNumber: `doc-${randomUUID().slice(0, 8)}` });
      expect(customerAgain.status, customerAgain.text).to.equal(201);
      expect(customerAgain.body.id).to.equal(customer.body.id);
    });

    it('a webhook endpoint: the same endpoint, and the secret its first run generated', async () => {
      const [first, second] = await twice('/webhooks', { url: 'https://hooks.example.com/ledger' });
      expect(second.status, second.text).to.equal(201);
      expect(second.body.id).to.equal(first.body.id);
      expect(second.body.secretKey).to.be.a('string').and.to.equal(first.body.secretKey);
    });

    it('a refund and an operator adjustment: one child, one adjustment', async () => {
      const parent = await service.request('POST', '/payments', { headers: as, body: payment() });
      const received = await providerReceipts(() => service, PROVIDER_SECRET)(parent.body.id);
      expect(received.body.status).to.equal('SETTLED');
      const [refund, refundAgain] = await twice(`/payments/${parent.body.id}/refund`, { amount: '1.00' });
      expect(refundAgain.status, refundAgain.text).to.equal(201);
      expect(refundAgain.body.id).to.equal(refund.body.id);
      expect(await count(`type = 'RefundCreated' AND data->>'parentPaymentId' = $1`, [parent.body.id])).to.equal(1);

      const reason = `correction ${randomUUID()}`;
      const operator = { 'x-operator-key': 'test-operator-key-0123456789', 'user-agent': 'tests' };
      const [adjusted, adjustedAgain] = await twice(`/operator/accounts/${account.id}/adjustments`, { amount: '3.00', reason }, operator);
      expect(adjustedAgain.status, adjustedAgain.text).to.equal(201);
      expect(adjustedAgain.body.balance).to.equal(adjusted.body.balance);
      expect(await count(`type = 'AccountAdjusted' AND data->>'reason' = $1`, [reason])).to.equal(1);
    });

    it('a key still in flight: 409 with Retry-After, and nothing applied', async () => {
      const key = randomUUID();
      const body = payment();
      const claim = await service.services.idempotency.begin(`client:${client.clientId}`, key, requestFingerprint('POST', '/payments', body));
      expect(claim.kind).to.equal('proceed');
      const answer = await service.request('POST', '/payments', { headers: { ...as, 'idempotency-key': key }, body });
      expect(answer.status).to.equal(409);
      expect(answer.headers.get('retry-after')).to.equal('1');
      expect(answer.body.message).to.match(/Idempotency-Key/);
      expect(await count(`type = 'PaymentCreated' AND data->>'externalId' = $1`, [body.externalId])).to.equal(0);
    });
  });
}
