import { expect } from 'chai';
import { loadCatalog, type CatalogNodeType } from '../src/catalog/catalog.ts';
import { currencyScale, Decimal, formatAmount, toDecimal } from '../src/domain/money.ts';
import { databaseTargets } from './support/targets.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { validObject } from './support/nodeSamples.ts';
import type { ApiResponse } from './support/testService.ts';

const catalog = loadCatalog();
const minorUnit = (currency: string) => new Decimal(10).pow(-currencyScale(currency));
const payIn = (type: CatalogNodeType) => type.directions.includes('PAY_IN');
const payOut = (type: CatalogNodeType) => type.directions.includes('PAY_OUT');
/** Ten times the minimum (within the maximum), so fixed fees are covered. */
function comfortableAmount(type: CatalogNodeType, currency: string): string {
  const tenfold = toDecimal(type.minAmount[currency]!).times(10);
  const max = toDecimal(type.maxAmount[currency]!);
  return formatAmount(tenfold.greaterThan(max) ? max : tenfold, currency);
}

function expect400(response: ApiResponse, pattern: RegExp): void {
  expect(response.status, response.text).to.equal(400);
  expect(response.body.error).to.be.oneOf(['invalidParam', 'missingParam']);
  expect(response.body.message).to.match(pattern);
}

