import { expect } from 'chai';
import fc from 'fast-check';
import {
  accountDecider, availableFunds, settlementAnswerId, settlementAnswerOf, type AccountCommand as TenantCommand,
} from '../src/accounts/decider.ts';
import type { AccountEvent, AccountOpenedData } from '../src/accounts/events.ts';
import { foldEvents } from '../src/domain/decider.ts';
import { DomainError } from '../src/domain/errors.ts';
import { expectRefused } from './support/refused.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

/** Commands of the account's own client unless they name another tenant. */
type AccountCommand = AsOwner<TenantCommand>;

const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();
const account: Omit<AccountOpenedData, 'openedAt'> = {
  accountId: 'a1', clientId: 'c1', identityId: 'i1', externalId: null, type: 'CHECKING', custody: 'PLATFORM', currency: 'CLP',
  name: 'Main', accountNumber: '100000000001', accountHolder: 'Ana', country: 'CHL', parentId: null,
};
const opened: AccountEvent = { type: 'AccountOpened', data: { ...account, openedAt: at } };

const decide = (history: AccountEvent[], command: AccountCommand) =>
  accountDecider.decide(asOwner<TenantCommand>(command), foldEvents(accountDecider, history));
const refused = (history: AccountEvent[], command: AccountCommand, kind: DomainError['kind'], message: RegExp) =>
  expectRefused(() => decide(history, command), kind, message);

