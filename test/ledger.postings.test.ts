import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { AccountAdjustedData } from '../src/ledger/events.ts';
import { CURRENCY_SCALES, parseAmount, toDecimal } from '../src/domain/money.ts';
import {
  assertBalanced, entriesFor as entriesBy, entryIdFor, isSystemAccount, LedgerInvariantError, ledgerEventTypesOf, parseSystemAccountId,
  systemAccountId, type JournalEntry,
} from '../projections/ledgerPostings.ts';
import { registered } from '../src/contexts.ts';

/** The entries of an event by the service's postings (every context's, as its manifest carries them). */
const entriesFor = (event: RecordedEvent) => entriesBy(event, registered.postings);

function recorded(type: string, data: unknown, overrides: Partial<RecordedEvent> = {}): RecordedEvent {
  return {
    id: randomUUID(), stream: 'account-a1', revision: 3n, position: { commit: 10n, prepare: 20n }, type, schemaVersion: 1,
    data, metadata: {}, recordedAt: new Date('2025-01-02T03:04:05Z'), ...overrides,
  };
}

const adjusted = (data: Partial<AccountAdjustedData> = {}, overrides: Partial<RecordedEvent> = {}) => recorded('AccountAdjusted', {
  accountId: 'a1', clientId: 'c1', currency: 'USD', amount: '100.5', reason: 'test deposit', adjustmentId: 'adj-1',
  adjustedAt: '2025-01-02T03:04:00.000Z', ...data,
}, overrides);

const entry = (lines: [string, string][], changes: Partial<JournalEntry> = {}): JournalEntry => ({
  entryId: 'e1', currency: 'USD', occurredAt: '2025-01-02T03:04:00.000Z', description: 'test', sourceEventId: 'ev1', clientId: 'c1',
  lines: lines.map(([accountId, amount]) => ({ accountId, amount })), ...changes,
});

function broken(candidate: JournalEntry, pattern: RegExp): void {
  expect(() => assertBalanced(candidate)).to.throw(LedgerInvariantError, pattern);
}

