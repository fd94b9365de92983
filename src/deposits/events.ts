/**
 * Events of a deposit that arrived without a destination (an unassigned top-up, a LOCAL_DEPOSIT payment).
 * Stream: `payment-<paymentId>`, the payment's own stream, with the id derived from the client and the
 * `externalId` `<provider>:<provider deposit id>` (`paymentIdFor`): a repeated notification finds the stream and
 * changes nothing, and no payment of the client can take the same `externalId`.
 *
 * The stream decides the deposit's own rules: it is assigned at most once, never after it expired, and it expires
 * only while no assignment is in flight. The account it is assigned to decides, on its own stream, whether it
 * takes the funds (`AccountCredited` with `fundsFrom: 'suspense'`, or `AccountCreditRefused`); the assignment's
 * process manager (./handlers.ts) joins the two with deterministic ids.
 *
 * A settled or expired deposit records the payments context's `PaymentSettled` and `PaymentExpired` (their
 * schemas are registered there), so every consumer of payment status changes follows deposits as well.
 *
 * A companion child (the difference of an under- or overpaid assignment) has a stream of its own,
 * `payment-<companionId>`, with the id derived from the deposit's `externalId` + `:difference`.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableAmountSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';
import { boundToNoClock, testClockIdProperty } from '../testClocks/events.ts';
import { unassignedDepositProperties, type PaymentSettledData } from '../ledger/events.ts';
import { paymentIdFor } from '../payments/events.ts';

export const reconciliationStatuses = ['PAID', 'UNDERPAID', 'OVERPAID'] as const;
export type ReconciliationStatus = (typeof reconciliationStatuses)[number];

/** The person or company that sent the funds, as the provider reports them. */
const originatorSchema = closed({
  firstName: textSchema,
  lastName: nullableTextSchema,
  documentType: nullableTextSchema,
  documentNumber: textSchema,
});
export type Originator = FromSchema<typeof originatorSchema>;

const depositReceivedSchema = closed({
  ...unassignedDepositProperties,
  externalId: textSchema,
  /** The provider that notified it, and its own id of the deposit (`externalId` is `<provider>:<providerDepositId>`). */
  provider: textSchema,
  providerDepositId: textSchema,
  /** The account number or CVU the payer sent the funds to; it matched no ACTIVE account of the client. */
  reference: textSchema,
  originator: originatorSchema,
  /** The originator as a customer of the client (matched on its document number, else created). */
  customerId: nullableTextSchema,
  /** 48 hours after `createdAt` (on its test clock, when bound to one): unassigned by then, the deposit expires and goes back to the originator. */
  expiresAt: instantSchema,
  ...testClockIdProperty,
}, ['testClockId']);
export type DepositReceivedData = FromSchema<typeof depositReceivedSchema>;

/** What a webhook of a deposit's purchase event needs (interface, "Purchase events"). */
const purchaseProperties = {
  paymentId: textSchema,
  clientId: textSchema,
  externalId: textSchema,
  totalAmount: amountSchema,
  currency: textSchema,
  customerId: nullableTextSchema,
  at: instantSchema,
} as const;

const assignmentTarget = {
  accountId: textSchema,
  accountNumber: textSchema,
  identityId: textSchema,
} as const;

const differenceProperties = {
  ...purchaseProperties,
  ...assignmentTarget,
  expectedAmount: amountSchema,
  /** |expected − received|, held by the companion child. */
  difference: amountSchema,
  /** The companion child payment holding the difference. */
  relatedPaymentId: textSchema,
} as const;

