/**
 * From domain events to the interface's webhook events: one entry per domain event type, each a pure function of
 * the event and what the emitter knows of its object (for a payment, the facts its payload carries). Each context's
 * entries are a table of their own here, carried by its manifest (`webhooks` in src/<context>/module.ts); the
 * emitter (projections/webhooks.ts) and `GET /events` are built from all of them together (`Registered`).
 *
 * Payloads carry exactly the interface's fields, null where a field does not apply, built in a fixed key order
 * so that the same event always gives the same bytes (the body that is signed, and re-sent on every retry).
 */
import { deterministicId } from '../src/eventstore/deterministicId.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { isOneOf, type EventHandlers } from '../src/eventstore/typedEvents.ts';
import type { RecordedStoredEvent, StoredEventData, StoredEventType } from '../src/storedEvents/registry.ts';
import type { PaymentEventData } from '../src/payments/events.ts';
import type { RefundEventData } from '../src/payments/refunds/events.ts';
import type { WebhookEventType } from '../schemas/webhooks.ts';

/** What the emitter keeps of a payment, to fill its payloads: the interface's transaction and identity fields. */
export interface PaymentFacts {
  id: string;
  clientId: string;
  externalId: string;
  status: string;
  totalAmount: string;
  currency: string;
  type: string;
  parentPaymentId: string | null;
  relatedPaymentId: string | null;
  customerId: string | null;
  settledAt: string | null;
  expiredAt: string | null;
  unsettledAt: string | null;
  unsettledReason: string | null;
  settlementBatchId: string | null;
  /** null until a document is attached to the payment (during a review); then SUBMITTED. */
  documentationStatus: string | null;
  /**
   * Null while a deposit awaits assignment (no account, so no identity yet), and on the refund child of an expired
   * deposit (its money goes back to the originator from suspense: no identity owns it).
   */
  identityId: string | null;
  identityEmail: string | null;
}

/** One webhook event, for every endpoint of its client that subscribes to its type, and for `GET /events`. */
export interface Emission {
  /** Stable: derived from the domain event and the webhook event type. */
  id: string;
  eventType: WebhookEventType;
  clientId: string;
  /** The payment or customer it is about. */
  objectId: string;
  /** Increases with every event of the object (its stream revision + 1): orders one payment's status changes. */
  sequence: number;
  occurredAt: string;
  /** The JSON body, exactly as delivered. */
  body: string;
}

export interface Mapped {
  /** The payment's facts after the event, when the event is a payment's. */
  facts?: PaymentFacts;
  emissions: Emission[];
}

/** What an event of type `K` becomes, given what the emitter knows of its payment (null: nothing yet). */
export type Mapping<K extends StoredEventType> = (event: RecordedEvent<K, StoredEventData[K]>, facts: PaymentFacts | null) => Mapped;

/** One mapping per domain event type the webhooks follow, keyed by its stored type. */
export type WebhookMappings = EventHandlers<StoredEventData, [facts: PaymentFacts | null], Mapped>;

export const webhookEventId = (sourceEventId: string, eventType: string) => deterministicId('webhook-event', sourceEventId, eventType);

function emission(event: RecordedEvent, eventType: WebhookEventType, clientId: string, objectId: string, occurredAt: string, payload: object): Emission {
  return {
    id: webhookEventId(event.id, eventType), eventType, clientId, objectId, sequence: Number(event.revision) + 1, occurredAt,
    body: JSON.stringify(payload),
  };
}

/** The payment payload of the interface, in its order. */
export function transactionPayload(eventType: WebhookEventType, timestamp: string, f: PaymentFacts): object {
  return {
    eventType,
    timestamp,
    transaction: {
      id: f.id, externalId: f.externalId, status: f.status, totalAmount: f.totalAmount, currency: f.currency, type: f.type,
      parentPaymentId: f.parentPaymentId, relatedPaymentId: f.relatedPaymentId, customerId: f.customerId, settledAt: f.settledAt,
      expiredAt: f.expiredAt, unsettledAt: f.unsettledAt, unsettledReason: f.unsettledReason, settlementBatchId: f.settlementBatchId,
      documentationStatus: f.documentationStatus,
    },
    identity: { id: f.identityId, email: f.identityEmail },
  };
}

type Transition = { paymentId: string; to: string; at: string };

/** A mapping of any event whose data is (at least) `D`. */
type MappingOf<D> = (event: RecordedEvent<string, D>, facts: PaymentFacts | null) => Mapped;

/**
 * A status change of a payment: `transaction.status_changed` (every transition, the interface's legacy event),
 * then the specific events, all with the facts after the change.
 */
