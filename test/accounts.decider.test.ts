import { expect } from 'chai';
import fc from 'fast-check';
import {
  accountDecider, availableFunds, settlementAnswerId, settlementAnswerOf, type AccountCommand as TenantCommand,
} from '../src/accounts/decider.ts';
import type { AccountEvent, AccountOpenedData } from '../src/accounts/events.ts';
import { foldEvents } from '../src/domain/decider.ts';
import { DomainError } from '../src/domain/errors.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
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

const { given } = DeciderSpecification.for(accountDecider, asOwner<TenantCommand>);

describe('account decider', () => {
  it('opens once', () => {
    given([]).when({ type: 'OpenAccount', account, now }).then([opened]);
    given([opened]).when({ type: 'OpenAccount', account, now }).thenThrows('alreadyExists', /already exists/);
  });

  it('answers another client\'s account as not found, and lets an operator or the settlement (any tenant) act on it', () => {
    const changes: AccountCommand[] = [
      { type: 'UpdateAccount', changes: { name: 'Savings' }, now }, { type: 'CloseAccount', now },
      { type: 'AdjustAccount', amount: '10', reason: 'test deposit', adjustmentId: 'adj-1', now },
      { type: 'CreditSettlement', paymentId: 'p1', totalAmount: '10', feeAmount: '0', netAmount: '10', fundsFrom: 'clearing', settlementBatchId: null, now },
      { type: 'HoldFunds', holdId: 'h1', amount: '1', reason: 'refund', now }, { type: 'ReleaseHold', holdId: 'h1', now },
      { type: 'DebitHold', holdId: 'h1', now },
    ];
    for (const command of changes) given([opened]).when({ ...command, tenant: OTHER_CLIENT }).thenThrows('notFound', /^account not found$/);
    expect(given([opened]).when({ type: 'AdjustAccount', tenant: 'any', amount: '10', reason: 'test deposit', adjustmentId: 'adj-1', now }).decided())
      .to.have.length(1);
  });

  it('updates fields and status separately, and only what changes', () => {
    given([opened]).when({ type: 'UpdateAccount', changes: { name: 'Savings', status: 'BLOCKED' }, now }).then([
      { type: 'AccountUpdated', data: { accountId: 'a1', changes: { name: 'Savings' }, updatedAt: at } },
      { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'ACTIVE', to: 'BLOCKED', changedAt: at } },
    ]);
    given([opened]).when({ type: 'UpdateAccount', changes: { status: 'ACTIVE' }, now }).then([]);
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
    given([opened]).when(adjust('1500', 'adj-1')).then([adjusted('1500', 'adj-1')]);
    given([opened, adjusted('1500', 'adj-1')]).when(adjust('1500', 'adj-1')).then([]);
    given([opened]).when(adjust('0', 'adj-2')).thenThrows('failedPrecondition', /zero/);
    given([opened, adjusted('1500', 'adj-1')]).when(adjust('-1501', 'adj-2')).thenThrows('failedPrecondition', /has 1500 CLP available; it cannot be debited 1501 CLP/);
    given([opened, adjusted('1500', 'adj-1')]).when(adjust('-1500', 'adj-2')).then([adjusted('-1500', 'adj-2')]);
    // A blocked account receives nothing; a correction may still take money out of it.
    given([opened, blocked]).when(adjust('10', 'adj-3')).thenThrows('failedPrecondition', /is BLOCKED; it cannot receive funds/);
    given([opened, adjusted('1500', 'adj-1'), blocked]).when(adjust('-10', 'adj-3')).then([adjusted('-10', 'adj-3')]);
  });

  it('answers a settlement once per payment: credited while ACTIVE, refused when blocked or closed, the same answer when asked again', () => {
    given([opened]).when(settle('p1')).then([credited('p1')]);
    given([opened, credited('p1')]).when(settle('p1')).then([]);
    expect(settlementAnswerOf(stateOf([opened, credited('p1')]), 'p1')).to.deep.include({ outcome: 'CREDITED', eventId: settlementAnswerId('a1', 'p1') });
    const refusal = (status: 'BLOCKED' | 'CLOSED'): AccountEvent => ({ type: 'AccountCreditRefused', id: settlementAnswerId('a1', 'p2'),
      data: { accountId: 'a1', clientId: 'c1', paymentId: 'p2', reason: 'ACCOUNT_NOT_ACTIVE', status, settlementBatchId: 'b1', at } });
    given([opened, blocked]).when(settle('p2', '1000', '30', 'b1')).then([refusal('BLOCKED')]);
    given([opened, closed]).when(settle('p2', '1000', '30', 'b1')).then([refusal('CLOSED')]);
    // The refusal stands even once the account is unblocked: the payment already carries it.
    const unblocked: AccountEvent = { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'BLOCKED', to: 'ACTIVE', changedAt: at } };
    given([opened, blocked, refusal('BLOCKED'), unblocked]).when(settle('p2')).then([]);
    expect(stateOf([opened, credited('p1')]).balance).to.equal('970');
    given([opened]).when({ ...settle('p3'), netAmount: '1' } as AccountCommand).thenThrows('invalid', /is not 1000/);
    given([]).when(settle('p1')).thenThrows('notFound', /not found/);
  });

  it('holds only available funds of an ACTIVE account; a hold is released or debited once', () => {
    const funded = [opened, adjusted('1000', 'adj-1')];
    const hold = (holdId: string, amount: string): AccountCommand => ({ type: 'HoldFunds', holdId, amount, reason: 'refund', now });
    const held = (holdId: string, amount: string): AccountEvent => ({ type: 'AccountFundsHeld',
      data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', holdId, amount, reason: 'refund', at } });
    given(funded).when(hold('h1', '600')).then([held('h1', '600')]);
    given([...funded, held('h1', '600')]).when(hold('h1', '600')).then([]);
    given([...funded, held('h1', '600')]).when(hold('h2', '401')).thenThrows('failedPrecondition', /has 400 CLP available; it cannot hold 401 CLP/);
    given([...funded, blocked]).when(hold('h2', '1')).thenThrows('failedPrecondition', /is BLOCKED/);
    const ended = (type: 'AccountHoldReleased' | 'AccountHoldDebited'): AccountEvent =>
      ({ type, data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', holdId: 'h1', amount: '600', at } });
    const withHold = [...funded, held('h1', '600')];
    expect(availableFunds(stateOf(withHold))).to.equal('400');
    given(withHold).when({ type: 'ReleaseHold', holdId: 'h1', now }).then([ended('AccountHoldReleased')]);
    given(withHold).when({ type: 'DebitHold', holdId: 'h1', now }).then([ended('AccountHoldDebited')]);
    given([...withHold, ended('AccountHoldDebited')]).when({ type: 'DebitHold', holdId: 'h1', now }).then([]);
    given([...withHold, ended('AccountHoldDebited')]).when({ type: 'ReleaseHold', holdId: 'h1', now }).thenThrows('failedPrecondition', /already DEBITED/);
    const debited = stateOf([...withHold, ended('AccountHoldDebited')]);
    expect([debited.balance, debited.held]).to.deep.equal(['400', '0']);
    expect(availableFunds(stateOf([...withHold, ended('AccountHoldReleased')]))).to.equal('1000');
    given(funded).when({ type: 'DebitHold', holdId: 'nope', now }).thenThrows('notFound', /no hold nope/);
  });

  it('closes only with zero balance and nothing on hold, then is gone', () => {
    given([opened, adjusted('10', 'adj-1')]).when({ type: 'CloseAccount', now }).thenThrows('failedPrecondition', /holds 10 CLP; only an account with zero balance/);
    given([opened, credited('p1')]).when({ type: 'CloseAccount', now }).thenThrows('failedPrecondition', /holds 970 CLP/);
    given([opened]).when({ type: 'CloseAccount', now }).then([closed]);
    given([opened, adjusted('10', 'adj-1'), adjusted('-10', 'adj-2')]).when({ type: 'CloseAccount', now }).then([closed]);
    given([opened, closed]).when({ type: 'UpdateAccount', changes: { name: 'x' }, now }).thenThrows('notFound', /not found/);
    given([]).when({ type: 'CloseAccount', now }).thenThrows('notFound', /not found/);
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
          events = given(history).when(next).decided();
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
