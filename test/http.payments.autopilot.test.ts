import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { providerReceipts, TEST_CARD as card } from './support/payments.ts';
import { DECLINED_CARD, TRIGGERS } from '../src/payments/sandbox/triggers.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'autopilot-provider-secret';

for (const target of databaseTargets()) {
  describe(`sandbox autopilot: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let usd: { id: string; accountNumber: string };
    let brl: { id: string; accountNumber: string };
    let sequence = 0;

    const create = async (body: Record<string, unknown>) => {
      const response = await service.request('POST', '/payments', { headers, body: { externalId: `auto-${++sequence}`, identityId, type: 'PURCHASE', ...body } });
      expect(response.status, response.text).to.equal(200);
      return response.body.id as string;
    };
    /** Polls the payment until it reaches `status` (the autopilot and the jobs run in the background). */
    const settlesInto = async (id: string, status: string) => {
      let payment: any = {};
      await until(async () => {
        payment = (await service.request('GET', `/payments/${id}`, { headers })).body;
        return payment.status === status;
      }, { what: `payment ${id} reaching ${status}`, timeoutMs: 20_000, intervalMs: 100 });
      return payment;
    };

    before(async () => {
      database = await target.open();
      service = await startTestService(database, {
        schedule: true,
        env: { SANDBOX_AUTOPILOT: 'true', PROVIDER_SECRET, SETTLEMENT_CRON: '* * * * * *', EXPIRY_CRON: '* * * * * *' },
      });
      headers = await service.as(await service.createClient('Autopilot shop'));
      identityId = (await service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Shop', country: 'USA' } })).body.id;
      const open = async (currency: string) => {
        const body = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency } })).body;
        return { id: body.id as string, accountNumber: body.accountNumber as string };
      };
      usd = await open('USD');
      brl = await open('BRL');
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('drives a card payment to SETTLED by itself, through authorize, capture, receive and a settlement batch', async () => {
      const id = await create({ accountNumber: usd.accountNumber, totalAmount: '40.00', currency: 'USD', origins: [{ type: 'CARD', card }] });
      const settled = await settlesInto(id, 'SETTLED');
      expect(settled.authorizedAt).to.be.a('string');
      expect(settled.capturedAt).to.be.a('string');
      expect(settled.settlementBatchId).to.be.a('string');
      const history = (await service.request('GET', `/payments/${id}/events`, { headers })).body.events;
      expect(history.map((e: { type: string }) => e.type)).to.deep.equal(
        ['PaymentCreated', 'PaymentAuthorized', 'PaymentCaptured', 'PaymentReceived', 'PaymentSettled']);
      expect(history[1].actor).to.equal('sandbox-provider');
    });

    it('leaves a push-rail payment PENDING until the payer pays (a signed notification)', async () => {
      const id = await create({ accountNumber: brl.accountNumber, totalAmount: '25.00', currency: 'BRL', origins: [{ type: 'PIX', pix: { key: '+5511999990000' } }] });
      await settlesInto(id, 'PENDING');
      const answer = await providerReceipts(() => service, PROVIDER_SECRET)(id);
      expect(answer.body.status).to.equal('SETTLED');
    });

    it(`declines the test card ${DECLINED_CARD.number} (and ${TRIGGERS.decline}): FAILED`, async () => {
      const declined = await create({ accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD', origins: [{ type: 'CARD', card: { ...card, number: DECLINED_CARD.number } }] });
      expect((await settlesInto(declined, 'FAILED')).failureReason).to.equal('CARD_DECLINED');
      const byMarker = await create({ accountNumber: usd.accountNumber, totalAmount: '10.00', currency: 'USD', description: `order ${TRIGGERS.decline}`, origins: [{ type: 'CARD', card }] });
      expect((await settlesInto(byMarker, 'FAILED')).failureReason).to.equal('CARD_DECLINED');
    });

    it(`${TRIGGERS.review} puts the payment under review; approval lets the autopilot finish it`, async () => {
      const id = await create({ accountNumber: usd.accountNumber, totalAmount: '12.00', currency: 'USD', description: TRIGGERS.review, origins: [{ type: 'CARD', card }] });
      await settlesInto(id, 'REQUIRES_REVIEW');
      await service.operator('POST', `/operator/payments/${id}/review`, { decision: 'APPROVED' });
      await settlesInto(id, 'SETTLED');
    });

    it(`${TRIGGERS.unsettled} makes the provider deliver another amount: UNSETTLED`, async () => {
      const id = await create({ accountNumber: usd.accountNumber, totalAmount: '15.00', currency: 'USD', description: TRIGGERS.unsettled, origins: [{ type: 'CARD', card }] });
      const payment = await settlesInto(id, 'UNSETTLED');
      expect(payment.unsettledReason).to.equal('AMOUNT_MISMATCH');
    });

    it(`${TRIGGERS.expireQuote} gives a quote with no time to live: EXPIRED`, async () => {
      const id = await create({ accountNumber: usd.accountNumber, totalAmount: '20.00', currency: 'USD', purchaseCurrency: 'BRL', description: TRIGGERS.expireQuote });
      const payment = await settlesInto(id, 'EXPIRED');
      expect(payment.exchange.status).to.equal('EXPIRED');
    });
  });
}
