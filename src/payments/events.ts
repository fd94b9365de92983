/**
 * Events of a payment. Stream: `payment-<paymentId>`, where the id is derived from the client and its
 * `externalId` (`paymentIdFor`): appending the first event with `no_stream` is what makes `externalId` unique
 * per client, in the same single round trip that records the payment.
 *
 * Every event that changes the status carries `from` and `to`, so read models and the webhook outbox follow
 * transitions without re-deriving the state machine.
 */
import type { FromSchema } from 'json-schema-to-ts';
import {
  amountSchema, closed, instantSchema, nullableAmountSchema, nullableTextSchema, textSchema,
} from '../../schemas/events/common.ts';
import { deterministicId } from '../eventstore/deterministicId.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';
import { boundToNoClock, testClockIdProperty } from '../testClocks/events.ts';
import { paymentSettledProperties, paymentUnsettledProperties } from '../ledger/events.ts';
import { nodesMaskedAsNow, storedPaymentNodeSchema } from './events/nodes.ts';

export const paymentStatuses = [
  'CREATED', 'PENDING', 'ATTEMPT', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'EXPIRED', 'UNSETTLED',
  'REQUIRES_REVIEW', 'FAILED', 'REFUNDED',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];
const paymentStatusSchema = { type: 'string', enum: paymentStatuses } as const;

/** No move leaves these. */
export const TERMINAL_STATUSES: ReadonlySet<PaymentStatus> = new Set(['SETTLED', 'UNSETTLED', 'EXPIRED', 'FAILED']);

/**
 * How the money arrives. CARD: the platform authorizes, captures, then receives. PUSH: the payer pushes the
 * funds (PIX, SPEI, CVU, a bank transfer, or no method named); the payment waits, then a signed notification
 * receives it.
 */
export type PaymentFlow = 'CARD' | 'PUSH';

export const settlementPeriodValues = ['INSTANT', 'T+1', 'T+2'] as const;
export type SettlementPeriod = (typeof settlementPeriodValues)[number];

const paymentFeeSchema = closed({
  name: textSchema,
  type: { type: 'string', enum: ['FIXED', 'PERCENTAGE'] },
  /** The catalog's rate (percent) or fixed amount. */
  value: amountSchema,
  /** What is charged, in the payment's currency, at its scale. */
  amount: amountSchema,
  currency: textSchema,
});
export type PaymentFee = FromSchema<typeof paymentFeeSchema>;

const paymentExchangeSchema = closed({
  /** `FROM:TO` catalog product, e.g. `CLP:USDC`. */
  product: textSchema,
  /** How many `purchaseCurrency` one `currency` buys. */
  rate: amountSchema,
  /** The purchase amount at the catalog rate (what `purchaseAmount` would be without a merchant's quote). */
  marketValue: amountSchema,
  quotedAt: instantSchema,
  /** A quote is only good until then; a payment not received by this time expires. */
  quoteExpiresAt: instantSchema,
});
export type PaymentExchange = FromSchema<typeof paymentExchangeSchema>;

const paymentCreatedSchema = closed({
  paymentId: textSchema,
  clientId: textSchema,
  externalId: textSchema,
  identityId: textSchema,
  identityExternalId: nullableTextSchema,
  identityEmail: nullableTextSchema,
  accountId: textSchema,
  accountNumber: textSchema,
  totalAmount: amountSchema,
  currency: textSchema,
  description: nullableTextSchema,
  product: nullableTextSchema,
  type: textSchema,
  purchaseAmount: nullableAmountSchema,
  purchaseCurrency: nullableTextSchema,
  exchange: { oneOf: [paymentExchangeSchema, { type: 'null' }] },
  origins: { type: 'array', items: storedPaymentNodeSchema },
  destinations: { type: 'array', items: storedPaymentNodeSchema },
  fees: { type: 'array', items: paymentFeeSchema },
  /** Sum of `fees`, in `currency`; settlement credits the account `totalAmount − feeAmount`. */
  feeAmount: amountSchema,
  flow: { type: 'string', enum: ['CARD', 'PUSH'] },
  /** The pay-in method (first origin's type), or null when the payment names none. */
  method: nullableTextSchema,
  settlement: { type: 'string', enum: settlementPeriodValues },
  expiresAt: { type: ['string', 'null'], format: 'date-time' },
  customerId: nullableTextSchema,
  checkoutSessionId: nullableTextSchema,
  createdAt: instantSchema,
  ...testClockIdProperty,
}, ['testClockId']);
export type PaymentCreatedData = FromSchema<typeof paymentCreatedSchema>;