function transition<D extends Transition>(
  specific: readonly WebhookEventType[], changes: (data: D) => Partial<PaymentFacts> = () => ({}),
): MappingOf<D> {
  return (event, facts) => {
    const data = event.data;
    if (!facts) throw new Error(`webhooks: ${event.type} of payment ${data.paymentId} before its PaymentCreated`);
    const next: PaymentFacts = { ...facts, status: data.to, ...changes(data) };
    const types: WebhookEventType[] = ['transaction.status_changed', ...specific];
    return {
      facts: next,
      emissions: types.map((type) => emission(event, type, next.clientId, next.id, data.at, transactionPayload(type, data.at, next))),
    };
  };
}

/** A deposit's purchase event: the payment payload with the facts after it, under `eventType`. */
function purchase<D extends { paymentId: string; at: string }>(
  eventType: WebhookEventType, changes: (data: D) => Partial<PaymentFacts> = () => ({}),
): MappingOf<D> {
  return (event, facts) => {
    const data = event.data;
    if (!facts) throw new Error(`webhooks: ${event.type} of payment ${data.paymentId} before its DepositReceived`);
    const next: PaymentFacts = { ...facts, ...changes(data) };
    return { facts: next, emissions: [emission(event, eventType, next.clientId, next.id, data.at, transactionPayload(eventType, data.at, next))] };
  };
}

/** A LOCAL_DEPOSIT that did not come through PaymentCreated (a deposit awaiting assignment, a companion child). */
function localDepositFacts(d: { paymentId: string; clientId: string; externalId: string; totalAmount: string; currency: string;
  customerId: string | null }): PaymentFacts {
  return {
    id: d.paymentId, clientId: d.clientId, externalId: d.externalId, status: 'CREATED', totalAmount: d.totalAmount, currency: d.currency,
    type: 'LOCAL_DEPOSIT', parentPaymentId: null, relatedPaymentId: null, customerId: d.customerId, settledAt: null, expiredAt: null,
    unsettledAt: null, unsettledReason: null, settlementBatchId: null, documentationStatus: null, identityId: null, identityEmail: null,
  };
}

/** Deposits without a destination (src/deposits/events.ts): purchase events, and the facts their status changes carry. */
export const depositWebhookMappings: WebhookMappings = {
  DepositReceived(event) {
    return { facts: localDepositFacts(event.data), emissions: [] };
  },
  PurchasePendingAssignment: purchase('purchase.pendingAssignment'),
  // Recorded just before its PaymentSettled: that payload names the account's identity and the companion.
  DepositAssigned(event, facts) {
    const d = event.data;
    if (!facts) throw new Error(`webhooks: DepositAssigned of payment ${d.paymentId} before its DepositReceived`);
    return { facts: { ...facts, identityId: d.identityId, relatedPaymentId: d.relatedPaymentId }, emissions: [] };
  },
  PurchaseUnderpaid: purchase('purchase.underpaid'),
  PurchaseOverpaid: purchase('purchase.overpaid'),
  DepositCompanionCreated(event) {
    const d = event.data;
    return { facts: { ...localDepositFacts(d), status: d.status, parentPaymentId: d.parentPaymentId, relatedPaymentId: d.parentPaymentId,
      identityId: d.identityId, settledAt: d.status === 'SETTLED' ? d.createdAt : null }, emissions: [] };
  },
  // The amount still due cancelled: a status change, which the interface names no specific event for. (Its payment and
  // its expiry record the payments' PaymentSettled and PaymentExpired: payment.settled, payment.expired.)
  DepositCompanionCancelled: transition([]),
};

type RefundEnd = RefundEventData<'RefundSettled'> & { reason?: string };

/**
 * A refund child's end: `transaction.status_changed` (a refund child is a payment of type REFUND), then the
 * interface's refund event where it names one (payment.refund.settled, payment.refund.failed; an UNSETTLED or
 * EXPIRED child has none).
 */
function refundEnd(specific: readonly WebhookEventType[], changes: (d: RefundEnd) => Partial<PaymentFacts>): MappingOf<RefundEnd> {
  return (event, facts) => {
    const d = event.data;
    if (!facts) throw new Error(`webhooks: ${event.type} of refund ${d.refundId} before its RefundCreated`);
    const next: PaymentFacts = { ...facts, status: d.to, ...changes(d) };
    const types: WebhookEventType[] = ['transaction.status_changed', ...specific];
    return { facts: next, emissions: types.map((type) => emission(event, type, next.clientId, next.id, d.at, transactionPayload(type, d.at, next))) };
  };
}

/**
 * Refund children (src/payments/refunds/events.ts): the payment payload with `type` REFUND, `parentPaymentId` and
 * `relatedPaymentId` naming the refunded payment, and the child's id as its `externalId` (the client named none).
 */
const REFUND_CHILD_EVENTS = ['RefundCreated', 'RefundSettled', 'RefundFailed', 'RefundUnsettled', 'RefundExpired'] as const satisfies readonly StoredEventType[];

