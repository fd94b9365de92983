/**
 * The events the ledger consumes, as their producers append them. The ledger depends only on these
 * contracts, not on the producing capabilities' code. Each data type is derived from its stored schema
 * (`FromSchema`); the schemas are the ones registered for these event types (see the events section of README.md
 * before changing one).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';

/**
 * An operator's test deposit or correction of an internal account. Stream: `account-<accountId>`.
 * Appended by the accounts capability after checking `amount` against the currency's scale; the ledger
 * posts +amount to the account and −amount to `system:<currency>:adjustments`.
 */
export const accountAdjustedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  /** Signed decimal string, non-zero, at most the currency's scale in decimals (`"100.50"`, `"-3"`). */
  amount: amountSchema,
  reason: textSchema,
  /** Unique per adjustment; a retried command carrying the same id appends nothing. */
  adjustmentId: textSchema,
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  adjustedAt: instantSchema,
});
export type AccountAdjustedData = FromSchema<typeof accountAdjustedSchema>;

export const ACCOUNT_ADJUSTED = 'AccountAdjusted';

/**
 * A payment's funds credited to its destination account: the account's answer to a settlement (or, with
 * `fundsFrom: 'suspense'`, to an assignment of unassigned funds). Stream: `account-<accountId>`, decided by the
 * account from its own status. The ledger posts −totalAmount to `system:<currency>:<fundsFrom>`, +netAmount to
 * the account, +feeAmount (when not zero) to `system:<currency>:fees`; net + fee = total, all at the scale.
 */
export const accountCreditedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  paymentId: textSchema,
  fundsFrom: { type: 'string', enum: ['clearing', 'suspense'] },
  totalAmount: amountSchema,
  feeAmount: amountSchema,
  netAmount: amountSchema,
  /** The settlement batch that asked, or null (INSTANT settlement, assignment). */
  settlementBatchId: nullableTextSchema,
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  at: instantSchema,
});
export type AccountCreditedData = FromSchema<typeof accountCreditedSchema>;

/**
 * Funds set aside on an account (a refund in flight): available funds drop, the balance does not. Stream:
 * `account-<accountId>`. The ledger raises the account's `held`; no journal entry (no money moved yet).
 */
export const accountFundsHeldSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  holdId: textSchema,
  amount: amountSchema,
  reason: textSchema,
  at: instantSchema,
});
export type AccountFundsHeldData = FromSchema<typeof accountFundsHeldSchema>;

/** The end of a hold: which hold, and the amount it set aside (events differ in what the ledger does with it). */
const holdEndedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  holdId: textSchema,
  amount: amountSchema,
  at: instantSchema,
});

/** A hold given back (the refund failed): available funds rise again. The ledger lowers `held`. */
export const accountHoldReleasedSchema = holdEndedSchema;
export type AccountHoldReleasedData = FromSchema<typeof accountHoldReleasedSchema>;

/**
 * A hold spent (the refund settled): the ledger posts −amount to the account and +amount to
 * `system:<currency>:refunds_payable`, and lowers `held` by the same amount.
 */
export const accountHoldDebitedSchema = holdEndedSchema;
export type AccountHoldDebitedData = FromSchema<typeof accountHoldDebitedSchema>;

export const ACCOUNT_CREDITED = 'AccountCredited';
export const ACCOUNT_FUNDS_HELD = 'AccountFundsHeld';
export const ACCOUNT_HOLD_RELEASED = 'AccountHoldReleased';
export const ACCOUNT_HOLD_DEBITED = 'AccountHoldDebited';

/**
 * Fields every status change of a payment carries. Stream: `payment-<paymentId>`. `at` (ISO 8601) is the journal
 * entry's `occurredAt`. The payments context narrows `from` and `to` to its statuses.
 */
export const statusChangeProperties = {
  paymentId: textSchema,
  from: textSchema,
  to: textSchema,
  at: instantSchema,
} as const;

/**
 * A received payment reconciled to its destination account. Its money moved on the account's stream: the
 * account's `AccountCredited` event (`creditEventId`) is what the ledger posts. Events recorded before the
 * account stream decided credits have no `creditEventId`; for those the ledger posts this event itself:
 * −totalAmount to `system:<currency>:clearing`, +netAmount to the account, +feeAmount (when not zero) to
 * `system:<currency>:fees`. All three amounts are at the currency's scale; net + fee = total.
 */
