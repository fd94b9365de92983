import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { buildCatalog, CatalogError, loadCatalog, readCatalogData } from '../src/catalog/catalog.ts';
import { parseAmount } from '../src/domain/money.ts';

/** The interface's "Payment node types" table: type → node key. */
const interfaceTable: Record<string, string> = {
  CARD: 'card', CRYPTO: 'wallet', ACCOUNT: 'account', BANK_ACCOUNT: 'bank', PIX: 'pix', PCT: 'pct', CVU: 'cvu',
  ETPAY: 'etpay', FINTOC: 'fintoc', WEBPAY: 'webpay', SPEI: 'spei', PSE: 'pse', BANCOLOMBIA: 'bancolombia',
  DAVIVIENDA: 'davivienda', DAVIPLATA: 'daviplata', NEQUI: 'nequi', BREB: 'breb', WOMPI: 'wompi', LIGO: 'ligo',
  SIP: 'sip', ACH: 'ach', WIRE: 'wire', FEDNOW: 'fedNow', RTP: 'rtp', SEPA: 'sepa', FPE: 'fpe', SWIFT: 'swift',
};

const clone = <T>(value: T): T => structuredClone(value);

describe('payment catalog', () => {
  const catalog = loadCatalog();

  it('lists all 27 node types, each with the node key of the interface', () => {
    expect(Object.keys(interfaceTable)).to.have.length(27);
    expect(catalog.nodeTypes.map((t) => t.type)).to.have.members(Object.keys(interfaceTable));
    for (const [type, nodeKey] of Object.entries(interfaceTable)) {
      expect(catalog.nodeType(type)?.nodeKey, type).to.equal(nodeKey);
    }
    expect(catalog.nodeType('NOPE')).to.equal(undefined);
  });

  it('gives each type limits at its currencies’ scale, with min ≤ max', () => {
    for (const type of catalog.nodeTypes) {
      for (const currency of type.currencies) {
        const min = parseAmount(type.minAmount[currency]!, currency);
        const max = parseAmount(type.maxAmount[currency]!, currency);
        expect(min.lessThanOrEqualTo(max), `${type.type} ${currency}`).to.equal(true);
      }
    }
  });

  it('follows the interface’s directions and countries', () => {
    const dir = (type: string) => [...catalog.nodeType(type)!.directions].sort();
    expect(dir('CARD')).to.deep.equal(['PAY_IN']);
    expect(dir('PIX')).to.deep.equal(['PAY_IN', 'PAY_OUT']);
    expect(dir('SWIFT')).to.deep.equal(['PAY_OUT']);
    expect(catalog.nodeType('PIX')!.countries).to.deep.equal(['BRA']);
    expect(catalog.nodeType('SIP')!.countries).to.have.members(['PER', 'BOL']);
    expect(catalog.nodeType('SIP')!.currencies).to.have.members(['PEN', 'BOB']);
    expect(catalog.nodeType('SEPA')!.currencies).to.deep.equal(['EUR']);
    expect(catalog.nodeType('FPE')!.countries).to.deep.equal(['GBR']);
  });

  it('has banks for every country the node types cover', () => {
    const countries = new Set(catalog.nodeTypes.flatMap((t) => t.countries as string[]).filter((c) => c !== '*'));
    expect(countries.size).to.be.greaterThan(10);
    for (const country of countries) {
      const banks = catalog.banksOf(country);
      expect(banks.length, country).to.be.greaterThan(0);
      for (const bank of banks) expect(bank.countryCode).to.equal(country);
    }
    expect(catalog.banksOf('JPN')).to.deep.equal([]);
  });

  it('has rates for products and identity products', () => {
    expect(catalog.rate('CLP:USDC')).to.match(/^\d+(\.\d+)?$/);
    expect(catalog.rate('ARS:USDC')).to.be.a('string');
    expect(catalog.rate('CLP:CLP')).to.equal('1');
    for (const currency of catalog.currencies()) expect(catalog.rate(`${currency}:${currency}`), currency).to.equal('1');
    expect(catalog.rate('XXX:YYY')).to.equal(undefined);
    expect(catalog.rate('constructor')).to.equal(undefined);
  });

  it('finds methods for a currency and direction', () => {
    expect(catalog.methodsFor('CLP', 'PAY_IN').map((t) => t.type)).to.include.members(['ETPAY', 'FINTOC', 'WEBPAY', 'CARD']);
    expect(catalog.methodsFor('CLP', 'PAY_IN').map((t) => t.type)).to.not.include('PIX');
    expect(catalog.methodsFor('EUR', 'PAY_OUT').map((t) => t.type)).to.include.members(['SEPA', 'SWIFT']);
  });

  it('validates the data files as they are on disk', () => {
    for (const file of ['nodeTypes', 'banks', 'fxRates']) {
      expect(() => JSON.parse(readFileSync(new URL(`../src/catalog/data/${file}.json`, import.meta.url), 'utf8'))).not.to.throw();
    }
    expect(() => buildCatalog(readCatalogData())).not.to.throw();
  });

  describe('refuses malformed data with a message naming the defect', () => {
    const data = readCatalogData();
    const refused = (mutate: (d: any) => void, message: RegExp) => {
      const copy = clone(data) as any;
      mutate(copy);
      expect(() => buildCatalog(copy)).to.throw(CatalogError, message);
    };
    it('a missing node type', () => refused((d) => { d.nodeTypes.pop(); }, /nodeTypes\.json/));
    it('a duplicated node type', () => refused((d) => { d.nodeTypes[1] = clone(d.nodeTypes[0]); }, /CARD: listed twice/));
    it('an unknown field', () => refused((d) => { d.nodeTypes[0].colour = 'red'; }, /nodeTypes\.json is malformed at \/0/));
    it('a bad direction', () => refused((d) => { d.nodeTypes[0].directions = ['SIDEWAYS']; }, /directions/));
    it('too many decimals for the currency', () => refused((d) => { d.nodeTypes[7].minAmount.CLP = '1.5'; }, /ETPAY minAmount.*CLP/));
    it('min above max', () => refused((d) => { d.nodeTypes[4].minAmount.BRL = '999999999.00'; }, /PIX: minAmount exceeds maxAmount/));
    it('a fixed fee without currency', () => refused((d) => { delete d.nodeTypes[7].fee.currency; }, /currency/));
    it('a bank without a name', () => refused((d) => { delete d.banks[0].name; }, /banks\.json is malformed/));
    it('a bank in an uncovered country', () => refused((d) => { d.banks[0].countryCode = 'JPN'; }, /JPN/));
    it('a bad product', () => refused((d) => { d.fxRates['clp-usd'] = '1'; }, /fxRates\.json is malformed/));
    it('a rate that is not a decimal', () => refused((d) => { d.fxRates['CLP:USDC'] = 'cheap'; }, /fxRates\.json is malformed/));
  });
});