const companionCreatedSchema = closed({
  paymentId: textSchema,
  clientId: textSchema,
  externalId: textSchema,
  /** The deposit it completes; also its `relatedPaymentId` (the deposit points back at this child). */
  parentPaymentId: textSchema,
  kind: { type: 'string', enum: ['UNDERPAID', 'OVERPAID'] },
  /**
   * UNDERPAID: CREATED, the amount still owed by the payer to the account. OVERPAID: SETTLED, the surplus the
   * assignment already credited to the account with the rest of the deposit (no further money moves).
   */
  status: { type: 'string', enum: ['CREATED', 'SETTLED'] },
  totalAmount: amountSchema,
  currency: textSchema,
  ...assignmentTarget,
  customerId: nullableTextSchema,
  createdAt: instantSchema,
});
export type DepositCompanionCreatedData = FromSchema<typeof companionCreatedSchema>;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const depositEventSchemas = {
  DepositReceived: depositReceivedSchema,
  /** purchase.pendingAssignment: the deposit could not be matched and awaits assignment. */
  PurchasePendingAssignment: closed({ ...purchaseProperties, expiresAt: instantSchema }),
  /** The client asked to assign the deposit to its account; the account's answer is pending. */
  DepositAssignmentRequested: closed({
    paymentId: textSchema, clientId: textSchema, ...assignmentTarget, expectedAmount: nullableAmountSchema, at: instantSchema,
  }),
  /** The account refused the funds (not ACTIVE when asked): the deposit awaits assignment again. */
  DepositAssignmentRefused: closed({
    paymentId: textSchema, clientId: textSchema, accountId: textSchema, accountStatus: textSchema, at: instantSchema,
  }),
  /** Recorded with PaymentSettled: where the deposit went and how it reconciled. */
  DepositAssigned: closed({
    ...purchaseProperties, ...assignmentTarget,
    expectedAmount: amountSchema,
    reconciliationStatus: { type: 'string', enum: reconciliationStatuses },
    relatedPaymentId: nullableTextSchema,
    creditEventId: textSchema,
  }),
  PurchaseUnderpaid: closed(differenceProperties),
  PurchaseOverpaid: closed(differenceProperties),
  /**
   * Recorded with PaymentExpired: the deposit's funds (in suspense) are owed back to the originator, through the
   * refund child `refundPaymentId`.
   */
  DepositRefundDue: closed({
    ...purchaseProperties,
    refundPaymentId: textSchema,
    originator: originatorSchema,
    reference: textSchema,
  }),
  DepositCompanionCreated: companionCreatedSchema,
} as const;

type Data<K extends keyof typeof depositEventSchemas> = FromSchema<(typeof depositEventSchemas)[K]>;

/** `PaymentSettled` and `PaymentExpired` are the payments context's (registered there). */
type PaymentExpiredData = { paymentId: string; from: 'CREATED'; to: 'EXPIRED'; at: string; reason: 'EXPIRES_AT' };

export type DepositEvent =
  | { type: 'DepositReceived'; data: DepositReceivedData }
  | { type: 'PurchasePendingAssignment'; data: Data<'PurchasePendingAssignment'> }
  | { type: 'DepositAssignmentRequested'; data: Data<'DepositAssignmentRequested'> }
  | { type: 'DepositAssignmentRefused'; data: Data<'DepositAssignmentRefused'> }
  | { type: 'DepositAssigned'; data: Data<'DepositAssigned'> }
  | { type: 'PurchaseUnderpaid'; data: Data<'PurchaseUnderpaid'> }
  | { type: 'PurchaseOverpaid'; data: Data<'PurchaseOverpaid'> }
  | { type: 'DepositRefundDue'; data: Data<'DepositRefundDue'> }
  | { type: 'DepositCompanionCreated'; data: DepositCompanionCreatedData };

/** What the deposit decider appends and folds: its own events and the two payment status changes it records. */
export type DepositStreamEvent =
  | DepositEvent
  | { type: 'PaymentSettled'; data: PaymentSettledData & { from: 'CREATED'; to: 'SETTLED' } }
  | { type: 'PaymentExpired'; data: PaymentExpiredData };

export const depositEvents: ContextEvents = { schemas: depositEventSchemas, upcasters: [{ type: 'DepositReceived', fromVersion: 1, upcaster: boundToNoClock }] };

/** The `externalId` of a provider's deposit: `<provider>:<provider deposit id>`. */
export const depositExternalId = (provider: string, providerDepositId: string) => `${provider}:${providerDepositId}`;

/** The companion child of a deposit: one per deposit, whichever process creates it. */
export const companionIdFor = (clientId: string, depositExternalId: string) => paymentIdFor(clientId, `${depositExternalId}:difference`);

/** The refund child that gives an expired deposit back to its originator. */
export const refundIdFor = (clientId: string, depositExternalId: string) => paymentIdFor(clientId, `${depositExternalId}:refund`);
