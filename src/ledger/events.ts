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

/** Every event type the ledger turns into journal entries. */
export type LedgerSourceEvent = AccountAdjusted;