describe('ledger postings', () => {
  describe('system accounts', () => {
    it('one per kind and currency, named system:<CUR>:<kind>', () => {
      expect(systemAccountId('USD', 'clearing')).to.equal('system:USD:clearing');
      expect(systemAccountId('CLP', 'suspense')).to.equal('system:CLP:suspense');
      expect(systemAccountId('BTC', 'fees')).to.equal('system:BTC:fees');
      expect(systemAccountId('EUR', 'refunds_payable')).to.equal('system:EUR:refunds_payable');
      expect(systemAccountId('USDC', 'adjustments')).to.equal('system:USDC:adjustments');
      expect(parseSystemAccountId('system:USDC:adjustments')).to.deep.equal({ currency: 'USDC', kind: 'adjustments' });
      expect(parseSystemAccountId('system:XXX:fees')).to.equal(null);
      expect(parseSystemAccountId('system:USD:other')).to.equal(null);
      expect(parseSystemAccountId('a1')).to.equal(null);
      expect(isSystemAccount('system:USD:fees')).to.equal(true);
      expect(isSystemAccount('a1')).to.equal(false);
    });

    it('refuses unknown currencies and kinds', () => {
      expect(() => systemAccountId('XXX', 'fees')).to.throw(LedgerInvariantError);
      expect(() => systemAccountId('USD', 'bogus' as 'fees')).to.throw(LedgerInvariantError);
    });
  });

  describe('assertBalanced', () => {
    it('accepts entries whose lines sum to exactly zero', () => {
      assertBalanced(entry([['a1', '100.50'], ['system:USD:adjustments', '-100.50']]));
      assertBalanced(entry([['a1', '100.5'], ['system:USD:adjustments', '-100.50']]));
      assertBalanced(entry([['system:USD:clearing', '-100.00'], ['a1', '97.10'], ['system:USD:fees', '2.90']]));
      assertBalanced(entry([['a1', '1'], ['a2', '-1']], { currency: 'CLP', clientId: null }));
      assertBalanced(entry([['a1', '0.00000001'], ['a2', '-0.00000001']], { currency: 'BTC' }));
      // the classic float trap, exactly: 0.1 + 0.2 − 0.3 = 0
      assertBalanced(entry([['a1', '0.1'], ['a2', '0.2'], ['a3', '-0.3']]));
    });

    it('refuses lines that do not sum to zero, however small the difference', () => {
      broken(entry([['a1', '100.50'], ['system:USD:adjustments', '-100.49']]), /sum to 0.01 USD/);
      broken(entry([['a1', '0.00000001'], ['a2', '-0.00000002']], { currency: 'BTC' }), /sum to -0.00000001 BTC/);
      broken(entry([['a1', '1'], ['a2', '1']]), /sum to 2 USD/);
    });

    it('refuses fewer than two lines', () => {
      broken(entry([]), /0 line\(s\)/);
      broken(entry([['a1', '0.00']]), /1 line\(s\)/);
    });

    it('refuses a zero line', () => {
      broken(entry([['a1', '5'], ['a2', '0.00'], ['a3', '-5']]), /line 1 \(a2\) is zero/);
      broken(entry([['a1', '-0'], ['a2', '0']]), /is zero/);
    });

    it('refuses mixed currencies', () => {
      broken(entry([['a1', '10.00'], ['system:EUR:adjustments', '-10.00']]), /mixes currencies/);
      broken(entry([['system:CLP:clearing', '10'], ['a1', '-10']], { currency: 'USD' }), /mixes currencies/);
      broken(entry([['a1', '10.00'], ['system:XXX:fees', '-10.00']]), /unknown system account/);
    });

    it('refuses amounts beyond the scale or malformed, and unknown currencies', () => {
      broken(entry([['a1', '1.005'], ['a2', '-1.005']]), /line 0 \(a1\).*3 decimals/);
      broken(entry([['a1', '1.5'], ['a2', '-1.5']], { currency: 'CLP' }), /decimals/);
      broken(entry([['a1', '1e2'], ['a2', '-100']]), /not a decimal string/);
      broken(entry([['a1', 5 as unknown as string], ['a2', '-5']]), /not a decimal string/);
      broken(entry([['a1', '1'], ['a2', '-1']], { currency: 'XXX' }), /unknown currency/);
    });

    it('refuses entries without ids, a valid timestamp or accounts', () => {
      broken(entry([['a1', '1'], ['a2', '-1']], { entryId: '' }), /no entryId/);
      broken(entry([['a1', '1'], ['a2', '-1']], { sourceEventId: '' }), /no sourceEventId/);
      broken(entry([['a1', '1'], ['a2', '-1']], { occurredAt: 'yesterday' }), /invalid occurredAt/);
      broken(entry([['', '1'], ['a2', '-1']]), /line 0 has no accountId/);
    });

    it('balanced iff the lines sum to zero (property)', () => {
      const scale = CURRENCY_SCALES.USD;
      fc.assert(fc.property(fc.array(fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }).filter((n) => n !== 0n), { minLength: 1, maxLength: 6 }),
        fc.boolean(), (minors, closeIt) => {
          const lines: [string, string][] = minors.map((m, i) => [`a${i}`, toDecimal(m).dividedBy(10 ** scale).toFixed(scale)]);
          const sum = minors.reduce((a, b) => a + b, 0n);
          if (closeIt && sum !== 0n) lines.push(['system:USD:suspense', toDecimal(-sum).dividedBy(10 ** scale).toFixed(scale)]);
          const balanced = lines.length >= 2 && (closeIt || sum === 0n);
          if (balanced) assertBalanced(entry(lines));
          else expect(() => assertBalanced(entry(lines))).to.throw(LedgerInvariantError);
        }));
    });
  });

  describe('entriesFor', () => {
    it('maps an adjustment to +amount on the account and −amount on the adjustments account', () => {
      const event = adjusted();
      const entries = entriesFor(event);
      expect(entries).to.deep.equal([{
        entryId: entryIdFor(event.id, 0),
        currency: 'USD',
        occurredAt: '2025-01-02T03:04:00.000Z',
        description: 'Adjustment adj-1: test deposit',
        sourceEventId: event.id,
        clientId: 'c1',
        lines: [{ accountId: 'a1', amount: '100.50' }, { accountId: 'system:USD:adjustments', amount: '-100.50' }],
      }]);
    });

    it('maps a negative adjustment, at each currency scale', () => {
      expect(entriesFor(adjusted({ amount: '-7', currency: 'CLP' }))[0]!.lines).to.deep.equal([
        { accountId: 'a1', amount: '-7' }, { accountId: 'system:CLP:adjustments', amount: '7' }]);
      expect(entriesFor(adjusted({ amount: '-0.5', currency: 'BTC' }))[0]!.lines).to.deep.equal([
        { accountId: 'a1', amount: '-0.50000000' }, { accountId: 'system:BTC:adjustments', amount: '0.50000000' }]);
    });

    it('is deterministic: the same event gives the same entry and id', () => {
      const event = adjusted();
      expect(entriesFor(event)).to.deep.equal(entriesFor(structuredClone(event)));
      expect(entryIdFor(event.id)).to.equal(entryIdFor(event.id));
      expect(entryIdFor(event.id, 0)).to.not.equal(entryIdFor(event.id, 1));
      expect(entriesFor(adjusted())[0]!.entryId).to.not.equal(entriesFor(event)[0]!.entryId);
      expect(entryIdFor(event.id)).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it('takes the client from the metadata when the data has none', () => {
      const [entry] = entriesFor(adjusted({ clientId: undefined as unknown as string }, { metadata: { clientId: 'c9' } }));
      expect(entry!.clientId).to.equal('c9');
      const [orphan] = entriesFor(adjusted({ clientId: undefined as unknown as string }));
      expect(orphan!.clientId).to.equal(null);
    });

    it('moves no money for other events', () => {
      expect(entriesFor(recorded('AccountOpened', { accountId: 'a1' }))).to.deep.equal([]);
      expect(entriesFor(recorded('toString', {}))).to.deep.equal([]);
      expect(entriesFor(recorded('constructor', {}))).to.deep.equal([]);
      expect(ledgerEventTypesOf(registered.postings).sort()).to.deep.equal(['AccountAdjusted', 'AccountCredited', 'AccountFundsHeld', 'AccountHoldDebited', 'AccountHoldReleased', 'DepositReceived', 'PaymentSettled', 'PaymentUnsettled', 'RefundSettled']);
    });

    it('throws (never skips) on a malformed money event', () => {
      const cases: [Partial<AccountAdjustedData>, RegExp][] = [
        [{ amount: '0' }, /is zero/],
        [{ amount: '0.00' }, /is zero/],
        [{ amount: '10.001' }, /decimals/],
        [{ amount: '1e3' }, /not a decimal string/],
        [{ amount: 10 as unknown as string }, /data.amount/],
        [{ currency: 'XXX' }, /unknown currency/],
        [{ accountId: '' }, /data.accountId/],
        [{ accountId: 'system:USD:fees' }, /system account/],
        [{ adjustedAt: 'not a date' }, /invalid occurredAt/],
        [{ adjustmentId: undefined as unknown as string }, /data.adjustmentId/],
      ];
      for (const [data, pattern] of cases) {
        expect(() => entriesFor(adjusted(data)), JSON.stringify(data)).to.throw(LedgerInvariantError, pattern);
      }
    });

    it('every adjustment yields one balanced entry that moves the account by exactly the amount (property)', () => {
      fc.assert(fc.property(
        fc.constantFrom(...Object.keys(CURRENCY_SCALES)),
        fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }).filter((n) => n !== 0n),
        (currency, minor) => {
          const scale = CURRENCY_SCALES[currency as keyof typeof CURRENCY_SCALES];
          const amount = toDecimal(minor).dividedBy(toDecimal(10n ** BigInt(scale))).toString();
          const [only, ...rest] = entriesFor(adjusted({ currency, amount }));
          expect(rest).to.deep.equal([]);
          assertBalanced(only!);
          expect(only!.currency).to.equal(currency);
          expect(parseAmount(only!.lines[0]!.amount, currency).equals(toDecimal(amount))).to.equal(true);
          expect(only!.lines[1]!.accountId).to.equal(systemAccountId(currency, 'adjustments'));
        }));
    });
  });

  describe('payment settlement', () => {
    const settled = (data: Record<string, unknown> = {}) => recorded('PaymentSettled', {
      paymentId: 'p1', from: 'RECEIVED', to: 'SETTLED', at: '2025-01-02T03:04:00.000Z', clientId: 'c1', accountId: 'a1',
      currency: 'USD', totalAmount: '100.00', feeAmount: '2.90', netAmount: '97.10', settlementBatchId: 'b1', ...data,
    });

    it('debits clearing the total and credits the account the net and the fees account the fee', () => {
      const [only] = entriesFor(settled());
      expect(only!.lines).to.deep.equal([
        { accountId: 'system:USD:clearing', amount: '-100.00' },
        { accountId: 'a1', amount: '97.10' },
        { accountId: 'system:USD:fees', amount: '2.90' },
      ]);
      expect(only!.description).to.include('batch b1');
    });

    it('leaves out a zero fee, and refuses a net and fee that do not make the total', () => {
      expect(entriesFor(settled({ feeAmount: '0.00', netAmount: '100.00' }))[0]!.lines).to.have.length(2);
      expect(() => entriesFor(settled({ netAmount: '97.00' }))).to.throw(LedgerInvariantError, /not the total/);
      expect(() => entriesFor(settled({ accountId: 'system:USD:fees' }))).to.throw(LedgerInvariantError, /system account/);
    });

    it('parks unreconciled funds in suspense', () => {
      const [only] = entriesFor(recorded('PaymentUnsettled', {
        paymentId: 'p1', from: 'RECEIVED', to: 'UNSETTLED', at: '2025-01-02T03:04:00.000Z', clientId: 'c1', currency: 'CLP',
        receivedAmount: '1500', reason: 'ACCOUNT_NOT_ACTIVE', detail: 'blocked', settlementBatchId: null,
      }));
      expect(only!.lines).to.deep.equal([
        { accountId: 'system:CLP:clearing', amount: '-1500' },
        { accountId: 'system:CLP:suspense', amount: '1500' },
      ]);
    });
  });

  describe('deposits without a destination', () => {
    const deposit = (data: Record<string, unknown> = {}) => recorded('DepositReceived', {
      paymentId: 'd1', clientId: 'c1', totalAmount: '3000.00', currency: 'ARS', createdAt: '2025-01-02T03:04:00.000Z', externalId: 'sandbox:dep-1',
      ...data,
    });

    it('an unassigned deposit waits in suspense: clearing −total, suspense +total', () => {
      const [only] = entriesFor(deposit());
      expect(only!.lines).to.deep.equal([
        { accountId: 'system:ARS:clearing', amount: '-3000.00' },
        { accountId: 'system:ARS:suspense', amount: '3000.00' },
      ]);
      expect(only).to.include({ occurredAt: '2025-01-02T03:04:00.000Z', clientId: 'c1', description: 'Unassigned deposit d1' });
      expect(() => entriesFor(deposit({ totalAmount: '0.00' }))).to.throw(LedgerInvariantError, /not positive/);
      expect(() => entriesFor(deposit({ totalAmount: '1.001' }))).to.throw(LedgerInvariantError, /decimals/);
    });

    it('its assignment moves suspense to the account in one entry', () => {
      const [only] = entriesFor(recorded('AccountCredited', {
        accountId: 'a1', clientId: 'c1', currency: 'ARS', paymentId: 'd1', fundsFrom: 'suspense', totalAmount: '3000.00', feeAmount: '0.00',
        netAmount: '3000.00', settlementBatchId: null, at: '2025-01-02T05:00:00.000Z',
      }));
      expect(only!.lines).to.deep.equal([
        { accountId: 'system:ARS:suspense', amount: '-3000.00' },
        { accountId: 'a1', amount: '3000.00' },
      ]);
      expect(only!.description).to.equal('Assignment of payment d1');
    });
  });
});
