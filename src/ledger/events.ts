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

export interface AccountAdjusted {
  type: typeof ACCOUNT_ADJUSTED;
  data: AccountAdjustedData;
}

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
 * A received payment reconciled to its destination account. The ledger posts −totalAmount to
 * `system:<currency>:clearing` (the provider owes it), +netAmount to the account, +feeAmount (when not zero)
 * to `system:<currency>:fees`. All three amounts are at the currency's scale; net + fee = total.
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

/** Every event type the ledger turns into journal entries. */
export type LedgerSourceEvent =
  | AccountAdjusted
  | { type: typeof PAYMENT_SETTLED; data: PaymentSettledData }
  | { type: typeof PAYMENT_UNSETTLED; data: PaymentUnsettledData };
