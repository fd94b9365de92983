/**
 * Payer matching under concurrency: payments sent together that name the same new payer by its document number
 * all take the one customer the first of them created.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';

/** Rounds of the race: a lost race shows up in some of them, not every time. */
const ROUNDS = 5;
/** Payments sent together in each round. */
const CONCURRENT_PAYMENTS = 10;

for (const target of databaseTargets()) {
  describe(`payer matching under concurrent payments: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let accountNumber: string;

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false' } });
      headers = await service.as(await service.createClient('Payers'));
      identityId = (await service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Shop' } })).body.id;
      accountNumber = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'USD' } }))
        .body.accountNumber;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it(`${CONCURRENT_PAYMENTS} payments naming the same new payer together all succeed with one customer, created once (autoCreated)`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const payer = { documentNumber: `race-${round}`, firstName: 'Bea', email: `bea-${round}@example.com` };
        const responses = await Promise.all(Array.from({ length: CONCURRENT_PAYMENTS }, (_, n) =>
          service.request('POST', '/payments', { headers, body: {
            externalId: `race-${round}-${n}`, identityId, accountNumber, totalAmount: '5.00', currency: 'USD', type: 'PURCHASE', customer: payer,
          } })));
        for (const response of responses) expect(response.status, `round ${round}: ${response.text}`).to.equal(200);
        const customerIds = new Set(responses.map((r) => r.body.customerId as string));
        expect(customerIds.size, `round ${round}: one customer for all`).to.equal(1);
        const [customerId] = customerIds;
        for (const response of responses) {
          const payerOf = await service.request('GET', `/payments/${response.body.id}/customer`, { headers });
          expect(payerOf.body, `round ${round}`).to.deep.include({ attached: true });
          expect(payerOf.body.customer.id).to.equal(customerId);
        }

        const listed = await service.request('GET', `/customers?documentNumber=${payer.documentNumber}`, { headers });
        expect(listed.body.results.map((c: { id: string }) => c.id)).to.deep.equal([customerId]);
        expect(listed.body.results[0]).to.include({ autoCreated: true, documentNumber: payer.documentNumber });
        const created = await database.query<{ n: string }>(
          `SELECT count(*) AS n FROM events WHERE type = 'CustomerCreated' AND data->>'documentNumber' = $1`, [payer.documentNumber]);
        expect(Number(created.rows[0]!.n), 'customers created').to.equal(1);
      }
    });
  });
}
