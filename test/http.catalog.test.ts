import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';

for (const target of databaseTargets()) {
  describe(`discovery over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let clpAccount: string;
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });

    before(async () => {
      database = await target.open();
      service = await startTestService(database);
      asAlice = await service.as(await service.createClient('Alice'));
      asBob = await service.as(await service.createClient('Bob'));
      const identity = await service.request('POST', '/identities', { headers: asAlice, body: { type: 'USER', name: 'Ana' } });
      const account = await service.request('POST', '/accounts', { headers: asAlice,
        body: { identityId: identity.body.id, type: 'CHECKING', currency: 'CLP' } });
      expect(account.status, account.text).to.equal(201);
      clpAccount = account.body.accountNumber as string;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('GET /payment-origins lists the pay-in methods of a currency', async () => {
      const response = await get('/payment-origins?currency=CLP');
      expect(response.status).to.equal(200);
      expect(response.body.map((o: any) => o.type)).to.have.members(['CARD', 'ACCOUNT', 'ETPAY', 'FINTOC', 'WEBPAY']);
      const etpay = response.body.find((o: any) => o.type === 'ETPAY');
      expect(etpay).to.deep.include({ origin: 'etpay', minimumAmount: '500', maximumAmount: '50000000', currency: 'CLP' });
      expect(etpay.description).to.have.keys('title', 'icon', 'color');
    });

    it('GET /payment-origins narrows to the account’s currency and to products of the purchase currency', async () => {
      const byAccount = await get(`/payment-origins?accountNumber=${clpAccount}`);
      expect(byAccount.status).to.equal(200);
      expect(new Set(byAccount.body.map((o: any) => o.currency))).to.deep.equal(new Set(['CLP']));
      const all = await get('/payment-origins');
      expect(all.body.length).to.be.greaterThan(byAccount.body.length);
      const toUsdc = await get('/payment-origins?purchaseCurrency=USDC');
      expect(toUsdc.body.map((o: any) => o.currency)).to.include('CLP');
      expect((await get('/payment-origins?currency=CLP&purchaseCurrency=USDC')).status).to.equal(200);
    });

    for (const [label, path, status] of [
      ['an unknown parameter', '/payment-origins?colour=red', 400],
      ['an unknown currency', '/payment-origins?currency=XYZ', 400],
      ['a purchase currency without product', '/payment-origins?currency=CLP&purchaseCurrency=GBP', 400],
      ['a currency that differs from the account’s', '/payment-origins?currency=USD&accountNumber=ACCOUNT', 400],
      ['an unknown account', '/payment-origins?accountNumber=999999', 404],
      ['an unknown node type', '/payment-destinations?type=TELEGRAPH', 400],
      ['an unknown parameter', '/payment-destinations?zz=1', 400],
      ['an unknown account', '/payment-destinations?accountNumber=999999', 404],
      ['a lowercase country', '/payments/banks/chl', 400],
      ['an alpha-2 country', '/payments/banks/CL', 400],
      ['an unknown country', '/payments/banks/XYZ', 404],
      ['an unknown parameter', '/payments/available-products?x=1', 400],
    ] as Array<[string, string, number]>) {
      it(`GET ${path.split('?')[0]} with ${label} is a ${status}`, async () => {
        const response = await get(path.replace('ACCOUNT', clpAccount));
        expect(response.status, response.text).to.equal(status);
        expect(response.body.statusCode).to.equal(status);
      });
    }

    it('another client’s account is a 404', async () => {
      expect((await get(`/payment-origins?accountNumber=${clpAccount}`, asBob)).status).to.equal(404);
      expect((await get(`/payment-destinations?accountNumber=${clpAccount}`, asBob)).status).to.equal(404);
    });

    it('GET /payment-destinations lists pay-out destinations, by type and account', async () => {
      const all = await get('/payment-destinations');
      expect(all.status).to.equal(200);
      expect(all.body.some((d: any) => d.type === 'CARD')).to.equal(false);
      const sepa = await get('/payment-destinations?type=SEPA');
      expect(sepa.body).to.have.length(1);
      expect(sepa.body[0]).to.deep.include({ type: 'SEPA', currency: 'EUR', settlement: 'T+1', amountOut: '1000000.00' });
      expect(sepa.body[0].fee).to.deep.equal({ name: 'TRANSACTION', type: 'FIXED', value: '0.20', currency: 'EUR' });
      const clp = await get(`/payment-destinations?accountNumber=${clpAccount}`);
      expect(clp.body.map((d: any) => d.type)).to.have.members(['ACCOUNT', 'BANK_ACCOUNT']);
      expect((await get(`/payment-destinations?accountNumber=${clpAccount}&type=PIX`)).body).to.deep.equal([]);
    });

    it('GET /payments/banks/:country lists the banks of a country', async () => {
      const response = await get('/payments/banks/CHL');
      expect(response.status).to.equal(200);
      expect(response.body.length).to.be.greaterThan(2);
      for (const bank of response.body) expect(bank).to.have.keys('code', 'name', 'countryCode').and.include({ countryCode: 'CHL' });
      expect(response.body.map((b: any) => b.name)).to.include('Banco de Chile');
    });

    it('GET /payments/banks/:country answers [] for a real country the catalog has no banks for (an unknown one stays 404)', async () => {
      const none = await get('/payments/banks/JPN');
      expect(none.status, none.text).to.equal(200);
      expect(none.body).to.deep.equal([]);
      const unknown = await get('/payments/banks/XYZ');
      expect(unknown.status).to.equal(404);
      expect(unknown.body.message).to.match(/country XYZ not found/);
    });

    it('GET /payments/available-products answers per currency', async () => {
      const response = await get('/payments/available-products');
      expect(response.status).to.equal(200);
      const clp = response.body.find((p: any) => p.currency === 'CLP');
      expect(clp.payIn).to.include.members(['ETPAY', 'FINTOC', 'WEBPAY']);
      expect(clp.payOut).to.include.members(['BANK_ACCOUNT']);
      expect(clp.products).to.deep.include({ product: 'CLP:USDC', exchangeRate: '0.00105' });
      expect(clp.products).to.deep.include({ product: 'CLP:CLP', exchangeRate: '1' });
      expect(clp.limits.ETPAY).to.deep.equal({ minAmount: '500', maxAmount: '50000000' });
      expect(clp.fees.ETPAY).to.deep.equal({ name: 'TRANSACTION', type: 'FIXED', value: '250', currency: 'CLP' });
      expect(response.body.map((p: any) => p.currency)).to.include.members(['BRL', 'ARS', 'MXN', 'COP', 'PEN', 'BOB', 'USD', 'EUR', 'GBP', 'USDC', 'USDT']);
    });

    it('needs client credentials', async () => {
      expect((await service.request('GET', '/payments/available-products', { headers: {} })).status).to.equal(401);
    });
  });
}
