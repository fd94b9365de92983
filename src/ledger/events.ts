/**
 * The events the ledger consumes, as their producers append them. The ledger depends only on these
 * contracts, not on the producing capabilities' code.
 */

/**
 * An operator's test deposit or correction of an internal account. Stream: `account-<accountId>`.
 * Appended by the accounts capability after checking `amount` against the currency's scale; the ledger
 * posts +amount to the account and −amount to `system:<currency>:adjustments`.
 */
export interface AccountAdjustedData {
  accountId: string;
  clientId: string;
  currency: string;
  /** Signed decimal string, non-zero, at most the currency's scale in decimals (`"100.50"`, `"-3"`). */
  amount: string;
  reason: string;
  /** Unique per adjustment; a retried command carrying the same id appends nothing. */
  adjustmentId: string;
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  adjustedAt: string;
}

export const ACCOUNT_ADJUSTED = 'AccountAdjusted';

/**
 * A payment's funds credited to its destination account: the account's answer to a settlement (or, with
 * `fundsFrom: 'suspense'`, to an assignment of unassigned funds). Stream: `account-<accountId>`, decided by the
 * account from its own status. The ledger posts −totalAmount to `system:<currency>:<fundsFrom>`, +netAmount to
 * the account, +feeAmount (when not zero) to `system:<currency>:fees`; net + fee = total, all at the scale.
 */
export interface AccountCreditedData {
  accountId: string;
  clientId: string;
  currency: string;
  paymentId: string;
  fundsFrom: 'clearing' | 'suspense';
  totalAmount: string;
  feeAmount: string;
  netAmount: string;
  /** The settlement batch that asked, or null (INSTANT settlement, assignment). */
  settlementBatchId: string | null;
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  at: string;
}

/**
 * Funds set aside on an account (a refund in flight): available funds drop, the balance does not. Stream:
 * `account-<accountId>`. The ledger raises the account's `held`; no journal entry (no money moved yet).
 */
export interface AccountFundsHeldData {
  accountId: string;
  clientId: string;
  currency: string;
  holdId: string;
  amount: string;
  reason: string;
  at: string;
}

/** A hold given back (the refund failed): available funds rise again. The ledger lowers `held`. */
export interface AccountHoldReleasedData {
  accountId: string;
  clientId: string;
  currency: string;
  holdId: string;
  amount: string;
  at: string;
}

/**
 * A hold spent (the refund settled): the ledger posts −amount to the account and +amount to
 * `system:<currency>:refunds_payable`, and lowers `held` by the same amount.
 */
export interface AccountHoldDebitedData {
  accountId: string;
  clientId: string;
  currency: string;
  holdId: string;
  amount: string;
  at: string;
}

export const ACCOUNT_CREDITED = 'AccountCredited';
export const ACCOUNT_FUNDS_HELD = 'AccountFundsHeld';
export const ACCOUNT_HOLD_RELEASED = 'AccountHoldReleased';
export const ACCOUNT_HOLD_DEBITED = 'AccountHoldDebited';

/** Fields every status change of a payment carries. Stream: `payment-<paymentId>`. */
export interface PaymentStatusChange<Status extends string = string> {
  paymentId: string;
  from: Status;
  to: Status;
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  at: string;
}

export type UnsettledReason = 'ACCOUNT_NOT_ACTIVE' | 'AMOUNT_MISMATCH';

/**
 * A received payment reconciled to its destination account. Its money moved on the account's stream: the
 * account's `AccountCredited` event (`creditEventId`) is what the ledger posts. Events recorded before the
 * account stream decided credits have no `creditEventId`; for those the ledger posts this event itself:
 * −totalAmount to `system:<currency>:clearing`, +netAmount to the account, +feeAmount (when not zero) to
 * `system:<currency>:fees`. All three amounts are at the currency's scale; net + fee = total.
 */
export interface PaymentSettledData extends PaymentStatusChange {
  clientId: string;
  accountId: string;
  currency: string;
  totalAmount: string;
  feeAmount: string;
  netAmount: string;
  /** Null for INSTANT settlement; the batch's id otherwise. */
  settlementBatchId: string | null;
  /** Id of the account's `AccountCredited` event that moved the funds; absent on events of earlier versions. */
  creditEventId?: string;
}

/**
 * Funds the provider delivered that could not be reconciled (account not ACTIVE, amount differs). The ledger
 * parks them: −receivedAmount to clearing, +receivedAmount to `system:<currency>:suspense`.
 */
export interface PaymentUnsettledData extends PaymentStatusChange {
  clientId: string;
  currency: string;
  receivedAmount: string;
  reason: UnsettledReason;
  detail: string;
  settlementBatchId: string | null;
}

export const PAYMENT_SETTLED = 'PaymentSettled';
export const PAYMENT_UNSETTLED = 'PaymentUnsettled';

