import { expect } from 'chai';
import { accountDecider, type AccountCommand } from '../src/accounts/decider.ts';
import type { AccountEvent, AccountOpenedData } from '../src/accounts/events.ts';
import { foldEvents } from '../src/domain/decider.ts';
import type { DomainError } from '../src/domain/errors.ts';
import { expectRefused } from './support/refused.ts';

const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();
const account: Omit<AccountOpenedData, 'openedAt'> = {
  accountId: 'a1', clientId: 'c1', identityId: 'i1', externalId: null, type: 'CHECKING', custody: 'PLATFORM', currency: 'CLP',
  name: 'Main', accountNumber: '100000000001', accountHolder: 'Ana', country: 'CHL', parentId: null,
};
const opened: AccountEvent = { type: 'AccountOpened', data: { ...account, openedAt: at } };

const decide = (history: AccountEvent[], command: AccountCommand) => accountDecider.decide(command, foldEvents(accountDecider, history));
const refused = (history: AccountEvent[], command: AccountCommand, kind: DomainError['kind'], message: RegExp) =>
  expectRefused(() => decide(history, command), kind, message);

describe('account decider', () => {
  it('opens once', () => {
    expect(decide([], { type: 'OpenAccount', account, now })).to.deep.equal([opened]);
    refused([opened], { type: 'OpenAccount', account, now }, 'alreadyExists', /already exists/);
  });

  it('updates fields and status separately, and only what changes', () => {
    expect(decide([opened], { type: 'UpdateAccount', changes: { name: 'Savings', status: 'BLOCKED' }, now })).to.deep.equal([
      { type: 'AccountUpdated', data: { accountId: 'a1', changes: { name: 'Savings' }, updatedAt: at } },
      { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'ACTIVE', to: 'BLOCKED', changedAt: at } },
    ]);
    expect(decide([opened], { type: 'UpdateAccount', changes: { status: 'ACTIVE' }, now })).to.deep.equal([]);
  });

  it('adjusts once per adjustment id, never by zero', () => {
    const adjusted: AccountEvent = { type: 'AccountAdjusted', data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', amount: '1500',
      reason: 'test deposit', adjustmentId: 'adj-1', adjustedAt: at } };
    expect(decide([opened], { type: 'AdjustAccount', amount: '1500', reason: 'test deposit', adjustmentId: 'adj-1', now })).to.deep.equal([adjusted]);
    expect(decide([opened, adjusted], { type: 'AdjustAccount', amount: '1500', reason: 'test deposit', adjustmentId: 'adj-1', now })).to.deep.equal([]);
    refused([opened], { type: 'AdjustAccount', amount: '0.00', reason: 'x', adjustmentId: 'adj-2', now }, 'failedPrecondition', /zero/);
  });

  it('closes only with zero balance, then is gone', () => {
    refused([opened], { type: 'CloseAccount', balance: '10', now }, 'failedPrecondition', /zero balance/);
    refused([opened], { type: 'CloseAccount', balance: '-0.5', now }, 'failedPrecondition', /zero balance/);
    const closed: AccountEvent = { type: 'AccountClosed', data: { accountId: 'a1', closedAt: at } };
    expect(decide([opened], { type: 'CloseAccount', balance: '0', now })).to.deep.equal([closed]);
    refused([opened, closed], { type: 'UpdateAccount', changes: { name: 'x' }, now }, 'notFound', /not found/);
    refused([], { type: 'CloseAccount', balance: '0', now }, 'notFound', /not found/);
  });
});
