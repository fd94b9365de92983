/**
 * An internal account, and the ledger's write side for it (DESIGN section 8): every movement of money into or
 * out of the account is decided here, from the account's own status, balance and holds, on the same stream as
 * block and close. So a credit and a block (or a close) are ordered: a blocked or closed account is never
 * credited, an account is never closed holding money, and a debit or hold never exceeds the available funds.
 *
 * The state remembers every settlement it answered, adjustment it applied and hold it placed, so a process
 * manager that asks again (a retry, a re-run after a crash) gets the first answer back and nothing moves twice.
 * Those indexes only grow: `evolve` extends them in place rather than copying them per event (a long-lived
 * account would otherwise cost quadratic time to fold), which is safe because a folded state is used linearly:
 * once evolved, the previous state is never decided on again (the command handler owns the state it folds).
 */
import type { Decider } from '../domain/decider.ts';
import { deterministicId } from '../eventstore/deterministicId.ts';
import { domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import { formatAmount, toDecimal, zeroAmount } from '../domain/money.ts';
import type { AccountCreditedData } from '../ledger/events.ts';
import { reservationDecider } from '../domain/reservation.ts';
import { streamType } from '../eventstore/streams.ts';
import type {
  AccountCreditRefusedData, AccountEvent, AccountHoldRefusedData, AccountNumberEvent, AccountOpenedData, AccountStatus,
} from './events.ts';
import type { UpdateAccount } from '../../schemas/accounts.ts';

/** Every command acts for a tenant (src/domain/tenancy.ts): another client's account is not found. */
export type AccountCommand = (
  | { type: 'OpenAccount'; account: Omit<AccountOpenedData, 'openedAt'>; now: Date }
  | { type: 'UpdateAccount'; changes: UpdateAccount; now: Date }
  /** `amount` already canonical at the currency's scale; `adjustmentId` makes a retried command a no-op. */
  | { type: 'AdjustAccount'; amount: string; reason: string; adjustmentId: string; now: Date }
  /** Settle a payment into the account (amounts canonical; net + fee = total); answered once per payment. */
  | {
    type: 'CreditSettlement'; paymentId: string; totalAmount: string; feeAmount: string; netAmount: string;
    fundsFrom: AccountCreditedData['fundsFrom']; settlementBatchId: string | null; now: Date;
  }
  | { type: 'HoldFunds'; holdId: string; amount: string; reason: string; now: Date }
  /**
   * A hold answered once per `holdId`: held, or refused and the refusal recorded (not ACTIVE, not enough
   * available funds), so a process manager that asks again gets the first answer whatever changed since.
   */
  | { type: 'RequestHold'; holdId: string; amount: string; reason: string; now: Date }
  | { type: 'ReleaseHold'; holdId: string; now: Date }
  | { type: 'DebitHold'; holdId: string; now: Date }
  | { type: 'CloseAccount'; now: Date }
) & TenantScoped;

/** What the account answered to a settlement. */
export type SettlementAnswer =
  | { outcome: 'CREDITED'; eventId: string; data: AccountCreditedData }
  | { outcome: 'REFUSED'; eventId: string; data: AccountCreditRefusedData };

export interface Hold {
  amount: string;
  state: 'HELD' | 'RELEASED' | 'DEBITED' | 'REFUSED';
  /** Why the account refused it (state REFUSED). */
  refusal?: AccountHoldRefusedData;
}

export interface AccountState {
  account: AccountOpenedData | null;
  status: AccountStatus;
  closed: boolean;
  /** Canonical at the account's currency scale. */
  balance: string;
  /** Funds set aside by holds not yet released or debited; `balance − held` is what can leave. */
  held: string;
  /** Append-only indexes (see the module comment); null until the account is opened. */
  settlements: Map<string, SettlementAnswer> | null;
  adjustments: Set<string> | null;
  holds: Map<string, Hold> | null;
}

/** The id of the account's answer to the settlement of `paymentId`: the same whichever process asks. */
export const settlementAnswerId = (accountId: string, paymentId: string) => deterministicId('account-settlement', accountId, paymentId);

function open(state: AccountState): AccountOpenedData {
  if (!state.account || state.closed) throw domainNotFound('account not found');
  return state.account;
}

const isZero = (amount: string) => toDecimal(amount).isZero();
const add = (a: string, b: string, currency: string) => formatAmount(toDecimal(a).plus(toDecimal(b)), currency);
const sub = (a: string, b: string, currency: string) => formatAmount(toDecimal(a).minus(toDecimal(b)), currency);

/** What can leave the account now: balance less the funds on hold. */
export function availableFunds(state: AccountState): string {
  return state.account ? sub(state.balance, state.held, state.account.currency) : '0';
}

/** The id of the account's answer to `RequestHold` for `holdId`: the same whichever process asks. */
export const holdAnswerId = (accountId: string, holdId: string) => deterministicId('account-hold', accountId, holdId);

/** The account's answer to a hold it was asked for: HELD (and later RELEASED or DEBITED), REFUSED, or null. */
export function holdOf(state: AccountState, holdId: string): Hold | null {
  return state.holds?.get(holdId) ?? null;
}

export function settlementAnswerOf(state: AccountState, paymentId: string): SettlementAnswer | null {
  return state.settlements?.get(paymentId) ?? null;
}

function mustBeActive(state: AccountState, account: AccountOpenedData, what: string): void {
  if (state.status !== 'ACTIVE') throw domainPrecondition(`account ${account.accountId} is ${state.status}; it cannot ${what}`);
}

function mustHave(state: AccountState, account: AccountOpenedData, amount: string, what: string): void {
  const available = availableFunds(state);
  if (toDecimal(available).lessThan(toDecimal(amount))) {
    throw domainPrecondition(`account ${account.accountId} has ${available} ${account.currency} available; it cannot ${what} ${amount} ${account.currency}`);
  }
}

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> = {
  initialState: { account: null, status: 'ACTIVE', closed: false, balance: '0', held: '0', settlements: null, adjustments: null, holds: null },

  // Long as a switch with one case per command of the account stream: the state machine reads whole in one place.
  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.account?.clientId ?? null, 'account not found');
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
        if (state.adjustments!.has(command.adjustmentId)) return [];
        if (isZero(command.amount)) throw domainPrecondition('an adjustment of zero moves nothing');
        const debit = toDecimal(command.amount).isNegative();
        // A blocked account receives nothing; a correction may still take money out of it.
        if (!debit) mustBeActive(state, account, 'receive funds');
        else mustHave(state, account, command.amount.slice(1), 'be debited');
        return [{ type: 'AccountAdjusted', data: { accountId: account.accountId, clientId: account.clientId,
          currency: account.currency, amount: command.amount, reason: command.reason, adjustmentId: command.adjustmentId, adjustedAt: at } }];
      }
      case 'CreditSettlement': {
        const account = state.account;
        if (!account) throw domainNotFound('account not found');
        if (state.settlements!.has(command.paymentId)) return [];
        if (!toDecimal(command.netAmount).plus(toDecimal(command.feeAmount)).equals(toDecimal(command.totalAmount))) {
          throw domainInvalid(`settlement of payment ${command.paymentId}: net ${command.netAmount} + fee ${command.feeAmount} is not ${command.totalAmount}`);
        }
        const id = settlementAnswerId(account.accountId, command.paymentId);
        const base = { accountId: account.accountId, clientId: account.clientId, paymentId: command.paymentId,
          settlementBatchId: command.settlementBatchId, at };
        if (state.closed || state.status !== 'ACTIVE') {
          return [{ type: 'AccountCreditRefused', id, data: { ...base, reason: 'ACCOUNT_NOT_ACTIVE', status: state.closed ? 'CLOSED' : state.status } }];
        }
        return [{ type: 'AccountCredited', id, data: { ...base, currency: account.currency, fundsFrom: command.fundsFrom,
          totalAmount: command.totalAmount, feeAmount: command.feeAmount, netAmount: command.netAmount } }];
      }
      case 'HoldFunds': {
        const account = open(state);
        if (state.holds!.has(command.holdId)) return [];
        if (!toDecimal(command.amount).greaterThan(0)) throw domainInvalid(`a hold must be positive, not ${command.amount}`);
        mustBeActive(state, account, 'pay out');
        mustHave(state, account, command.amount, 'hold');
        return [{ type: 'AccountFundsHeld', data: { accountId: account.accountId, clientId: account.clientId, currency: account.currency,
          holdId: command.holdId, amount: command.amount, reason: command.reason, at } }];
      }
      case 'RequestHold': {
        const account = state.account;
        if (!account) throw domainNotFound('account not found');
        if (state.holds!.has(command.holdId)) return [];
        if (!toDecimal(command.amount).greaterThan(0)) throw domainInvalid(`a hold must be positive, not ${command.amount}`);
        const id = holdAnswerId(account.accountId, command.holdId);
        const base = { accountId: account.accountId, clientId: account.clientId, currency: account.currency, holdId: command.holdId,
          amount: command.amount, at };
        const available = availableFunds(state);
        if (state.closed || state.status !== 'ACTIVE') {
          return [{ type: 'AccountHoldRefused', id, data: { ...base, refusal: 'ACCOUNT_NOT_ACTIVE', status: state.closed ? 'CLOSED' : state.status, availableFunds: available } }];
        }
        if (toDecimal(available).lessThan(toDecimal(command.amount))) {
          return [{ type: 'AccountHoldRefused', id, data: { ...base, refusal: 'INSUFFICIENT_FUNDS', status: state.status, availableFunds: available } }];
        }
        return [{ type: 'AccountFundsHeld', id, data: { ...base, reason: command.reason } }];
      }
      case 'ReleaseHold':
      case 'DebitHold': {
        const account = state.account;
        if (!account) throw domainNotFound('account not found');
        const hold = state.holds!.get(command.holdId);
        if (!hold) throw domainNotFound(`account ${account.accountId} has no hold ${command.holdId}`);
        const done = command.type === 'ReleaseHold' ? 'RELEASED' : 'DEBITED';
        if (hold.state === done) return [];
        if (hold.state !== 'HELD') throw domainPrecondition(`hold ${command.holdId} on account ${account.accountId} is already ${hold.state}`);
        const data = { accountId: account.accountId, clientId: account.clientId, currency: account.currency, holdId: command.holdId, amount: hold.amount, at };
        return [command.type === 'ReleaseHold' ? { type: 'AccountHoldReleased', data } : { type: 'AccountHoldDebited', data }];
      }
      case 'CloseAccount': {
        const { accountId, currency } = open(state);
        if (!isZero(state.balance) || !isZero(state.held)) {
          throw domainPrecondition(`account ${accountId} holds ${state.balance} ${currency}` +
            `${isZero(state.held) ? '' : ` (${state.held} on hold)`}; only an account with zero balance can be deleted`);
        }
        return [{ type: 'AccountClosed', data: { accountId, closedAt: at } }];
      }
    }
  },

  evolve(state, event) {
    const currency = state.account?.currency ?? 'USD';
    switch (event.type) {
      case 'AccountOpened':
        return { ...state, account: event.data, status: 'ACTIVE', balance: zeroAmount(event.data.currency), held: zeroAmount(event.data.currency),
          settlements: new Map(), adjustments: new Set(), holds: new Map() };
      case 'AccountUpdated':
        return state.account ? { ...state, account: { ...state.account, ...event.data.changes } } : state;
      case 'AccountStatusChanged':
        return { ...state, status: event.data.to };
      case 'AccountAdjusted':
        state.adjustments?.add(event.data.adjustmentId);
        return { ...state, balance: add(state.balance, event.data.amount, currency) };
      case 'AccountCredited':
        state.settlements?.set(event.data.paymentId, { outcome: 'CREDITED', eventId: settlementAnswerId(event.data.accountId, event.data.paymentId), data: event.data });
        return { ...state, balance: add(state.balance, event.data.netAmount, currency) };
      case 'AccountCreditRefused':
        state.settlements?.set(event.data.paymentId, { outcome: 'REFUSED', eventId: settlementAnswerId(event.data.accountId, event.data.paymentId), data: event.data });
        return state;
      case 'AccountFundsHeld':
        state.holds?.set(event.data.holdId, { amount: event.data.amount, state: 'HELD' });
        return { ...state, held: add(state.held, event.data.amount, currency) };
      case 'AccountHoldRefused':
        state.holds?.set(event.data.holdId, { amount: event.data.amount, state: 'REFUSED', refusal: event.data });
        return state;
      case 'AccountHoldReleased':
        state.holds?.set(event.data.holdId, { amount: event.data.amount, state: 'RELEASED' });
        return { ...state, held: sub(state.held, event.data.amount, currency) };
      case 'AccountHoldDebited':
        state.holds?.set(event.data.holdId, { amount: event.data.amount, state: 'DEBITED' });
        return { ...state, balance: sub(state.balance, event.data.amount, currency), held: sub(state.held, event.data.amount, currency) };
      case 'AccountClosed':
        return { ...state, closed: true };
    }
  },
};

/** An account number, held for ever by the account it was reserved for (`account-number-<number>`). */
export const accountNumberDecider = reservationDecider<string, AccountNumberEvent>({
  claimed: (accountNumber, accountId) => ({ type: 'AccountNumberReserved', data: { accountNumber, accountId } }),
  released: null,
  read: (event) => ({ claimedBy: event.data.accountId }),
  taken: (accountNumber, accountId) => `account number ${accountNumber} belongs to account ${accountId}`,
});

/** `account-<accountId>`; a request waits for the read models after its own changes, not after a flow's steps. */
export const accountStreamType = streamType('account-', { decider: accountDecider, readModels: {
  OpenAccount: 'written', UpdateAccount: 'written', CloseAccount: 'written', AdjustAccount: 'written',
  // Steps of the settlement, assignment and refund flows, which wait once at their end.
  CreditSettlement: 'none', HoldFunds: 'none', RequestHold: 'none', ReleaseHold: 'none', DebitHold: 'none',
} });

/** `account-number-<number>`: reserved before the account opens, which is what a request waits for. */
export const accountNumberStreamType = streamType('account-number-', { decider: accountNumberDecider, readModels: {
  ClaimKey: 'none', ReleaseKey: 'none',
} });
