import { expect } from 'chai';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { loadCatalog, type CatalogNodeType } from '../src/catalog/catalog.ts';
import { DomainError } from '../src/domain/errors.ts';
import { currencyScale, Decimal, formatAmount } from '../src/domain/money.ts';
import { validateNodes, type NodeContext } from '../src/payments/nodes.ts';
import { cardNumber, validObject } from './support/nodeSamples.ts';
import {
  nodeKeyOf, paymentNodeInputSchema, paymentNodeSchema, paymentNodesInputSchema, type PaymentNodeInput,
} from '../schemas/paymentNodes.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

const now = new Date('2025-06-15T12:00:00Z');

const sideOf = (type: CatalogNodeType) => (type.directions.includes('PAY_IN') ? 'origins' : 'destinations');
const minorUnit = (currency: string) => new Decimal(10).pow(-currencyScale(currency));

function nodeOf(type: CatalogNodeType, overrides: Record<string, unknown> = {}): PaymentNodeInput {
  const currency = type.currencies[0]!;
  return { type: type.type, currency, amount: type.minAmount[currency]!, [type.nodeKey]: validObject(type), ...overrides } as PaymentNodeInput;
}

function refusal(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).kind).to.equal('invalid');
    return error as DomainError;
  }
  return expect.fail('expected a DomainError');
}

