/**
 * Events of refunds (README, "Refunds"). Two kinds of stream take part:
 *
 * - the parent payment's stream (`payment-<paymentId>`) decides the ceiling: a request reserves its amount
 *   against what is left to refund (`PaymentRefundRequested`, appended with the parent's expected revision), the
 *   funding account's answer is recorded there (`PaymentRefundAccepted` / `PaymentRefundRefused`, the latter
 *   giving the reservation back), and so is the child's end (`PaymentRefundSettled`, or `PaymentRefundReleased`
 *   giving the reservation back);
 * - the refund child's own stream (`refund-<refundId>`) decides its lifecycle: RECEIVED → SETTLED | FAILED |
 *   UNSETTLED | EXPIRED, each move once.
 *
 * The funds are decided by the funding account's stream (src/accounts: a hold per refund, debited or released).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableTextSchema, textSchema } from '../../../schemas/events/common.ts';
import type { ContextEvents } from '../../eventstore/upcasting.ts';
import { refundSettledSchema, refundTransitionProperties, type RefundSettledData } from '../../ledger/events.ts';

export const refundStatuses = ['RECEIVED', 'SETTLED', 'FAILED', 'UNSETTLED', 'EXPIRED'] as const;
export type RefundStatus = (typeof refundStatuses)[number];
/** The ends of a refund child; RECEIVED is the only status it moves from. */
export type RefundOutcome = Exclude<RefundStatus, 'RECEIVED'>;

/**
 * Where the refund's money comes from. ACCOUNT: the parent's destination account, which holds the amount at
 * creation (available funds drop) and pays it out at settlement. SUSPENSE: the currency's suspense account
 * (funds that reached no account, such as an expired unassigned deposit); no account is asked.
 */
const fundingSchema = {
  oneOf: [
    closed({ source: { type: 'string', const: 'ACCOUNT' }, accountId: textSchema, holdId: textSchema }),
    closed({ source: { type: 'string', const: 'SUSPENSE' } }),
  ],
} as const;

/** A refund child, as created: status RECEIVED (the provider accepted it). */
const refundCreatedSchema = closed({
  refundId: textSchema,
  parentPaymentId: textSchema,
  clientId: textSchema,
  /**
   * The parent's payee identity and its email, and its payer: what webhook payloads of the child carry. The
   * identity is null when no identity owns the refunded money (an expired deposit's refund to its originator,
   * which never reached an account). Version 1 wrote '' there; its upcaster reads that as null.
   */
  identityId: nullableTextSchema,
  identityEmail: nullableTextSchema,
  customerId: nullableTextSchema,
  totalAmount: amountSchema,
  currency: textSchema,
  /** The reason given with the request, or null. */
  description: nullableTextSchema,
  funding: fundingSchema,
  createdAt: instantSchema,
});
export type RefundCreatedData = FromSchema<typeof refundCreatedSchema>;

const refundEndedSchema = closed({ ...refundTransitionProperties, reason: textSchema });

const parentRefundProperties = { paymentId: textSchema, refundId: textSchema, amount: amountSchema, at: instantSchema } as const;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const refundEventSchemas = {
  // On the parent payment's stream.
  PaymentRefundRequested: closed({ ...parentRefundProperties, clientId: textSchema, currency: textSchema, description: nullableTextSchema }),
  PaymentRefundAccepted: closed(parentRefundProperties),
  PaymentRefundRefused: closed({
    ...parentRefundProperties,
    refusal: { type: 'string', enum: ['ACCOUNT_NOT_ACTIVE', 'INSUFFICIENT_FUNDS'] },
    detail: textSchema,
  }),
  PaymentRefundSettled: closed(parentRefundProperties),
  PaymentRefundReleased: closed({ ...parentRefundProperties, outcome: { type: 'string', enum: ['FAILED', 'UNSETTLED', 'EXPIRED'] } }),
  // On the refund child's stream.
  RefundCreated: refundCreatedSchema,
  RefundSettled: refundSettledSchema,
  RefundFailed: refundEndedSchema,
  RefundUnsettled: refundEndedSchema,
  RefundExpired: refundEndedSchema,
} as const;

type Data<K extends keyof typeof refundEventSchemas> = FromSchema<(typeof refundEventSchemas)[K]>;

/** Refund events on the parent payment's stream. */
export type ParentRefundEvent =
  /** A refund of `amount` asked for: reserved against what is left to refund. */
  | { type: 'PaymentRefundRequested'; data: Data<'PaymentRefundRequested'> }
  /** The funding account holds the amount: the child exists (or is being created). */
  | { type: 'PaymentRefundAccepted'; data: Data<'PaymentRefundAccepted'> }
  /** The funding account refused the hold: the reservation is given back. */
  | { type: 'PaymentRefundRefused'; data: Data<'PaymentRefundRefused'> }
  /** The child settled: the amount is refunded for good (the parent's `refundedAt`). */
  | { type: 'PaymentRefundSettled'; data: Data<'PaymentRefundSettled'> }
  /** The child failed, could not be reconciled or expired: the reservation is given back. */
  | { type: 'PaymentRefundReleased'; data: Data<'PaymentRefundReleased'> };

/** The refund events a parent's stream holds (a payment's, or a settled deposit's), beside its own. */
export const PARENT_REFUND_EVENT_TYPES = [
  'PaymentRefundRequested', 'PaymentRefundAccepted', 'PaymentRefundRefused', 'PaymentRefundSettled', 'PaymentRefundReleased',
] as const satisfies readonly ParentRefundEvent['type'][];

/** Events of a refund child's own stream. */
export type RefundEvent =
  | { type: 'RefundCreated'; data: RefundCreatedData }
  | { type: 'RefundSettled'; data: RefundSettledData }
  | { type: 'RefundFailed'; data: Data<'RefundFailed'> }
  | { type: 'RefundUnsettled'; data: Data<'RefundUnsettled'> }
  | { type: 'RefundExpired'; data: Data<'RefundExpired'> };

export type RefundEventData<T extends RefundEvent['type']> = Extract<RefundEvent, { type: T }>['data'];

/**
 * Version 1 of the child's events stored `identityId: ''` for a refund no identity owns (funded from suspense);
 * version 2 stores null. The same step for each type that carries it.
 */
const identityIdNullable = (data: { identityId: string | null }) => ({ ...data, identityId: data.identityId === '' ? null : data.identityId });
const CHILD_EVENT_TYPES = ['RefundCreated', 'RefundSettled', 'RefundFailed', 'RefundUnsettled', 'RefundExpired'] as const satisfies readonly RefundEvent['type'][];

export const refundEvents = {
  schemas: refundEventSchemas,
  upcasters: CHILD_EVENT_TYPES.map((type) => ({ type, fromVersion: 1, upcaster: identityIdNullable })),
} satisfies ContextEvents;

export const refundStream = (refundId: string) => `refund-${refundId}`;

/** The child event type recording each outcome. */
export const OUTCOME_EVENTS = {
  SETTLED: 'RefundSettled', FAILED: 'RefundFailed', UNSETTLED: 'RefundUnsettled', EXPIRED: 'RefundExpired',
} as const satisfies Record<RefundOutcome, RefundEvent['type']>;
