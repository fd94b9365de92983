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
 * `payment-<companionId>`, with the id derived from the deposit's `externalId` + `:difference`. An OVERPAID one is
 * SETTLED from the start (its surplus came with the deposit). An UNDERPAID one holds the amount still due, CREATED,
 * and ends one of three ways, each decided on its own stream: paid by a further deposit assigned to it
 * (`DepositCompanionPaid` with the payments' `PaymentSettled`, whose `creditEventId` is the paying deposit's credit:
 * that deposit's assignment moved the money), cancelled by the client (`DepositCompanionCancelled`, CANCELLED), or
 * expired `COMPANION_LIFETIME_MS` after its creation (the payments' `PaymentExpired`). An amount still due is not
 * money the ledger holds (nothing was received for it), so cancelling or expiring it posts nothing.
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

/** How long an UNDERPAID companion (the amount still due) stays payable: 48 hours after its creation, like a deposit. */
export const COMPANION_LIFETIME_MS = 48 * 60 * 60 * 1000;

/** When a companion created at `createdAt` expires: the one rule of its time (null: an OVERPAID one, settled, never expires). */
export function companionExpiresAt(kind: 'UNDERPAID' | 'OVERPAID', createdAt: string): string | null {
  return kind === 'UNDERPAID' ? new Date(Date.parse(createdAt) + COMPANION_LIFETIME_MS).toISOString() : null;
}

export const companionStatuses = ['CREATED', 'SETTLED', 'CANCELLED', 'EXPIRED'] as const;
export type CompanionStatus = (typeof companionStatuses)[number];

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
  /** v2: when an UNDERPAID one expires unpaid (`companionExpiresAt`); null for an OVERPAID one. */
  expiresAt: { oneOf: [instantSchema, { type: 'null' }] },
  /** v2: the test clock of its deposit (its times are that clock's), when the deposit has one. */
  ...testClockIdProperty,
}, ['testClockId']);
export type DepositCompanionCreatedData = FromSchema<typeof companionCreatedSchema>;

/** v1 had no expiresAt: it is what the rule gives for its creation (48 hours later for an UNDERPAID one). */
function companionCreatedV1toV2(data: Omit<DepositCompanionCreatedData, 'expiresAt'>): DepositCompanionCreatedData {
  return { ...data, expiresAt: companionExpiresAt(data.kind, data.createdAt) };
}

/** v1 had no companionId: it paid no companion. */
function assignmentRequestedV1toV2(data: object): object {
  return { ...data, companionId: null };
}

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const depositEventSchemas = {
  DepositReceived: depositReceivedSchema,
  /** purchase.pendingAssignment: the deposit could not be matched and awaits assignment. */
  PurchasePendingAssignment: closed({ ...purchaseProperties, expiresAt: instantSchema }),
  /** The client asked to assign the deposit to its account; the account's answer is pending. */
  DepositAssignmentRequested: closed({
    paymentId: textSchema, clientId: textSchema, ...assignmentTarget, expectedAmount: nullableAmountSchema, at: instantSchema,
    /** v2: the UNDERPAID companion (of another deposit) this deposit pays, or null. */
    companionId: nullableTextSchema,
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
  /** Recorded with PaymentSettled on the companion's stream: the deposit whose assignment paid the amount still due. */
  DepositCompanionPaid: closed({ paymentId: textSchema, clientId: textSchema, depositPaymentId: textSchema, at: instantSchema }),
  /** The client cancelled the amount still due (CREATED → CANCELLED): nothing more is expected from the payer. */
  DepositCompanionCancelled: closed({
    paymentId: textSchema, clientId: textSchema, from: { type: 'string', enum: ['CREATED'] }, to: { type: 'string', enum: ['CANCELLED'] },
    at: instantSchema,
  }),
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
  | { type: 'DepositCompanionCreated'; data: DepositCompanionCreatedData }
  | { type: 'DepositCompanionPaid'; data: Data<'DepositCompanionPaid'> }
  | { type: 'DepositCompanionCancelled'; data: Data<'DepositCompanionCancelled'> };

/** What the deposit decider appends and folds: its own events and the two payment status changes it records. */
export type DepositStreamEvent =
  | DepositEvent
  | { type: 'PaymentSettled'; data: PaymentSettledData & { from: 'CREATED'; to: 'SETTLED' } }
  | { type: 'PaymentExpired'; data: PaymentExpiredData };

export type DepositEventData<T extends DepositEvent['type']> = Extract<DepositEvent, { type: T }>['data'];

export const depositEvents = {
  schemas: depositEventSchemas,
  upcasters: [
    { type: 'DepositReceived', fromVersion: 1, upcaster: boundToNoClock },
    { type: 'DepositCompanionCreated', fromVersion: 1, upcaster: companionCreatedV1toV2 },
    { type: 'DepositAssignmentRequested', fromVersion: 1, upcaster: assignmentRequestedV1toV2 },
  ],
} satisfies ContextEvents;

/** The `externalId` of a provider's deposit: `<provider>:<provider deposit id>`. */
export const depositExternalId = (provider: string, providerDepositId: string) => `${provider}:${providerDepositId}`;

/** The companion child of a deposit: one per deposit, whichever process creates it. */
export const companionIdFor = (clientId: string, depositExternalId: string) => paymentIdFor(clientId, `${depositExternalId}:difference`);

/** The refund child that gives an expired deposit back to its originator. */
export const refundIdFor = (clientId: string, depositExternalId: string) => paymentIdFor(clientId, `${depositExternalId}:refund`);
