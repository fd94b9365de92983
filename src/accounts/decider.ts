import type { Decider } from '../domain/decider.ts';
import { domainConflict, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import type { AccountEvent, AccountOpenedData, AccountStatus } from './events.ts';
import type { UpdateAccount } from '../../schemas/accounts.ts';

export type AccountCommand =
  | { type: 'OpenAccount'; account: Omit<AccountOpenedData, 'openedAt'>; now: Date }
  | { type: 'UpdateAccount'; changes: UpdateAccount; now: Date }
  /** `amount` already checked against the currency's scale; `adjustmentId` makes a retried command a no-op. */
  | { type: 'AdjustAccount'; amount: string; reason: string; adjustmentId: string; now: Date }
  /** `balance` from the ledger: an account holding funds cannot close. */
  | { type: 'CloseAccount'; balance: string; now: Date };

export interface AccountState {
  account: AccountOpenedData | null;
  status: AccountStatus;
  closed: boolean;
  adjustments: ReadonlySet<string>;
}

function open(state: AccountState): AccountOpenedData {
  if (!state.account || state.closed) throw domainNotFound('account not found');
  return state.account;
}

const isZero = (amount: string) => /^-?0+(\.0+)?$/.test(amount);

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> = {
  initialState: { account: null, status: 'ACTIVE', closed: false, adjustments: new Set() },

  decide(command, state) {
    const at = command.now.toISOString();
    switch (command.type) {
      case 'OpenAccount':
        if (state.account) throw domainConflict(`account ${command.account.accountId} already exists`);
        return [{ type: 'AccountOpened', data: { ...command.account, openedAt: at } }];
      case 'UpdateAccount': {
        const { accountId } = open(state);
        const { status, ...changes } = command.changes;
        const events: AccountEvent[] = [];
        if (Object.keys(changes).length > 0) events.push({ type: 'AccountUpdated', data: { accountId, changes, updatedAt: at } });
        if (status && status !== state.status) {
          events.push({ type: 'AccountStatusChanged', data: { accountId, from: state.status, to: status, changedAt: at } });
        }
        return events;
      }
      case 'AdjustAccount': {
        const account = open(state);
        if (state.adjustments.has(command.adjustmentId)) return [];
        if (isZero(command.amount)) throw domainPrecondition('an adjustment of zero moves nothing');
        return [{ type: 'AccountAdjusted', data: { accountId: account.accountId, clientId: account.clientId,
          currency: account.currency, amount: command.amount, reason: command.reason, adjustmentId: command.adjustmentId, adjustedAt: at } }];
      }
      case 'CloseAccount': {
        const { accountId } = open(state);
        if (!isZero(command.balance)) {
          throw domainPrecondition(`account ${accountId} holds ${command.balance}; only an account with zero balance can be deleted`);
        }
        return [{ type: 'AccountClosed', data: { accountId, closedAt: at } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'AccountOpened':
        return { ...state, account: event.data, status: 'ACTIVE' };
      case 'AccountUpdated':
        return state.account ? { ...state, account: { ...state.account, ...event.data.changes } } : state;
      case 'AccountStatusChanged':
        return { ...state, status: event.data.to };
      case 'AccountAdjusted':
        return { ...state, adjustments: new Set([...state.adjustments, event.data.adjustmentId]) };
      case 'AccountClosed':
        return { ...state, closed: true };
    }
  },
};
