import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';

for (const target of databaseTargets()) {
  describe(`review thresholds per client: ${target.name}`, function () {
    this.timeout(120_000);
    let tenants: TwoTenants;
    let sequence = 0;

    /** An account of the caller in USD, and a payment of `amount` USD into it (no payer: reviewed as BASIC). */
    async function payment(headers: Record<string, string>, amount: string, extra: Record<string, unknown> = {}) {
      const { service } = tenants;
      const identityId = (await service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Shop', country: 'USA' } })).body.id;
      const account = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'USD' } })).body.accountNumber;
      const response = await service.request('POST', '/payments', { headers, body: {
        externalId: `threshold-${++sequence}`, identityId, accountNumber: account, totalAmount: amount, currency: 'USD', type: 'PURCHASE', ...extra,
      } });
      expect(response.status, response.text).to.equal(200);
      return response.body;
    }

    before(async () => {
      tenants = await startTwoTenants(target, { env: { SANDBOX_AUTOPILOT: 'false', REVIEW_THRESHOLD_BASIC_USD: '1000', REVIEW_THRESHOLD_STANDARD_USD: '10000' } });
    });
    after(async () => tenants?.close());

    it('the environment gives the defaults until an operator sets a client’s own; payments of that client only are reviewed by them', async () => {
      const { service, alice, bob } = tenants;
      const path = `/operator/clients/${alice.clientId}/review-thresholds`;
      expect((await service.operator('GET', path)).body).to.deep.equal({ clientId: alice.clientId, basicUsd: '1000', standardUsd: '10000', source: 'DEFAULT' });
      expect((await payment(tenants.asAlice, '60.00')).status).to.equal('CREATED');

      const set = await service.operator('POST', path, { basicUsd: '50', standardUsd: '5000.5' });
      expect(set.status, set.text).to.equal(200);
      expect(set.body).to.deep.equal({ clientId: alice.clientId, basicUsd: '50.00', standardUsd: '5000.50', source: 'CLIENT' });
      expect((await service.operator('GET', path)).body).to.deep.equal(set.body);

      expect((await payment(tenants.asAlice, '60.00')).status).to.equal('REQUIRES_REVIEW');
      expect((await payment(tenants.asAlice, '49.99')).status).to.equal('CREATED');
      expect((await payment(tenants.asBob, '60.00')).status).to.equal('CREATED');
      expect((await service.operator('GET', `/operator/clients/${bob.clientId}/review-thresholds`)).body.source).to.equal('DEFAULT');

      // A STANDARD payer of Alice's is reviewed from her STANDARD threshold.
      const customer = await service.request('POST', '/customers', { headers: tenants.asAlice, body: { email: 'std@example.com' } });
      expect((await service.operator('POST', `/operator/customers/${customer.body.id}/operation-level`, { operationLevel: 'STANDARD' })).status).to.equal(200);
      expect((await payment(tenants.asAlice, '4000.00', { customerId: customer.body.id })).status).to.equal('CREATED');
      expect((await payment(tenants.asAlice, '5000.50', { customerId: customer.body.id })).status).to.equal('REQUIRES_REVIEW');
    });

    it('refuses STANDARD below BASIC and malformed amounts (400), an unknown client (404), a client token (401/403); records nothing', async () => {
      const { service, alice } = tenants;
      const path = `/operator/clients/${alice.clientId}/review-thresholds`;
      const before = await service.eventCount();
      const lower = await service.operator('POST', path, { basicUsd: '100', standardUsd: '99.99' });
      expect(lower.status).to.equal(400);
      expect(lower.body.message).to.match(/standardUsd: 99.99 is below basicUsd 100.00/);
      for (const body of [{ basicUsd: '1.001', standardUsd: '2' }, { basicUsd: '-1', standardUsd: '2' }, { basicUsd: '1' }, { basicUsd: 1, standardUsd: 2 }]) {
        const refused = await service.operator('POST', path, body);
        expect(refused.status, JSON.stringify(body)).to.equal(400);
        expect(refused.body.message).to.match(/basicUsd|standardUsd/);
      }
      expect((await service.operator('POST', '/operator/clients/nobody/review-thresholds', { basicUsd: '1', standardUsd: '2' })).status).to.equal(404);
      expect((await service.operator('GET', '/operator/clients/nobody/review-thresholds')).status).to.equal(404);
      const asClient = await service.request('POST', path, { headers: tenants.asAlice, body: { basicUsd: '1', standardUsd: '2' } });
      expect(asClient.status).to.be.oneOf([401, 403]);
      expect(await service.eventCount()).to.equal(before);
    });
  });
}