export const paymentSettledProperties = {
  ...statusChangeProperties,
  clientId: textSchema,
  accountId: textSchema,
  currency: textSchema,
  totalAmount: amountSchema,
  feeAmount: amountSchema,
  netAmount: amountSchema,
  /** Null for INSTANT settlement; the batch's id otherwise. */
  settlementBatchId: nullableTextSchema,
  /** Id of the account's `AccountCredited` event that moved the funds; absent on events recorded before it existed. */
  creditEventId: textSchema,
} as const;
export const paymentSettledSchema = closed(paymentSettledProperties, ['creditEventId']);
export type PaymentSettledData = FromSchema<typeof paymentSettledSchema>;

export const unsettledReasons = ['ACCOUNT_NOT_ACTIVE', 'AMOUNT_MISMATCH'] as const;

/**
 * Funds the provider delivered that could not be reconciled (account not ACTIVE, amount differs). The ledger
 * parks them: −receivedAmount to clearing, +receivedAmount to `system:<currency>:suspense`.
 */
export const paymentUnsettledProperties = {
  ...statusChangeProperties,
  clientId: textSchema,
  currency: textSchema,
  receivedAmount: amountSchema,
  reason: { type: 'string', enum: unsettledReasons },
  detail: textSchema,
  settlementBatchId: nullableTextSchema,
} as const;
export const paymentUnsettledSchema = closed(paymentUnsettledProperties);
export type PaymentUnsettledData = FromSchema<typeof paymentUnsettledSchema>;

export const PAYMENT_SETTLED = 'PaymentSettled';

/**
 * A deposit the provider delivered for a reference that matched no account of its client: the funds wait
 * unassigned. Stream: `payment-<paymentId>` (the deposits context's `DepositReceived`). The ledger posts
 * −totalAmount to `system:<currency>:clearing` and +totalAmount to `system:<currency>:suspense`; an assignment
 * later moves them from suspense to the account (`AccountCredited` with `fundsFrom: 'suspense'`).
 */
export const unassignedDepositProperties = {
  paymentId: textSchema,
  clientId: textSchema,
  totalAmount: amountSchema,
  currency: textSchema,
  /** ISO 8601 timestamp; the journal entry's `occurredAt`. */
  createdAt: instantSchema,
} as const;
const unassignedDepositSchema = closed(unassignedDepositProperties);
export type UnassignedDepositData = FromSchema<typeof unassignedDepositSchema>;

export const DEPOSIT_RECEIVED = 'DepositReceived';
export const PAYMENT_UNSETTLED = 'PaymentUnsettled';


/** Where a refund's money comes from: a client's account (held at creation), or the currency's suspense account. */
export const refundFundingSources = ['ACCOUNT', 'SUSPENSE'] as const;

/**
 * Fields every status change of a refund child carries. Stream: `refund-<refundId>`. `at` (ISO 8601) is the
 * journal entry's `occurredAt`; `amount` is the refund's, at the currency's scale.
 */
export const refundTransitionProperties = {
  refundId: textSchema,
  parentPaymentId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  amount: amountSchema,
  fundingSource: { type: 'string', enum: refundFundingSources },
  /** The funding account (fundingSource ACCOUNT), else null. */
  accountId: nullableTextSchema,
  /**
   * Not the ledger's: who the refund concerns (the parent's payee identity, its email, its payer), for webhooks.
   * The identity is null when none owns the refunded money (a refund funded from suspense).
   */
  identityId: nullableTextSchema,
  identityEmail: nullableTextSchema,
  customerId: nullableTextSchema,
  from: textSchema,
  to: textSchema,
  at: instantSchema,
} as const;

/**
 * The provider paid a refund out. An ACCOUNT-funded refund's money already reached refunds payable through the
 * account's `AccountHoldDebited`; the ledger posts −amount to `system:<currency>:refunds_payable` and +amount to
 * `system:<currency>:clearing` (out to the provider). A SUSPENSE-funded one first moves the amount from
 * `system:<currency>:suspense` to refunds payable, then out the same way.
 */
export const refundSettledSchema = closed(refundTransitionProperties);
export type RefundSettledData = FromSchema<typeof refundSettledSchema>;

export const REFUND_SETTLED = 'RefundSettled';
