/**
 * The payment state machine (README, "Payments"), pure:
 *
 *   CREATED ─authorize→ AUTHORIZED ─capture→ CAPTURED ─receive→ RECEIVED ─reconcile→ SETTLED | UNSETTLED
 *     │  push rails skip authorize/capture: CREATED | PENDING ─receive→ RECEIVED
 *     ├─ payer action pending → PENDING
 *     ├─ expiresAt or the quote's time-to-live passes before RECEIVED → EXPIRED
 *     ├─ provider rejects → FAILED
 *     └─ review (any status before RECEIVED) → REQUIRES_REVIEW ─approve→ the status it had │ ─reject→ FAILED
 *
 * Every move the machine does not allow throws `failedPrecondition` naming the current status. Facts from
 * outside the stream (the destination account's status, what the provider delivered, the screening of the
 * payer) arrive in the command, so the decider stays a function of its inputs.
 */
import type { Decider } from '../domain/decider.ts';
import type { StreamPart } from '../eventstore/streams.ts';
import { domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import { AmountError, formatAmount, parseAmount, toDecimal } from '../domain/money.ts';
import {
  paymentEventSchemas, TERMINAL_STATUSES, type ExpiryReason, type PaymentCreatedData, type PaymentDocument, type PaymentEvent,
  type PaymentStatus,
} from './events.ts';

/** What the payer's screening decided at creation (customer operation level, amount thresholds, triggers). */
export type Screening = { outcome: 'CLEAR' } | { outcome: 'REVIEW'; reason: string } | { outcome: 'BLOCK'; reason: string };

/**
 * The destination account's answer to this payment's settlement, as its own stream decided it (the account is
 * the judge of whether it can take money: DESIGN section 8).
 */
export type AccountAnswer =
  | { outcome: 'CREDITED'; creditEventId: string; settlementBatchId: string | null }
  | { outcome: 'REFUSED'; status: string; settlementBatchId: string | null };

export const MAX_REVIEW_DOCUMENTS = 20;

/** Every command acts for a tenant (src/domain/tenancy.ts): another client's payment is not found. */
export type PaymentCommand = (
  | { type: 'CreatePayment'; payment: Omit<PaymentCreatedData, 'createdAt'>; screening: Screening; now: Date }
  | { type: 'MarkPending'; now: Date }
  | { type: 'Authorize'; now: Date }
  | { type: 'Capture'; now: Date }
  /** The provider rejected the payment (a declined card, a refused transfer). */
  | { type: 'Reject'; reason: string; now: Date }
  /** The provider delivered `receivedAmount`. */
  | { type: 'Receive'; receivedAmount: string; now: Date }
  /**
   * Reconciles a RECEIVED payment: at once (`batchId` null) when its period is INSTANT, else in a settlement
   * batch. `account` is the destination account's answer, asked only when the amount received is the amount
   * expected (`needsAccountAnswer`); a different amount is UNSETTLED without asking.
   */
  | { type: 'Settle'; batchId: string | null; account: AccountAnswer | null; now: Date }
  | { type: 'Expire'; now: Date }
  | { type: 'RequireReview'; reason: string; now: Date }
  | { type: 'ResolveReview'; decision: 'APPROVED' | 'REJECTED'; actor: string; now: Date }
  | { type: 'AttachDocument'; document: Omit<PaymentDocument, 'attachedAt'>; now: Date }
) & TenantScoped;

export interface PaymentState {
  payment: PaymentCreatedData | null;
  status: PaymentStatus | null;
  /** While REQUIRES_REVIEW: the status an approval returns to. */
  resumeStatus: PaymentStatus | null;
  receivedAmount: string | null;
  documents: number;
}

const BEFORE_RECEIVED: ReadonlySet<PaymentStatus> = new Set(['CREATED', 'PENDING', 'AUTHORIZED', 'CAPTURED']);

function existing(state: PaymentState): PaymentCreatedData {
  if (!state.payment || !state.status) throw domainNotFound('payment not found');
  return state.payment;
}

function refuse(state: PaymentState, what: string): never {
  throw domainPrecondition(`payment ${state.payment!.paymentId} is ${state.status}; it cannot ${what}`);
}

/** The moment the payment stops being payable, and why: the earlier of `expiresAt` and the quote's end. */
export function expiryOf(payment: PaymentCreatedData): { at: string; reason: ExpiryReason } | null {
  const candidates: Array<{ at: string; reason: ExpiryReason }> = [];
  if (payment.expiresAt) candidates.push({ at: payment.expiresAt, reason: 'EXPIRES_AT' });
  if (payment.exchange) candidates.push({ at: payment.exchange.quoteExpiresAt, reason: 'QUOTE_EXPIRED' });
  candidates.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  return candidates[0] ?? null;
}

/** What a provider reports it delivered, at the currency's scale; anything else never reaches the ledger. */
function receivedIn(text: string, currency: string): string {
  try {
    return formatAmount(parseAmount(text, currency, { positive: true }), currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`receivedAmount: ${error.message}`);
    throw error;
  }
}

const amountMatches = (state: PaymentState) =>
  toDecimal(state.receivedAmount!).equals(toDecimal(state.payment!.totalAmount));

/** True when settling this payment now needs its destination account's answer (the process manager asks it). */
export function needsAccountAnswer(state: PaymentState): boolean {
  return state.status === 'RECEIVED' && amountMatches(state);
}

function reconcile(state: PaymentState, command: Extract<PaymentCommand, { type: 'Settle' }>, at: string): PaymentEvent {
  const payment = state.payment!;
  const receivedAmount = state.receivedAmount!;
  // Two batch runs may race: the batch recorded is the one the account answered.
  const settlementBatchId = command.account?.settlementBatchId ?? command.batchId;
  const base = { paymentId: payment.paymentId, from: 'RECEIVED' as const, at, clientId: payment.clientId, currency: payment.currency, settlementBatchId };
  if (!amountMatches(state)) {
    return { type: 'PaymentUnsettled', data: { ...base, to: 'UNSETTLED', receivedAmount, reason: 'AMOUNT_MISMATCH',
      detail: `received ${receivedAmount} ${payment.currency}, expected ${payment.totalAmount} ${payment.currency}` } };
  }
  if (!command.account) throw new Error(`settling payment ${payment.paymentId} needs its destination account's answer`);
  if (command.account.outcome === 'REFUSED') {
    return { type: 'PaymentUnsettled', data: { ...base, to: 'UNSETTLED', receivedAmount, reason: 'ACCOUNT_NOT_ACTIVE',
      detail: `destination account ${payment.accountNumber} is ${command.account.status}` } };
  }
  const net = toDecimal(payment.totalAmount).minus(toDecimal(payment.feeAmount));
  return { type: 'PaymentSettled', data: { ...base, to: 'SETTLED', accountId: payment.accountId,
    totalAmount: payment.totalAmount, feeAmount: payment.feeAmount, netAmount: formatAmount(net, payment.currency),
    creditEventId: command.account.creditEventId } };
}

/** Whether an event of the payment's stream is the payment's own (not its refunds', a deposit's or a companion's). */
export function isPaymentEvent(event: { type: string; data: unknown }): event is PaymentEvent {
  return Object.hasOwn(paymentEventSchemas, event.type);
}

export const paymentDecider: Decider<PaymentCommand, PaymentEvent, PaymentState> = {
  initialState: { payment: null, status: null, resumeStatus: null, receivedAmount: null, documents: 0 },

  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.payment?.clientId ?? null, 'payment not found');
    if (command.type === 'CreatePayment') {
      if (state.payment) throw domainConflict(`a payment with externalId ${JSON.stringify(state.payment.externalId)} already exists`);
      const payment = { ...command.payment, createdAt: at };
      const created: PaymentEvent = { type: 'PaymentCreated', data: payment };
      const moved = { paymentId: payment.paymentId, from: 'CREATED' as const, at };
      switch (command.screening.outcome) {
        case 'CLEAR': return [created];
        case 'BLOCK': return [created, { type: 'PaymentFailed', data: { ...moved, to: 'FAILED', reason: command.screening.reason } }];
        case 'REVIEW': return [created, { type: 'PaymentReviewRequired', data: { ...moved, to: 'REQUIRES_REVIEW', reason: command.screening.reason } }];
      }
    }

    const payment = existing(state);
    const from = state.status!;
    const move = (to: PaymentStatus) => ({ paymentId: payment.paymentId, from, to, at });
    switch (command.type) {
      case 'MarkPending':
        if (from !== 'CREATED' || payment.flow !== 'PUSH') refuse(state, 'wait for the payer');
        return [{ type: 'PaymentPending', data: move('PENDING') }];
      case 'Authorize':
        if (payment.flow !== 'CARD') {
          throw domainPrecondition(`payment ${payment.paymentId} is paid by ${payment.method ?? 'a push transfer'}; only card payments are authorized`);
        }
        if (from !== 'CREATED') refuse(state, 'be authorized');
        return [{ type: 'PaymentAuthorized', data: move('AUTHORIZED') }];
      case 'Capture':
        if (payment.flow !== 'CARD') {
          throw domainPrecondition(`payment ${payment.paymentId} is paid by ${payment.method ?? 'a push transfer'}; only card payments are captured`);
        }
        if (from !== 'AUTHORIZED') refuse(state, 'be captured');
        return [{ type: 'PaymentCaptured', data: move('CAPTURED') }];
      case 'Reject':
        if (!BEFORE_RECEIVED.has(from)) refuse(state, 'be rejected by the provider');
        return [{ type: 'PaymentFailed', data: { ...move('FAILED'), reason: command.reason } }];
      case 'Receive': {
        const ready = payment.flow === 'CARD' ? from === 'CAPTURED' : from === 'CREATED' || from === 'PENDING';
        if (!ready) refuse(state, payment.flow === 'CARD' ? 'be received before it is captured' : 'be received');
        const receivedAmount = receivedIn(command.receivedAmount, payment.currency);
        return [{ type: 'PaymentReceived', data: { ...move('RECEIVED'), receivedAmount, currency: payment.currency } }];
      }
      case 'Settle':
        if (from !== 'RECEIVED') refuse(state, 'be settled');
        if (payment.settlement === 'INSTANT' && command.batchId !== null) {
          throw domainPrecondition(`payment ${payment.paymentId} settles INSTANT, not in a batch`);
        }
        if (payment.settlement !== 'INSTANT' && command.batchId === null) {
          throw domainPrecondition(`payment ${payment.paymentId} settles ${payment.settlement}, in a settlement batch`);
        }
        return [reconcile(state, command, at)];
      case 'Expire': {
        const resumes = from === 'REQUIRES_REVIEW' ? state.resumeStatus! : from;
        if (!BEFORE_RECEIVED.has(resumes)) refuse(state, 'expire');
        const expiry = expiryOf(payment);
        if (!expiry) throw domainPrecondition(`payment ${payment.paymentId} has no expiry`);
        if (Date.parse(expiry.at) > command.now.getTime()) {
          throw domainPrecondition(`payment ${payment.paymentId} is payable until ${expiry.at}`);
        }
        return [{ type: 'PaymentExpired', data: { ...move('EXPIRED'), reason: expiry.reason } }];
      }
      case 'RequireReview':
        // Once the funds arrived only reconciliation decides: a rejected review then would leave money the
        // provider delivered in no account at all. Holding received funds is what UNSETTLED (suspense) is for.
        if (TERMINAL_STATUSES.has(from) || from === 'REQUIRES_REVIEW' || from === 'RECEIVED') refuse(state, 'be put under review');
        return [{ type: 'PaymentReviewRequired', data: { ...move('REQUIRES_REVIEW'), reason: command.reason } }];
      case 'ResolveReview':
        if (from !== 'REQUIRES_REVIEW') refuse(state, 'have its review resolved');
        return command.decision === 'APPROVED'
          ? [{ type: 'PaymentReviewApproved', data: { ...move(state.resumeStatus!), actor: command.actor } }]
          : [{ type: 'PaymentReviewRejected', data: { ...move('FAILED'), actor: command.actor } }];
      case 'AttachDocument':
        if (from !== 'REQUIRES_REVIEW') refuse(state, 'take review documents (only a payment under review can)');
        if (state.documents >= MAX_REVIEW_DOCUMENTS) {
          throw domainPrecondition(`payment ${payment.paymentId} already has ${MAX_REVIEW_DOCUMENTS} review documents`);
        }
        return [{ type: 'PaymentDocumentAttached', data: { paymentId: payment.paymentId, document: { ...command.document, attachedAt: at } } }];
    }
  },

  evolve(state, event) {
    // A parent's refunds are recorded on its stream too (./refunds/decider.ts): they leave its own state alone.
    if (!isPaymentEvent(event)) return state;
    switch (event.type) {
      case 'PaymentCreated':
        return { ...state, payment: event.data, status: 'CREATED' };
      case 'PaymentDocumentAttached':
        return { ...state, documents: state.documents + 1 };
      case 'PaymentReviewRequired':
        return { ...state, status: event.data.to, resumeStatus: event.data.from };
      case 'PaymentReceived':
        return { ...state, status: event.data.to, receivedAmount: event.data.receivedAmount };
      default:
        return { ...state, status: event.data.to, resumeStatus: event.data.to === 'REQUIRES_REVIEW' ? state.resumeStatus : null };
    }
  },
};

/**
 * The payment's part of its stream (./stream.ts), and what a request waits for after each command: a move made on
 * its own waits for the read models it touches (a creation hands its wait to the HTTP edge, which records the
 * answer meanwhile); the receipt and the settlement are steps of flows that wait once at their end.
 */
export const paymentPart: StreamPart<PaymentCommand, PaymentEvent, PaymentState> = { decider: paymentDecider, readModels: {
  CreatePayment: 'alongside', MarkPending: 'written', Authorize: 'written', Capture: 'written', Reject: 'written', Expire: 'written',
  RequireReview: 'written', ResolveReview: 'written', AttachDocument: 'written', Receive: 'none', Settle: 'none',
} };
