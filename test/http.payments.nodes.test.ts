import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { loadCatalog, type CatalogNodeType } from '../src/catalog/catalog.ts';
import { currencyScale, Decimal, formatAmount, toDecimal } from '../src/domain/money.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { validObject } from './support/nodeSamples.ts';

const catalog = loadCatalog();
const sideOf = (type: CatalogNodeType) => (type.directions.includes('PAY_IN') ? 'origins' : 'destinations');
const minorUnit = (currency: string) => new Decimal(10).pow(-currencyScale(currency));
/** Ten times the minimum (within the maximum), so fixed fees are covered. */
function comfortableAmount(type: CatalogNodeType, currency: string): string {
  const tenfold = toDecimal(type.minAmount[currency]!).times(10);
  const max = toDecimal(type.maxAmount[currency]!);
  return formatAmount(tenfold.greaterThan(max) ? max : tenfold, currency);
}

// One target is enough: node validation happens before anything touches storage.
const [target] = databaseTargets();

describe(`payment nodes over HTTP, every catalog type: ${target!.name}`, function () {
  this.timeout(180_000);
  let database: Database;
  let service: TestService;
  let headers: Record<string, string>;
  let identityId: string;
  const accounts = new Map<string, string>();
  let sequence = 0;

  /** A valid node object of the type; an ACCOUNT names the client's own account, in the type's first currency. */
  const objectOf = (type: CatalogNodeType) => (type.type === 'ACCOUNT'
    ? { ...validObject(type), accountNumber: accounts.get(type.currencies[0]!)! } : validObject(type));
  const pay = (type: CatalogNodeType, node: Record<string, unknown>, totalAmount: string) => {
    const currency = type.currencies[0]!;
    return service.request('POST', '/payments', { headers, body: {
      externalId: `node-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: accounts.get(currency), totalAmount, currency,
      [sideOf(type)]: [{ type: type.type, ...node }],
    } });
  };

  before(async () => {
    database = await target!.open();
    service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false', REVIEW_THRESHOLD_BASIC_USD: '100000000' } });
    headers = await service.as(await service.createClient('Every rail'));
    identityId = (await service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Rails', country: 'USA' } })).body.id;
    for (const currency of new Set(catalog.nodeTypes.map((t) => t.currencies[0]!))) {
      const account = await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency } });
      accounts.set(currency, account.body.accountNumber);
    }
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  for (const type of catalog.nodeTypes) {
    it(`${type.type}: a valid ${type.nodeKey} node is accepted; a wrong node object and amounts outside the limits are 400`, async () => {
      const currency = type.currencies[0]!;
      const amount = comfortableAmount(type, currency);
      const accepted = await pay(type, { [type.nodeKey]: objectOf(type) }, amount);
      expect(accepted.status, accepted.text).to.equal(200);
      const stored = accepted.body[sideOf(type)][0];
      expect(stored).to.include({ type: type.type, currency, amount, settlement: type.settlement });
      if (sideOf(type) === 'origins') expect(accepted.body.settlement).to.equal(type.settlement);

      const otherKey = type.nodeKey === 'pix' ? 'nequi' : 'pix';
      const wrong = await pay(type, { [otherKey]: { key: 'k' } }, amount);
      expect(wrong.status).to.equal(400);
      expect(wrong.body.error).to.equal('invalidParam');
      expect(wrong.body.message).to.include(type.nodeKey);

      const extra = await pay(type, { [type.nodeKey]: objectOf(type), [otherKey]: { key: 'k' } }, amount);
      expect(extra.status).to.equal(400);

      const min = toDecimal(type.minAmount[currency]!);
      const below = await pay(type, { [type.nodeKey]: objectOf(type) }, formatAmount(min.minus(minorUnit(currency)), currency));
      expect(below.status).to.equal(400);
      expect(below.body.message).to.match(/minimum/);
      const above = await pay(type, { [type.nodeKey]: objectOf(type) }, formatAmount(toDecimal(type.maxAmount[currency]!).plus(minorUnit(currency)), currency));
      expect(above.status).to.equal(400);
      expect(above.body.message).to.match(/maximum/);
    });
  }
});