export const expiryReasons = ['EXPIRES_AT', 'QUOTE_EXPIRED'] as const;
export type ExpiryReason = (typeof expiryReasons)[number];

const paymentDocumentSchema = closed({
  documentId: textSchema,
  type: textSchema,
  url: nullableTextSchema,
  contentType: nullableTextSchema,
  attachedAt: instantSchema,
});
export type PaymentDocument = FromSchema<typeof paymentDocumentSchema>;

/** Every event that changes the status: the ledger's status change fields, with this context's statuses. */
const transitionProperties = { paymentId: textSchema, from: paymentStatusSchema, to: paymentStatusSchema, at: instantSchema } as const;
const transitionSchema = closed(transitionProperties);

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const paymentEventSchemas = {
  PaymentCreated: paymentCreatedSchema,
  PaymentPending: transitionSchema,
  PaymentAuthorized: transitionSchema,
  PaymentCaptured: transitionSchema,
  PaymentReceived: closed({ ...transitionProperties, receivedAmount: amountSchema, currency: textSchema }),
  PaymentSettled: closed({ ...paymentSettledProperties, ...transitionProperties }, ['creditEventId']),
  PaymentUnsettled: closed({ ...paymentUnsettledProperties, ...transitionProperties }),
  PaymentExpired: closed({ ...transitionProperties, reason: { type: 'string', enum: expiryReasons } }),
  PaymentFailed: closed({ ...transitionProperties, reason: textSchema }),
  PaymentReviewRequired: closed({ ...transitionProperties, reason: textSchema }),
  PaymentReviewApproved: closed({ ...transitionProperties, actor: textSchema }),
  PaymentReviewRejected: closed({ ...transitionProperties, actor: textSchema }),
  PaymentDocumentAttached: closed({ paymentId: textSchema, document: paymentDocumentSchema }),
} as const;

type Data<K extends keyof typeof paymentEventSchemas> = FromSchema<(typeof paymentEventSchemas)[K]>;

export type PaymentEvent =
  | { type: 'PaymentCreated'; data: PaymentCreatedData }
  /** The payer has to act (redirect, QR, transfer); the provider is waiting for the funds. */
  | { type: 'PaymentPending'; data: Data<'PaymentPending'> }
  | { type: 'PaymentAuthorized'; data: Data<'PaymentAuthorized'> }
  | { type: 'PaymentCaptured'; data: Data<'PaymentCaptured'> }
  | { type: 'PaymentReceived'; data: Data<'PaymentReceived'> }
  | { type: 'PaymentSettled'; data: Data<'PaymentSettled'> }
  | { type: 'PaymentUnsettled'; data: Data<'PaymentUnsettled'> }
  | { type: 'PaymentExpired'; data: Data<'PaymentExpired'> }
  | { type: 'PaymentFailed'; data: Data<'PaymentFailed'> }
  | { type: 'PaymentReviewRequired'; data: Data<'PaymentReviewRequired'> }
  | { type: 'PaymentReviewApproved'; data: Data<'PaymentReviewApproved'> }
  | { type: 'PaymentReviewRejected'; data: Data<'PaymentReviewRejected'> }
  | { type: 'PaymentDocumentAttached'; data: Data<'PaymentDocumentAttached'> };

export type PaymentEventType = PaymentEvent['type'];
export type PaymentEventData<T extends PaymentEventType> = Extract<PaymentEvent, { type: T }>['data'];

export const paymentEvents = {
  schemas: paymentEventSchemas,
  upcasters: [
    { type: 'PaymentCreated', fromVersion: 1, upcaster: nodesMaskedAsNow },
    { type: 'PaymentCreated', fromVersion: 2, upcaster: boundToNoClock },
  ],
} satisfies ContextEvents;

export const paymentStream = (paymentId: string) => `payment-${paymentId}`;

/** The one id a client's `externalId` can ever have. */
export const paymentIdFor = (clientId: string, externalId: string) => deterministicId('payment', clientId, externalId);