describe('payment nodes', () => {
  const catalog = loadCatalog();
  const context: NodeContext = { currency: 'BRL', amount: '100.00', now };
  const validate = (nodes: PaymentNodeInput[], side: 'origins' | 'destinations' = 'origins', ctx: NodeContext = context) =>
    validateNodes(catalog, nodes, side, ctx);
  const pix = catalog.nodeType('PIX')!;
  const card = catalog.nodeType('CARD')!;
  const cardNode = (fields: Record<string, string> = {}, overrides: Record<string, unknown> = {}) =>
    nodeOf(card, { card: { ...validObject(card), ...fields }, ...overrides });

  it('declares the node key of each of the catalog’s 27 types', () => {
    expect(catalog.nodeTypes).to.have.length(27);
    for (const type of catalog.nodeTypes) expect(nodeKeyOf[type.type], type.type).to.equal(type.nodeKey);
    expect(Object.keys(nodeKeyOf)).to.have.length(27);
  });

  describe('every node type', () => {
    for (const type of loadCatalog().nodeTypes) {
      const side = sideOf(type);
      const currency = type.currencies[0]!;
      const min = type.minAmount[currency]!;
      const max = type.maxAmount[currency]!;

      it(`${type.type}: accepts a valid "${type.nodeKey}" node at its minimum and refuses malformed ones`, () => {
        const [node] = validate([nodeOf(type)], side);
        expect(node).to.include({ type: type.type, currency, amount: min, settlement: type.settlement, name: null });
        expect(node!.limits).to.deep.equal({ minAmount: min, maxAmount: max });
        expect(node!.fee).to.deep.equal(type.fee);
        expect(node!.metaData).to.deep.equal({ image: type.description.icon, title: type.description.title, description: type.description.title });
        expect(node).to.have.property(type.nodeKey);

        const otherKey = type.nodeKey === 'card' ? 'pix' : 'card';
        const wrong = refusal(() => validate([nodeOf(type, { [type.nodeKey]: undefined, [otherKey]: validObject(type) })], side));
        expect(wrong.message).to.equal(`${side}[0]: type ${type.type} expects the node object "${type.nodeKey}"; found "${otherKey}"`);
        const extra = refusal(() => validate([nodeOf(type, { [otherKey]: { accountNumber: '1' } })], side));
        expect(extra.message).to.equal(`${side}[0]: type ${type.type} expects only the node object "${type.nodeKey}"; found also "${otherKey}"`);
        const missing = refusal(() => validate([nodeOf(type, { [type.nodeKey]: undefined })], side));
        expect(missing.message).to.contain('found none');

        for (const field of type.requiredFields) {
          const { [field]: _, ...rest } = validObject(type);
          expect(refusal(() => validate([nodeOf(type, { [type.nodeKey]: rest })], side)).message)
            .to.equal(`${side}[0].${type.nodeKey}: missing required field ${field}`);
        }
      });

      it(`${type.type}: enforces its ${currency} limits, inclusive`, () => {
        expect(validate([nodeOf(type, { amount: max })], side)[0]!.amount).to.equal(max);
        const below = formatAmount(new Decimal(min).minus(minorUnit(currency)), currency);
        expect(refusal(() => validate([nodeOf(type, { amount: below })], side)).message)
          .to.equal(`${side}[0]: amount ${below} ${currency} is below the ${type.type} minimum ${min} ${currency}`);
        const above = formatAmount(new Decimal(max).plus(minorUnit(currency)), currency);
        expect(refusal(() => validate([nodeOf(type, { amount: above })], side)).message)
          .to.equal(`${side}[0]: amount ${above} ${currency} is above the ${type.type} maximum ${max} ${currency}`);
      });

      const unsupported = type.directions.length === 1 ? (side === 'origins' ? 'destinations' : 'origins') : undefined;
      if (unsupported) {
        it(`${type.type}: cannot be used in ${unsupported}`, () => {
          expect(refusal(() => validate([nodeOf(type)], unsupported)).message).to.equal(`${unsupported}[0]: type ${type.type} cannot be used as `
            + `${unsupported === 'origins' ? 'an origin (it is pay-out only)' : 'a destination (it is pay-in only)'}`);
        });
      }
    }
  });

  describe('defaults, currency, country and amounts', () => {
    it('returns nothing for no nodes and fills currency and amount from the context', () => {
      expect(validateNodes(catalog, undefined, 'origins', context)).to.deep.equal([]);
      const [node] = validate([{ type: 'PIX', pix: { key: 'abc' }, name: 'Payer', metadata: { category: 'x' } }], 'origins',
        { currency: 'BRL', amount: '10.5', now });
      expect(node).to.include({ currency: 'BRL', amount: '10.50', name: 'Payer', externalId: null, identity: null });
      expect(node!.metadata).to.deep.equal({ category: 'x' });
      expect(node!.pix).to.deep.equal({ key: 'abc' });
    });

    it('refuses a currency the type does not move, and a node object currency that disagrees', () => {
      expect(refusal(() => validate([nodeOf(pix, { currency: 'USD', amount: '10.00' })])).message)
        .to.equal('origins[0]: currency USD is not a currency of PIX (BRL)');
      const bank = catalog.nodeType('BANK_ACCOUNT')!;
      expect(refusal(() => validate([nodeOf(bank, { bank: { ...validObject(bank), currency: 'USD' } })], 'destinations')).message)
        .to.equal('destinations[0].bank.currency: USD does not match the node\'s currency BRL');
    });

    it('refuses a country outside the type’s, and anything but alpha-3 where the type takes any country', () => {
      expect(refusal(() => validate([nodeOf(pix, { pix: { key: 'abc', country: 'COL' } })])).message)
        .to.equal('origins[0].pix.country: COL is not a country of PIX (BRA)');
      const swift = catalog.nodeType('SWIFT')!;
      expect(validate([nodeOf(swift, { swift: { ...validObject(swift), country: 'JPN' } })], 'destinations')).to.have.length(1);
      expect(refusal(() => validate([nodeOf(swift, { swift: { ...validObject(swift), country: 'XYZ' } })], 'destinations')).message)
        .to.contain('XYZ is not an ISO 3166-1 alpha-3 country code');
    });

    it('refuses more decimals than the currency allows, naming the node', () => {
      expect(refusal(() => validate([nodeOf(pix, { amount: '10.005' })])).message)
        .to.equal('origins[0]: amount 10.005 has 3 decimals; BRL allows at most 2');
      const etpay = catalog.nodeType('ETPAY')!;
      expect(refusal(() => validate([nodeOf(etpay, { amount: '1000.5' })])).message).to.match(/^origins\[0\]: .*CLP allows none/);
    });

    it('names the failing node by its index and refuses unknown types and too many nodes', () => {
      const nodes = [nodeOf(pix), nodeOf(pix, { pix: undefined, card: validObject(card) })];
      expect(refusal(() => validate(nodes)).message).to.equal('origins[1]: type PIX expects the node object "pix"; found "card"');
      expect(refusal(() => validate([{ type: 'NOPE' } as unknown as PaymentNodeInput])).message).to.contain('unknown node type "NOPE"');
      expect(refusal(() => validate(Array.from({ length: 11 }, () => nodeOf(pix)))).message).to.contain('at most 10');
    });

    it('refuses fields that are not strings or too long', () => {
      expect(refusal(() => validate([nodeOf(pix, { pix: { key: 5 } })])).message).to.equal('origins[0].pix.key must be a string');
      expect(refusal(() => validate([nodeOf(pix, { pix: { key: 'x'.repeat(201) } })])).message).to.contain('at most 200 characters');
      expect(refusal(() => validate([nodeOf(pix, { pix: { key: '   ' } })])).message).to.equal('origins[0].pix: missing required field key');
      const inherited = { key: 'abc', constructor: 'c', toString: 't', hasOwnProperty: 'h' };
      expect(validate([nodeOf(pix, { pix: inherited })])[0]!.pix).to.deep.equal(inherited);
    });
  });

  describe('field formats', () => {
    const cases: [type: string, field: string, bad: string, good?: string][] = [
      ['SPEI', 'clabe', '03218000011835971', '032180000118359719'],
      ['ACH', 'routingNumber', '02100002', '021000021'],
      ['WIRE', 'routingNumber', '0210000210'],
      ['FEDNOW', 'routingNumber', 'abcdefghi'],
      ['RTP', 'routingNumber', '02100002x'],
      ['SEPA', 'iban', '89370400440532013000', 'DE89370400440532013000'],
      ['SEPA', 'iban', 'DE8937'],
      ['FPE', 'sortCode', '12345', '12-34-56'],
      ['SWIFT', 'bic', 'DEUTDEFF5', 'DEUTDEFF500'],
      ['CRYPTO', 'address', '0xabc'],
      ['WEBPAY', 'email', 'payer.example.com'],
    ];
    for (const [name, field, bad, good] of cases) {
      it(`${name}.${field}: refuses "${bad}"${good ? `, accepts "${good}"` : ''}`, () => {
        const type = catalog.nodeType(name)!;
        const side = sideOf(type);
        const node = (value: string) => nodeOf(type, { [type.nodeKey]: { ...validObject(type), [field]: value } });
        expect(refusal(() => validate([node(bad)], side)).message).to.match(new RegExp(`^${side}\\[0\\]\\.${type.nodeKey}\\.${field} `));
        if (good) expect(validate([node(good)], side)[0]).to.have.property(type.nodeKey).that.includes({ [field]: good });
      });
    }
  });

  describe('cards (PCI)', () => {
    it('never returns the full number or the cvv: masked number, bin, last4, inferred brand', () => {
      const result = validate([cardNode({ cvv: '123', expiryMonth: '6', expiryYear: '25' })]);
      const text = JSON.stringify(result);
      expect(text).not.to.contain(cardNumber);
      expect(text).not.to.contain('cvv');
      expect(result[0]!.card).to.deep.equal({
        number: '411111******1111', holder: 'Ana Souza', expiryMonth: '06', expiryYear: '2025', brand: 'VISA', last4: '1111', bin: '411111',
      });
    });

    it('keeps only the known card fields and the brand a client names', () => {
      const [node] = validate([cardNode({ brand: 'ELO', cardType: 'CREDIT', country: 'BRA', track2: cardNumber })]);
      expect(node!.card).to.include({ brand: 'ELO', cardType: 'CREDIT', country: 'BRA' });
      expect(node!.card).not.to.have.property('track2');
      expect(JSON.stringify(node)).not.to.contain(cardNumber);
    });

    it('infers the brand from the number', () => {
      const brands: [string, string][] = [
        ['5555555555554444', 'MASTERCARD'], ['2223003122003222', 'MASTERCARD'], ['378282246310005', 'AMEX'],
        ['6011111111111117', 'UNKNOWN'],
      ];
      for (const [number, brand] of brands) {
        const [node] = validate([cardNode({ number })]);
        expect(node!.card, number).to.include({ brand, last4: number.slice(-4) });
        // The first six only beside at least 16 digits (an AMEX has 15).
        expect(node!.card!.bin, number).to.equal(number.length >= 16 ? number.slice(0, 6) : undefined);
        expect(node!.card!.number).to.have.length(number.length);
        expect(JSON.stringify(node)).not.to.contain(number);
      }
    });

    it('refuses a bad check digit, a malformed number and an expired card, without echoing the number', () => {
      const badLuhn = refusal(() => validate([cardNode({ number: '4111111111111112' })]));
      expect(badLuhn.message).to.equal('origins[0].card.number is not a valid card number (check digit)');
      expect(refusal(() => validate([cardNode({ number: '41111111111' })])).message).to.equal('origins[0].card.number must be 12 to 19 digits');
      expect(refusal(() => validate([cardNode({ number: '4111 1111 1111 1111' })])).message).not.to.contain('4111');
      expect(refusal(() => validate([cardNode({ expiryMonth: '5', expiryYear: '2025' })])).message)
        .to.equal('origins[0].card: the card expired (05/2025)');
      expect(refusal(() => validate([cardNode({ expiryMonth: '12', expiryYear: '24' })])).message).to.contain('expired (12/2024)');
      expect(validate([cardNode({ expiryMonth: '06', expiryYear: '2025' })])).to.have.length(1);
      expect(refusal(() => validate([cardNode({ expiryMonth: '13' })])).message).to.equal('origins[0].card.expiryMonth must be 1 to 12');
      expect(refusal(() => validate([cardNode({ expiryYear: '202' })])).message).to.contain('card.expiryYear');
    });

    it('judges expiry against the clock by default', () => {
      const year = String(new Date().getUTCFullYear() + 1);
      expect(validateNodes(catalog, [cardNode({ expiryYear: year })], 'origins', { currency: 'BRL', amount: '10.00' })).to.have.length(1);
      expect(refusal(() => validateNodes(catalog, [cardNode({ expiryYear: '2020' })], 'origins', { currency: 'BRL', amount: '10.00' })).message)
        .to.contain('expired');
    });
  });

  describe('schemas', () => {
    const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
    const input = ajv.compile(paymentNodeInputSchema);
    const list = ajv.compile(paymentNodesInputSchema);
    const stored = ajv.compile(paymentNodeSchema);

    it('accepts every valid node as input, and what validateNodes returns as a stored node', () => {
      for (const type of catalog.nodeTypes) {
        const node = nodeOf(type, { name: 'n', externalId: 'e-1', metadata: { image: 'i' }, identity: { name: 'Jane' } });
        expect(input(node), `${type.type} ${JSON.stringify(input.errors)}`).to.equal(true);
        const [result] = validate([node], sideOf(type));
        expect(stored(result), `${type.type} ${JSON.stringify(stored.errors)}`).to.equal(true);
      }
      const [withCard] = validate([cardNode({ cvv: '123', cardType: 'DEBIT', country: 'BRA' })]);
      expect(stored(withCard), JSON.stringify(stored.errors)).to.equal(true);
    });

    it('refuses unknown top-level fields, unknown card fields and too many nodes', () => {
      expect(input({ ...nodeOf(pix), surprise: 1 })).to.equal(false);
      expect(input(cardNode({ track2: 'x' }))).to.equal(false);
      expect(input(nodeOf(pix, { pix: { key: 'abc', rail: 'extra fields are fine' } }))).to.equal(true);
      expect(input(nodeOf(pix, { pix: { key: 'abc', country: 'Brazil' } }))).to.equal(false);
      expect(list(Array.from({ length: 10 }, () => nodeOf(pix)))).to.equal(true);
      expect(list(Array.from({ length: 11 }, () => nodeOf(pix)))).to.equal(false);
    });

    it('does not take a stored card with its full number or cvv', () => {
      const [node] = validate([cardNode()]);
      expect(stored({ ...node, card: { ...node!.card, number: cardNumber } })).to.equal(false);
      expect(stored({ ...node, card: { ...node!.card, cvv: '123' } })).to.equal(false);
    });
  });
});