describe('account decider', () => {
  it('opens once', () => {
    expect(decide([], { type: 'OpenAccount', account, now })).to.deep.equal([opened]);
    refused([opened], { type: 'OpenAccount', account, now }, 'alreadyExists', /already exists/);
  });

  it('answers another client\'s account as not found, and lets an operator or the settlement (any tenant) act on it', () => {
    const changes: AccountCommand[] = [
      { type: 'UpdateAccount', changes: { name: 'Savings' }, now }, { type: 'CloseAccount', now },
      { type: 'AdjustAccount', amount: '10', reason: 'test deposit', adjustmentId: 'adj-1', now },
      { type: 'CreditSettlement', paymentId: 'p1', totalAmount: '10', feeAmount: '0', netAmount: '10', fundsFrom: 'clearing', settlementBatchId: null, now },
      { type: 'HoldFunds', holdId: 'h1', amount: '1', reason: 'refund', now }, { type: 'ReleaseHold', holdId: 'h1', now },
      { type: 'DebitHold', holdId: 'h1', now },
    ];
    for (const command of changes) refused([opened], { ...command, tenant: OTHER_CLIENT }, 'notFound', /^account not found$/);
    expect(decide([opened], { type: 'AdjustAccount', tenant: 'any', amount: '10', reason: 'test deposit', adjustmentId: 'adj-1', now }))
      .to.have.length(1);
  });

  it('updates fields and status separately, and only what changes', () => {
    expect(decide([opened], { type: 'UpdateAccount', changes: { name: 'Savings', status: 'BLOCKED' }, now })).to.deep.equal([
      { type: 'AccountUpdated', data: { accountId: 'a1', changes: { name: 'Savings' }, updatedAt: at } },
      { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'ACTIVE', to: 'BLOCKED', changedAt: at } },
    ]);
    expect(decide([opened], { type: 'UpdateAccount', changes: { status: 'ACTIVE' }, now })).to.deep.equal([]);
  });

  const adjusted = (amount: string, adjustmentId: string): AccountEvent => ({ type: 'AccountAdjusted', data: { accountId: 'a1', clientId: 'c1',
    currency: 'CLP', amount, reason: 'test deposit', adjustmentId, adjustedAt: at } });
  const adjust = (amount: string, adjustmentId: string): AccountCommand => ({ type: 'AdjustAccount', amount, reason: 'test deposit', adjustmentId, now });
  const blocked: AccountEvent = { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'ACTIVE', to: 'BLOCKED', changedAt: at } };
  const closed: AccountEvent = { type: 'AccountClosed', data: { accountId: 'a1', closedAt: at } };
  const settle = (paymentId: string, total = '1000', fee = '30', batch: string | null = null): AccountCommand => ({ type: 'CreditSettlement',
    paymentId, totalAmount: total, feeAmount: fee, netAmount: String(Number(total) - Number(fee)), fundsFrom: 'clearing', settlementBatchId: batch, now });
  const credited = (paymentId: string, total = '1000', fee = '30', batch: string | null = null): AccountEvent => ({ type: 'AccountCredited',
    id: settlementAnswerId('a1', paymentId), data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', paymentId, fundsFrom: 'clearing',
      totalAmount: total, feeAmount: fee, netAmount: String(Number(total) - Number(fee)), settlementBatchId: batch, at } });
  const stateOf = (history: AccountEvent[]) => foldEvents(accountDecider, history);

  it('adjusts once per adjustment id, never by zero, never below the available funds, and credits only while ACTIVE', () => {
    expect(decide([opened], adjust('1500', 'adj-1'))).to.deep.equal([adjusted('1500', 'adj-1')]);
    expect(decide([opened, adjusted('1500', 'adj-1')], adjust('1500', 'adj-1'))).to.deep.equal([]);
    refused([opened], adjust('0', 'adj-2'), 'failedPrecondition', /zero/);
    refused([opened, adjusted('1500', 'adj-1')], adjust('-1501', 'adj-2'), 'failedPrecondition', /has 1500 CLP available; it cannot be debited 1501 CLP/);
    expect(decide([opened, adjusted('1500', 'adj-1')], adjust('-1500', 'adj-2'))).to.deep.equal([adjusted('-1500', 'adj-2')]);
    // A blocked account receives nothing; a correction may still take money out of it.
    refused([opened, blocked], adjust('10', 'adj-3'), 'failedPrecondition', /is BLOCKED; it cannot receive funds/);
    expect(decide([opened, adjusted('1500', 'adj-1'), blocked], adjust('-10', 'adj-3'))).to.deep.equal([adjusted('-10', 'adj-3')]);
  });

  it('answers a settlement once per payment: credited while ACTIVE, refused when blocked or closed, the same answer when asked again', () => {
    expect(decide([opened], settle('p1'))).to.deep.equal([credited('p1')]);
    expect(decide([opened, credited('p1')], settle('p1'))).to.deep.equal([]);
    expect(settlementAnswerOf(stateOf([opened, credited('p1')]), 'p1')).to.deep.include({ outcome: 'CREDITED', eventId: settlementAnswerId('a1', 'p1') });
    const refusal = (status: 'BLOCKED' | 'CLOSED'): AccountEvent => ({ type: 'AccountCreditRefused', id: settlementAnswerId('a1', 'p2'),
      data: { accountId: 'a1', clientId: 'c1', paymentId: 'p2', reason: 'ACCOUNT_NOT_ACTIVE', status, settlementBatchId: 'b1', at } });
    expect(decide([opened, blocked], settle('p2', '1000', '30', 'b1'))).to.deep.equal([refusal('BLOCKED')]);
    expect(decide([opened, closed], settle('p2', '1000', '30', 'b1'))).to.deep.equal([refusal('CLOSED')]);
    // The refusal stands even once the account is unblocked: the payment already carries it.
    const unblocked: AccountEvent = { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'BLOCKED', to: 'ACTIVE', changedAt: at } };
    expect(decide([opened, blocked, refusal('BLOCKED'), unblocked], settle('p2'))).to.deep.equal([]);
    expect(stateOf([opened, credited('p1')]).balance).to.equal('970');
    refused([opened], { ...settle('p3'), netAmount: '1' } as AccountCommand, 'invalid', /is not 1000/);
    refused([], settle('p1'), 'notFound', /not found/);
  });

  it('holds only available funds of an ACTIVE account; a hold is released or debited once', () => {
    const funded = [opened, adjusted('1000', 'adj-1')];
    const hold = (holdId: string, amount: string): AccountCommand => ({ type: 'HoldFunds', holdId, amount, reason: 'refund', now });
    const held = (holdId: string, amount: string): AccountEvent => ({ type: 'AccountFundsHeld',
      data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', holdId, amount, reason: 'refund', at } });
    expect(decide(funded, hold('h1', '600'))).to.deep.equal([held('h1', '600')]);
    expect(decide([...funded, held('h1', '600')], hold('h1', '600'))).to.deep.equal([]);
    refused([...funded, held('h1', '600')], hold('h2', '401'), 'failedPrecondition', /has 400 CLP available; it cannot hold 401 CLP/);
    refused([...funded, blocked], hold('h2', '1'), 'failedPrecondition', /is BLOCKED/);
    const ended = (type: 'AccountHoldReleased' | 'AccountHoldDebited'): AccountEvent =>
      ({ type, data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', holdId: 'h1', amount: '600', at } });
    const withHold = [...funded, held('h1', '600')];
    expect(availableFunds(stateOf(withHold))).to.equal('400');
    expect(decide(withHold, { type: 'ReleaseHold', holdId: 'h1', now })).to.deep.equal([ended('AccountHoldReleased')]);
    expect(decide(withHold, { type: 'DebitHold', holdId: 'h1', now })).to.deep.equal([ended('AccountHoldDebited')]);
    expect(decide([...withHold, ended('AccountHoldDebited')], { type: 'DebitHold', holdId: 'h1', now })).to.deep.equal([]);
    refused([...withHold, ended('AccountHoldDebited')], { type: 'ReleaseHold', holdId: 'h1', now }, 'failedPrecondition', /already DEBITED/);
    const debited = stateOf([...withHold, ended('AccountHoldDebited')]);
    expect([debited.balance, debited.held]).to.deep.equal(['400', '0']);
    expect(availableFunds(stateOf([...withHold, ended('AccountHoldReleased')]))).to.equal('1000');
    refused(funded, { type: 'DebitHold', holdId: 'nope', now }, 'notFound', /no hold nope/);
  });

  it('closes only with zero balance and nothing on hold, then is gone', () => {
    refused([opened, adjusted('10', 'adj-1')], { type: 'CloseAccount', now }, 'failedPrecondition', /holds 10 CLP; only an account with zero balance/);
    refused([opened, credited('p1')], { type: 'CloseAccount', now }, 'failedPrecondition', /holds 970 CLP/);
    expect(decide([opened], { type: 'CloseAccount', now })).to.deep.equal([closed]);
    expect(decide([opened, adjusted('10', 'adj-1'), adjusted('-10', 'adj-2')], { type: 'CloseAccount', now })).to.deep.equal([closed]);
    refused([opened, closed], { type: 'UpdateAccount', changes: { name: 'x' }, now }, 'notFound', /not found/);
    refused([], { type: 'CloseAccount', now }, 'notFound', /not found/);
  });

  it('property: whatever the order of commands, the balance is the sum of the movements, never negative, and no credit lands outside ACTIVE', () => {
    const command = fc.oneof(
      fc.record({ kind: fc.constant('adjust' as const), amount: fc.integer({ min: -500, max: 500 }), id: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('settle' as const), amount: fc.integer({ min: 1, max: 500 }), id: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('hold' as const), amount: fc.integer({ min: 1, max: 500 }), id: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constantFrom('release' as const, 'debit' as const), id: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constantFrom('block' as const, 'unblock' as const, 'close' as const) }),
    );
    fc.assert(fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
      let history: AccountEvent[] = [opened];
      for (const c of commands) {
        const next: AccountCommand =
          c.kind === 'adjust' ? adjust(String(c.amount), `adj-${c.id}`)
          : c.kind === 'settle' ? settle(`p${c.id}`, String(c.amount), '0')
          : c.kind === 'hold' ? { type: 'HoldFunds', holdId: `h${c.id}`, amount: String(c.amount), reason: 'r', now }
          : c.kind === 'release' ? { type: 'ReleaseHold', holdId: `h${c.id}`, now }
          : c.kind === 'debit' ? { type: 'DebitHold', holdId: `h${c.id}`, now }
          : c.kind === 'close' ? { type: 'CloseAccount', now }
          : { type: 'UpdateAccount', changes: { status: c.kind === 'block' ? 'BLOCKED' : 'ACTIVE' }, now };
        let events: AccountEvent[];
        try {
          events = decide(history, next);
        } catch (error) {
          expect(error).to.be.instanceOf(DomainError);
          continue;
        }
        const before = stateOf(history);
        for (const event of events) {
          const credit = event.type === 'AccountCredited' || (event.type === 'AccountAdjusted' && Number(event.data.amount) > 0);
          if (credit) expect(before.status === 'ACTIVE' && !before.closed, `${event.type} on a ${before.closed ? 'closed' : before.status} account`).to.equal(true);
        }
        history = [...history, ...events];
        const state = stateOf(history);
        const moved = history.reduce((sum, e) => sum + (e.type === 'AccountAdjusted' ? Number(e.data.amount)
          : e.type === 'AccountCredited' ? Number(e.data.netAmount) : e.type === 'AccountHoldDebited' ? -Number(e.data.amount) : 0), 0);
        expect(Number(state.balance)).to.equal(moved);
        expect(Number(availableFunds(state))).to.be.at.least(0);
        if (state.closed) expect(state.balance).to.equal('0');
      }
    }), { numRuns: 500 });
  });
});
