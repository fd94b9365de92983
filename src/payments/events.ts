/**
 * Events of a payment. Stream: `payment-<paymentId>`, where the id is derived from the client and its
 * `externalId` (`paymentIdFor`): appending the first event with `no_stream` is what makes `externalId` unique
 * per client, in the same single round trip that records the payment.
 *
 * Every event that changes the status carries `from` and `to`, so read models and the webhook outbox follow
 * transitions without re-deriving the state machine.
 */
import { deterministicId } from '../eventstore/deterministicId.ts';
import type { PaymentNode } from '../../schemas/paymentNodes.ts';
import type { PaymentSettledData, PaymentStatusChange, PaymentUnsettledData } from '../ledger/events.ts';

export type { PaymentSettledData, PaymentUnsettledData };

export const paymentStatuses = [
  'CREATED', 'PENDING', 'ATTEMPT', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'EXPIRED', 'UNSETTLED',
  'REQUIRES_REVIEW', 'FAILED', 'REFUNDED',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/** No move leaves these. */
export const TERMINAL_STATUSES: ReadonlySet<PaymentStatus> = new Set(['SETTLED', 'UNSETTLED', 'EXPIRED', 'FAILED']);

/**
 * How the money arrives. CARD: the platform authorizes, captures, then receives. PUSH: the payer pushes the
 * funds (PIX, SPEI, CVU, a bank transfer, or no method named); the payment waits, then a signed notification
 * receives it.
 */
export type PaymentFlow = 'CARD' | 'PUSH';

export type SettlementPeriod = 'INSTANT' | 'T+1' | 'T+2';

export interface PaymentFee {
  name: string;
  type: 'FIXED' | 'PERCENTAGE';
  /** The catalog's rate (percent) or fixed amount. */
  value: string;
  /** What is charged, in the payment's currency, at its scale. */
  amount: string;
  currency: string;
}

export interface PaymentExchange {
  /** `FROM:TO` catalog product, e.g. `CLP:USDC`. */
  product: string;
  /** How many `purchaseCurrency` one `currency` buys. */
  rate: string;
  /** The purchase amount at the catalog rate (what `purchaseAmount` would be without a merchant's quote). */
  marketValue: string;
  quotedAt: string;
  /** A quote is only good until then; a payment not received by this time expires. */
  quoteExpiresAt: string;
}

export interface PaymentCreatedData {
  paymentId: string;
  clientId: string;
  externalId: string;
  identityId: string;
  identityExternalId: string | null;
  identityEmail: string | null;
  accountId: string;
  accountNumber: string;
  totalAmount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  purchaseAmount: string | null;
  purchaseCurrency: string | null;
  exchange: PaymentExchange | null;
  origins: PaymentNode[];
  destinations: PaymentNode[];
  fees: PaymentFee[];
  /** Sum of `fees`, in `currency`; settlement credits the account `totalAmount − feeAmount`. */
  feeAmount: string;
  flow: PaymentFlow;
  /** The pay-in method (first origin's type), or null when the payment names none. */
  method: string | null;
  settlement: SettlementPeriod;
  expiresAt: string | null;
  customerId: string | null;
  checkoutSessionId: string | null;
  createdAt: string;
}

type Transition = PaymentStatusChange<PaymentStatus>;

export type ExpiryReason = 'EXPIRES_AT' | 'QUOTE_EXPIRED';

export interface PaymentDocument {
  documentId: string;
  type: string;
  url: string | null;
  contentType: string | null;
  attachedAt: string;
}

export type PaymentEvent =
  | { type: 'PaymentCreated'; data: PaymentCreatedData }
  /** The payer has to act (redirect, QR, transfer); the provider is waiting for the funds. */
  | { type: 'PaymentPending'; data: Transition }
  | { type: 'PaymentAuthorized'; data: Transition }
  | { type: 'PaymentCaptured'; data: Transition }
  | { type: 'PaymentReceived'; data: Transition & { receivedAmount: string; currency: string } }
  | { type: 'PaymentSettled'; data: PaymentSettledData & Transition }
  | { type: 'PaymentUnsettled'; data: PaymentUnsettledData & Transition }
  | { type: 'PaymentExpired'; data: Transition & { reason: ExpiryReason } }
  | { type: 'PaymentFailed'; data: Transition & { reason: string } }
  | { type: 'PaymentReviewRequired'; data: Transition & { reason: string } }
  | { type: 'PaymentReviewApproved'; data: Transition & { actor: string } }
  | { type: 'PaymentReviewRejected'; data: Transition & { actor: string } }
  | { type: 'PaymentDocumentAttached'; data: { paymentId: string; document: PaymentDocument } };

export type PaymentEventType = PaymentEvent['type'];
export type PaymentEventData<T extends PaymentEventType> = Extract<PaymentEvent, { type: T }>['data'];

export const paymentStream = (paymentId: string) => `payment-${paymentId}`;

/** The one id a client's `externalId` can ever have. */
export const paymentIdFor = (clientId: string, externalId: string) => deterministicId('payment', clientId, externalId);