const refundMappings: WebhookMappings = {
  RefundCreated(event) {
    const d = event.data;
    const facts: PaymentFacts = {
      id: d.refundId, clientId: d.clientId, externalId: d.refundId, status: 'RECEIVED', totalAmount: d.totalAmount, currency: d.currency,
      type: 'REFUND', parentPaymentId: d.parentPaymentId, relatedPaymentId: d.parentPaymentId, customerId: d.customerId, settledAt: null,
      expiredAt: null, unsettledAt: null, unsettledReason: null, settlementBatchId: null, documentationStatus: null,
      identityId: d.identityId, identityEmail: d.identityEmail,
    };
    const type = 'payment.refund.created';
    return { facts, emissions: [emission(event, type, d.clientId, d.refundId, d.createdAt, transactionPayload(type, d.createdAt, facts))] };
  },
  RefundSettled: refundEnd(['payment.refund.settled'], (d) => ({ settledAt: d.at })),
  RefundFailed: refundEnd(['payment.refund.failed'], () => ({})),
  RefundUnsettled: refundEnd([], (d) => ({ unsettledAt: d.at, unsettledReason: d.reason ?? null })),
  RefundExpired: refundEnd([], (d) => ({ expiredAt: d.at })),
};

/** The payments' events (src/payments/events.ts) and their refund children's: status changes and what they carry. */
export const paymentWebhookMappings: WebhookMappings = {
  PaymentCreated(event) {
    const d = event.data;
    return {
      facts: {
        id: d.paymentId, clientId: d.clientId, externalId: d.externalId, status: 'CREATED', totalAmount: d.totalAmount,
        currency: d.currency, type: d.type, parentPaymentId: null, relatedPaymentId: null, customerId: d.customerId,
        settledAt: null, expiredAt: null, unsettledAt: null, unsettledReason: null, settlementBatchId: null,
        documentationStatus: null, identityId: d.identityId, identityEmail: d.identityEmail,
      },
      emissions: [],
    };
  },
  PaymentPending: transition([]),
  PaymentAuthorized: transition([]),
  PaymentCaptured: transition([]),
  PaymentReceived: transition([]),
  PaymentSettled: transition(['payment.settled'], (d: PaymentEventData<'PaymentSettled'>) => ({
    settledAt: d.at, settlementBatchId: d.settlementBatchId })),
  PaymentUnsettled: transition(['payment.unsettled'], (d: PaymentEventData<'PaymentUnsettled'>) => ({
    unsettledAt: d.at, unsettledReason: d.reason, settlementBatchId: d.settlementBatchId })),
  PaymentExpired: transition(['payment.expired'], (d: PaymentEventData<'PaymentExpired'>) => ({ expiredAt: d.at })),
  PaymentFailed: transition([]),
  PaymentReviewRequired: transition(['payment.requiresReview']),
  PaymentReviewApproved: transition(['payment.reviewApproved', 'payment.reviewResolved']),
  PaymentReviewRejected: transition(['payment.reviewRejected', 'payment.reviewResolved']),
  PaymentDocumentAttached(event, facts) {
    const d = event.data;
    if (!facts) throw new Error(`webhooks: PaymentDocumentAttached of payment ${d.paymentId} before its PaymentCreated`);
    return { facts: { ...facts, documentationStatus: 'SUBMITTED' }, emissions: [] };
  },
  ...refundMappings,
};

/** A customer's operation level changed (src/customers/events.ts): `customer.levelChanged`. */
export const customerWebhookMappings: WebhookMappings = {
  CustomerLevelChanged(event) {
    const d = event.data;
    const payload = {
      eventType: 'customer.levelChanged',
      timestamp: d.changedAt,
      customer: {
        id: d.customerId, clientId: d.clientId, firstName: d.firstName, lastName: d.lastName, email: d.email,
        documentNumber: d.documentNumber, operationLevel: d.operationLevel, autoCreated: d.autoCreated, documentsCount: d.documentsCount,
      },
    };
    return { emissions: [emission(event, 'customer.levelChanged', d.clientId, d.customerId, d.changedAt, payload)] };
  },
};

/** A test clock reached its frozen time (src/testClocks/events.ts): `test_clock.ready`. */
export const testClockWebhookMappings: WebhookMappings = {
  TestClockReady(event) {
    const d = event.data;
    const payload = {
      eventType: 'test_clock.ready', timestamp: d.frozenTime,
      testClock: { id: d.clockId, name: d.name, frozenTime: d.frozenTime, status: 'ready' },
    };
    return { emissions: [emission(event, 'test_clock.ready', d.clientId, d.clockId, d.frozenTime, payload)] };
  },
};

/** The payment a mapped event is about (its facts are loaded before the mapping runs), if any. */
export function paymentIdOf(event: RecordedStoredEvent): string | null {
  // A refund child's events name it by `refundId` (its facts are kept like a payment's).
  if (isOneOf(event, REFUND_CHILD_EVENTS)) return event.data.refundId;
  if (!event.type.startsWith('Payment') && !event.type.startsWith('Deposit') && !event.type.startsWith('Purchase')) return null;
  return 'paymentId' in event.data ? event.data.paymentId : null;
}