for (const target of databaseTargets()) {
  describe(`payment attempts over HTTP: ${target.name}`, function () {
    this.timeout(240_000);
    let tenants: TwoTenants;
    let identityId: string;
    /** Alice's account per currency. */
    const accounts = new Map<string, string>();

    const attempt = (body: Record<string, unknown>, as = tenants.asAlice) =>
      tenants.service.request('POST', '/payment-attempts', { headers: as, body });
    const get = (path: string, as = tenants.asAlice) => tenants.service.request('GET', path, { headers: as });
    /** An attempt of `type` on its own side, in its first currency, with `node` merged into the node. */
    const ofType = (type: CatalogNodeType, side: 'origins' | 'destinations', node: Record<string, unknown>, totalAmount?: string) => {
      const currency = type.currencies[0]!;
      return attempt({
        identityId, accountNumber: accounts.get(currency), currency, type: 'PAYMENT',
        totalAmount: totalAmount ?? comfortableAmount(type, currency), [side]: [{ type: type.type, ...node }],
      });
    };

    before(async () => {
      tenants = await startTwoTenants(target, { env: { SANDBOX_AUTOPILOT: 'false' } });
      const headers = tenants.asAlice;
      identityId = (await tenants.service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Rails SpA', country: 'CHL' } })).body.id;
      for (const currency of new Set([...catalog.nodeTypes.map((t) => t.currencies[0]!), 'CLP', 'BRL'])) {
        const account = await tenants.service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency } });
        expect(account.status, account.text).to.equal(201);
        accounts.set(currency, account.body.accountNumber);
      }
    });
    after(async () => tenants?.close());

    /** A valid node object of the type; an ACCOUNT names one of Alice's accounts, in the type's first currency. */
    const objectOf = (type: CatalogNodeType) => (type.type === 'ACCOUNT'
      ? { ...validObject(type), accountNumber: accounts.get(type.currencies[0]!)! } : validObject(type));

    for (const type of catalog.nodeTypes) {
      const side = payIn(type) ? 'origins' : 'destinations';
      it(`${type.type}: a valid ${type.nodeKey} node is accepted; wrong direction, country, currency, amounts outside the limits and a missing required field are precise 400s`, async () => {
        const currency = type.currencies[0]!;
        const valid = { [type.nodeKey]: objectOf(type) };
        const amount = comfortableAmount(type, currency);

        const accepted = await ofType(type, side, valid);
        expect(accepted.status, accepted.text).to.equal(201);
        expect(accepted.body.status).to.equal('ATTEMPT');
        const node = accepted.body[side][0];
        expect(node).to.include({ type: type.type, currency, amount, settlement: type.settlement,
          processing: type.settlement === 'INSTANT' ? 'INSTANT_PAYMENT' : 'BATCH_PAYMENT', paymentInitiation: null });
        expect(node.crypto === null).to.equal(type.type !== 'CRYPTO');
        expect(node).to.have.property('referenceId');
        const fetched = await get(`/payment-attempts/${accepted.body.id}`);
        expect(fetched.status).to.equal(200);
        expect(fetched.body).to.deep.equal(accepted.body);

        // Direction: only a one-way type can be sent the wrong way.
        if (!(payIn(type) && payOut(type))) {
          const wrongSide = side === 'origins' ? 'destinations' : 'origins';
          expect400(await ofType(type, wrongSide, valid),
            new RegExp(`${wrongSide}\\[0\\]: type ${type.type} cannot be used as an? ${wrongSide === 'origins' ? 'origin' : 'destination'}`));
        }

        // Country: a country outside the type's, or (for a global type) no alpha-3 code at all.
        const global = type.countries.includes('*');
        const country = global ? 'XXX' : 'JPN';
        expect400(await ofType(type, side, { [type.nodeKey]: { ...objectOf(type), country } }),
          global ? new RegExp(`${side}\\[0\\]\\.${type.nodeKey}\\.country`) : new RegExp(`${side}\\[0\\]\\.${type.nodeKey}\\.country: JPN is not a country of ${type.type}`));

        expect400(await ofType(type, side, { ...valid, currency: 'BTC' }), new RegExp(`${side}\\[0\\]: currency BTC is not a currency of ${type.type}`));

        const below = formatAmount(toDecimal(type.minAmount[currency]!).minus(minorUnit(currency)), currency);
        const above = formatAmount(toDecimal(type.maxAmount[currency]!).plus(minorUnit(currency)), currency);
        expect400(await ofType(type, side, { ...valid, amount: below }, amount), new RegExp(`${side}\\[0\\]: amount ${below} ${currency} is below the ${type.type} minimum`));
        expect400(await ofType(type, side, { ...valid, amount: above }, amount), new RegExp(`${side}\\[0\\]: amount ${above} ${currency} is above the ${type.type} maximum`));

        const [missing, ...kept] = type.requiredFields;
        const incomplete = Object.fromEntries(Object.entries(objectOf(type)).filter(([field]) => field !== missing));
        expect(kept.length + 1).to.equal(type.requiredFields.length);
        expect400(await ofType(type, side, { [type.nodeKey]: incomplete }), new RegExp(`${side}\\[0\\]\\.${type.nodeKey}: missing required field ${missing}`));
      });
    }

    it('PAYMENT_INITATION origins name a pay-in method by type or node key, carry its fee and limits, and are refused as precisely as nodes', async () => {
      const fintoc = catalog.nodeType('FINTOC')!;
      const base = { identityId, accountNumber: accounts.get('CLP'), currency: 'CLP', type: 'P2P', totalAmount: '10000' };
      for (const origin of ['FINTOC', 'fintoc']) {
        const accepted = await attempt({ ...base, origins: [{ type: 'PAYMENT_INITATION', name: 'Bank start', paymentInitiation: { origin, referenceId: 'ref-42' } }] });
        expect(accepted.status, accepted.text).to.equal(201);
        const [node] = accepted.body.origins;
        expect(node).to.include({ type: 'PAYMENT_INITATION', name: 'Bank start', amount: '10000', currency: 'CLP', referenceId: 'ref-42', settlement: fintoc.settlement });
        expect(node.paymentInitiation).to.deep.equal({ method: 'FINTOC', referenceId: 'ref-42', publicKey: null, widgetLink: null, signatureToken: null, origin: null });
        expect(node.limits).to.deep.equal({ minAmount: fintoc.minAmount.CLP, maxAmount: fintoc.maxAmount.CLP });
        expect(accepted.body.fees).to.have.length(1);
        expect(accepted.body.fees[0]).to.include({ amount: '200', currency: 'CLP', method: 'FIXED', type: 'TRANSACTION' });
        expect(accepted.body.destinationAmount).to.deep.equal({ amount: '9800', currency: 'CLP' });
      }
      const initiation = (extra: Record<string, unknown>, side = 'origins') =>
        attempt({ ...base, [side]: [{ type: 'PAYMENT_INITATION', paymentInitiation: { origin: 'FINTOC' }, ...extra }] });
      expect400(await initiation({}, 'destinations'), /destinations\[0\]: type PAYMENT_INITATION cannot be used as a destination/);
      expect400(await initiation({ paymentInitiation: undefined }), /origins\[0\]: type PAYMENT_INITATION expects the object "paymentInitiation"/);
      expect400(await initiation({ paymentInitiation: { origin: 'NOPE' } }), /origins\[0\]\.paymentInitiation\.origin: unknown pay-in method "NOPE"/);
      expect400(await initiation({ paymentInitiation: { origin: 'CARD' } }), /origins\[0\]\.paymentInitiation\.origin: CARD cannot be initiated/);
      expect400(await initiation({ paymentInitiation: { origin: 'BREB' } }), /origins\[0\]\.paymentInitiation\.origin: BREB is pay-out only/);
      expect400(await initiation({ fintoc: { bank: 'x', documentNumber: '1' } }), /origins\[0\]: type PAYMENT_INITATION expects no node object; found "fintoc"/);
      expect400(await initiation({ amount: '1' }), /origins\[0\]: amount 1 CLP is below the FINTOC minimum/);
      expect400(await initiation({ paymentInitiation: { referenceId: 'r' } }), /paymentInitiation.*origin/);
      expect400(await attempt({ ...base, origins: [{ type: 'PIX', pix: { key: 'k' }, paymentInitiation: { origin: 'PIX' } }] }),
        /origins\[0\]\.paymentInitiation: only with type PAYMENT_INITATION/);
    });

    it('a destination takes the interface’s identity {userId, name, lastname, nickname, dni} and account {accountNumber}; amounts default from the destinations', async () => {
      const response = await attempt({
        identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT',
        destinations: [
          { type: 'ACCOUNT', amount: '30.00', currency: 'USD', account: { accountNumber: accounts.get('USD') },
            identity: { userId: 'user-7', name: 'Ana', lastname: 'Pérez', nickname: 'Anita', dni: '12345678' } },
          { type: 'ACH', amount: '12.50', ach: validObject(catalog.nodeType('ACH')!) },
        ],
      });
      expect(response.status, response.text).to.equal(201);
      expect(response.body.totalAmount).to.equal('42.50');
      expect(response.body.destinations[0].identity).to.deep.equal({ name: 'Ana', lastname: 'Pérez', nickname: 'Anita', documentNumber: '12345678', externalId: 'user-7' });
      expect(response.body.destinations[0].account).to.deep.equal({ accountNumber: accounts.get('USD') });
      expect(response.body.enrich).to.deep.include({ merchantCode: identityId, merchantName: 'Rails SpA' });
      expect(response.body.enrich.location.country).to.equal('CHL');
      expect(response.body.exchange).to.equal(null);

      expect400(await attempt({ identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT',
        destinations: [{ type: 'ACH', ach: validObject(catalog.nodeType('ACH')!) }] }), /totalAmount: required unless every destination/);

      // The platform accounts ACCOUNT nodes name must be the client's, in the node's currency.
      const usd = { identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '10.00' };
      const bobsIdentity = (await tenants.service.request('POST', '/identities', { headers: tenants.asBob, body: { type: 'USER', name: 'Bo' } })).body.id;
      const bobsAccount = (await tenants.service.request('POST', '/accounts', { headers: tenants.asBob, body: { identityId: bobsIdentity, type: 'CHECKING', currency: 'USD' } })).body.accountNumber;
      for (const [accountNumber, refusal] of [
        ['999999999999', /destinations\[0\]\.account\.accountNumber: no account 999999999999 of this client/],
        [bobsAccount, /destinations\[0\]\.account\.accountNumber: no account \d+ of this client/],
        [accounts.get('EUR'), /destinations\[0\]\.account\.accountNumber: account \d+ holds EUR, not USD/],
      ] as Array<[string, RegExp]>) {
        expect400(await attempt({ ...usd, destinations: [{ type: 'ACCOUNT', account: { accountNumber } }] }), refusal);
      }
      expect400(await attempt({ identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '10.001' }), /totalAmount/);
    });

    it('refuses origins whose amounts contradict what the attempt charges, naming the amount; amounts that add up pass', async () => {
      const ach = (amount?: string) => ({ type: 'ACH', ach: validObject(catalog.nodeType('ACH')!), ...(amount === undefined ? {} : { amount }) });
      const usd = { identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '12.50' };
      const before = (await get('/payment-attempts?limit=1')).body.pagination.total;
      expect400(await attempt({ ...usd, origins: [ach('5.00')] }), /^origins\[0\]\.amount: 5\.00 USD differs from the 12\.50 USD the payment charges$/);
      expect400(await attempt({ ...usd, origins: [ach('5.00'), ach('5.00')] }), /^origins\[0\.\.1\]\.amount: they add up to 10\.00 USD/);
      expect400(await attempt({ ...usd, origins: [ach('12.50'), ach()] }), /^origins\[1\]\.amount: required when the payment has several origins/);
      expect((await get('/payment-attempts?limit=1')).body.pagination.total).to.equal(before);
      const split = await attempt({ ...usd, origins: [ach('10.00'), ach('2.50')] });
      expect(split.status, split.text).to.equal(201);
      // Without totalAmount the origins' amounts make it up.
      const summed = await attempt({ ...usd, totalAmount: undefined, origins: [ach('10.00'), ach('2.50')] });
      expect(summed.status, summed.text).to.equal(201);
      expect(summed.body.originAmount).to.deep.equal({ amount: '12.50', currency: 'USD' });
    });

    it('answers the attempt record’s identityExternalId and expiredAt beside the detailed shape’s externalIdentityId', async () => {
      const created = await attempt({ identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '10.00',
        identityExternalId: 'crm-42' });
      expect(created.status, created.text).to.equal(201);
      const read = await get(`/payment-attempts/${created.body.id}`);
      const listed = (await get('/payment-attempts?limit=500')).body.data.find((a: { id: string }) => a.id === created.body.id);
      for (const record of [created.body, read.body, listed]) {
        expect(record).to.include({ identityExternalId: 'crm-42', externalIdentityId: 'crm-42', expiredAt: null, refundedAt: null });
      }
    });

    it('prices the exchange: the quote, the payer’s account as its origin, the wallet as its destination, and extendedData', async () => {
      const response = await attempt({
        identityId, accountNumber: accounts.get('CLP'), currency: 'CLP', type: 'PAYMENT', totalAmount: '100000', purchaseCurrency: 'USDC',
        origins: [{ type: 'ACCOUNT', account: { accountNumber: accounts.get('USDC'), id: 'acc-9' } }],
        destinations: [{ type: 'CRYPTO', currency: 'USDC', amount: '105', wallet: { address: `0x${'cd'.repeat(20)}`, token: 'USDC', network: 'ETHEREUM', referenceId: 'w-1' } }],
      });
      expect(response.status, response.text).to.equal(201);
      const { exchange, originAmount, product } = response.body;
      expect(product).to.equal('CLP:USDC');
      expect(originAmount).to.deep.equal({ amount: '105.000000', currency: 'USDC' });
      expect(exchange).to.include({ type: 'SPOT', product: 'CLP:USDC', status: 'CREATED', exchangeRate: '0.00105', executable: true, marketValue: '105.000000' });
      expect(exchange.origin).to.include({ accountNumber: accounts.get('USDC'), id: 'acc-9', currency: 'USDC' });
      expect(exchange.destination).to.include({ address: `0x${'cd'.repeat(20)}`, token: 'USDC', network: 'ETHEREUM', passphrase: null, keys: null });
      expect(exchange.extendedData.map((entry: { name: string }) => entry.name)).to.deep.equal(['quotedAt', 'quoteExpiresAt', 'purchaseAmount']);
      expect(response.body.expiresAt).to.equal(exchange.quoteExpiresAt);
      const crypto = response.body.destinations[0];
      expect(crypto.crypto).to.deep.equal({ address: `0x${'cd'.repeat(20)}`, token: 'USDC', network: 'ETHEREUM', extendedData: [] });
      expect(crypto.referenceId).to.equal('w-1');
    });

    it('refuses an unknown identity, account or customer (404), another client’s account (404), a blocked account (422), and records nothing', async () => {
      const before = await tenants.service.eventCount();
      const body = { identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '10.00' };
      expect((await attempt({ ...body, identityId: 'nobody' })).status).to.equal(404);
      expect((await attempt({ ...body, accountNumber: '999999999999' })).status).to.equal(404);
      expect((await attempt({ ...body, customerId: 'nobody' })).status).to.equal(404);
      expect((await attempt(body, tenants.asBob)).status).to.equal(404);
      expect400(await attempt({ ...body, currency: 'CLP', totalAmount: '10' }), /currency: account \d+ holds USD, not CLP/);
      expect400(await attempt({ ...body, origins: [{ type: 'PIX' }] }), /origins\[0\]: type PIX expects the node object "pix"/);
      expect((await attempt({ ...body, unknown: 1 })).status).to.equal(400);
      expect(await tenants.service.eventCount()).to.equal(before);

      const blocked = await tenants.service.request('POST', '/accounts', { headers: tenants.asAlice, body: { identityId, type: 'CHECKING', currency: 'USD' } });
      await tenants.service.request('PATCH', `/accounts/${blocked.body.id}`, { headers: tenants.asAlice, body: { status: 'BLOCKED' } });
      const refused = await attempt({ ...body, accountNumber: blocked.body.accountNumber });
      expect(refused.status).to.equal(422);
      expect(refused.body.message).to.match(/BLOCKED/);
    });

    it('GET /payment-attempts/:id: 404 for an unknown id, another client’s attempt, or another type or product', async () => {
      const created = await attempt({ identityId, accountNumber: accounts.get('USD'), currency: 'USD', type: 'PAYMENT', totalAmount: '10.00', product: 'USD:USD' });
      expect(created.status, created.text).to.equal(201);
      const path = `/payment-attempts/${created.body.id}`;
      expect((await get(`${path}?type=PAYMENT&product=USD:USD`)).status).to.equal(200);
      expect((await get(`${path}?type=P2P`)).status).to.equal(404);
      expect((await get(`${path}?product=CLP:USDC`)).status).to.equal(404);
      expect((await get('/payment-attempts/does-not-exist')).status).to.equal(404);
      const bobs = await get(path, tenants.asBob);
      expect(bobs.status).to.equal(404);
      expect(bobs.body.message).to.equal('payment attempt <id> not found'.replace('<id>', created.body.id));
      expect((await get(`${path}?type=NOPE`)).status).to.equal(400);
    });

    it('GET /payment-attempts lists a client’s own attempts newest first as {data, pagination}, filtered, paged with next (cursor)', async () => {
      const bobIdentity = (await tenants.service.request('POST', '/identities', { headers: tenants.asBob, body: { type: 'USER', name: 'Bob' } })).body.id;
      const bobAccount = (await tenants.service.request('POST', '/accounts', { headers: tenants.asBob, body: { identityId: bobIdentity, type: 'CHECKING', currency: 'EUR' } })).body.accountNumber;
      expect((await attempt({ identityId: bobIdentity, accountNumber: bobAccount, currency: 'EUR', type: 'P2P', totalAmount: '5.00' }, tenants.asBob)).status).to.equal(201);

      const mine: string[] = [];
      for (let n = 0; n < 3; n++) {
        const created = await attempt({ identityId, accountNumber: accounts.get('EUR'), currency: 'EUR', type: 'P2P', totalAmount: `${n + 1}.00` });
        mine.unshift(created.body.id);
      }
      const filter = `accountNumber=${accounts.get('EUR')}&type=P2P`;
      const first = await get(`/payment-attempts?${filter}&limit=2`);
      expect(first.status, first.text).to.equal(200);
      // The interface's shape for this list: the items in `data`, beside the pagination object.
      expect(Object.keys(first.body).sort()).to.deep.equal(['data', 'pagination']);
      expect(first.body.pagination).to.deep.equal({ count: 2, next: 2, previous: 0, total: 3 });
      const second = await get(`/payment-attempts?${filter}&limit=2&next=${first.body.pagination.next}`);
      expect(second.body.pagination).to.deep.equal({ count: 1, next: 3, previous: 0, total: 3 });
      expect([...first.body.data, ...second.body.data].map((a: { id: string }) => a.id)).to.deep.equal(mine);
      expect((await get(`/payment-attempts?${filter}&limit=2&cursor=2`)).body.data.map((a: { id: string }) => a.id)).to.deep.equal([mine[2]]);
      expect((await get(`/payment-attempts?${filter}&limit=1&offset=1`)).body).to.deep.equal({
        data: [(await get(`/payment-attempts/${mine[1]}`)).body], pagination: { count: 1, next: 2, previous: 0, total: 3 },
      });

      const today = new Date();
      const day = `${String(today.getUTCDate()).padStart(2, '0')}/${String(today.getUTCMonth() + 1).padStart(2, '0')}/${today.getUTCFullYear()}`;
      expect((await get(`/payment-attempts?${filter}&startDate=${day}&endDate=${day}`)).body.pagination.total).to.equal(3);
      expect((await get(`/payment-attempts?${filter}&endDate=01/01/2020`)).body.pagination.total).to.equal(0);
      expect((await get(`/payment-attempts?identityId=${bobIdentity}`)).body.pagination.total).to.equal(0);
      expect((await get('/payment-attempts?accountNumber=' + bobAccount)).body.data).to.deep.equal([]);
      expect((await get('/payment-attempts?type=P2P', tenants.asBob)).body.data.map((a: { totalAmount: string }) => a.totalAmount)).to.deep.equal(['5.00']);
      expect400(await get('/payment-attempts?startDate=31/02/2025'), /startDate/);
      expect400(await get('/payment-attempts?next=abc'), /next/);
    });

    it('a payment answers the same detailed fields as an attempt of the same body (one mapping)', async () => {
      const body = {
        identityId, accountNumber: accounts.get('BRL'), currency: 'BRL', type: 'PAYMENT', totalAmount: '50.00', description: 'same',
        origins: [{ type: 'PIX', pix: { key: 'payer@example.com' } }],
        destinations: [{ type: 'CRYPTO', currency: 'USDC', amount: '9', wallet: { address: `0x${'ef'.repeat(20)}`, network: 'ETHEREUM' } }],
      };
      const attempted = await attempt(body);
      expect(attempted.status, attempted.text).to.equal(201);
      const paid = await tenants.service.request('POST', '/payments', { headers: tenants.asAlice, body: { ...body, externalId: 'same-as-attempt' } });
      expect(paid.status, paid.text).to.equal(200);
      const detailed = (await get(`/payments/${paid.body.id}`)).body;
      for (const field of ['origins', 'destinations', 'originAmount', 'destinationAmount', 'fees', 'enrich', 'exchange', 'metaData', 'product', 'type']) {
        expect(detailed[field], field).to.deep.equal(attempted.body[field]);
      }
      expect(detailed.destinations[0].crypto).to.deep.equal({ address: `0x${'ef'.repeat(20)}`, token: null, network: 'ETHEREUM', extendedData: [] });
      expect(detailed.origins[0]).to.include({ referenceId: null, processing: 'INSTANT_PAYMENT', paymentInitiation: null, crypto: null });
      const v2 = await tenants.service.request('GET', `/payments?identityId=${identityId}`, { headers: { ...tenants.asAlice, 'service-api-version': '24-04-2025' } });
      expect(v2.body.results.find((p: { id: string }) => p.id === paid.body.id)).to.deep.equal(detailed);
    });
  });
}
