/**
 * The two deciders of a refund (README, "Refunds"), pure:
 *
 * - `parentRefundDecider` runs on the parent payment's stream, beside the payment's own decider: it decides the
 *   ceiling. A request reserves its amount against what is left (`totalAmount` less every refund requested,
 *   accepted or settled); the funding account's answer and the child's end are recorded here once each, and a
 *   refusal or a failed child gives its reservation back. Appends carry the parent's expected revision, so
 *   requests racing each other (in any number of processes) can never reserve more than the payment took.
 * - `refundDecider` runs on the child's stream (`refund-<refundId>`): created RECEIVED, it moves once to
 *   SETTLED, FAILED, UNSETTLED or EXPIRED. Repeating the move it made changes nothing; another one is refused.
 *
 * The funds are the account's to decide (src/accounts/decider.ts, RequestHold), and the process manager
 * (./handlers.ts) carries the answers between the streams.
 */
import type { Decider } from '../../domain/decider.ts';
import { streamType, type StreamPart } from '../../eventstore/streams.ts';
import { domainInvalid, domainNotFound, domainPrecondition } from '../../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../../domain/tenancy.ts';
import { AmountError, formatAmount, parseAmount, toDecimal, zeroAmount } from '../../domain/money.ts';
import type { PaymentEvent, PaymentStatus } from '../events.ts';
import type { AccountHoldRefusedData } from '../../accounts/events.ts';
import type { CompanionStatus, DepositEvent } from '../../deposits/events.ts';
import {
  OUTCOME_EVENTS, type ParentRefundEvent, type RefundCreatedData, type RefundEvent, type RefundOutcome, type RefundStatus,
} from './events.ts';

/** A refund as the parent knows it: reserved (REQUESTED, ACCEPTED, SETTLED) or given back (REFUSED, RELEASED). */
export interface ParentRefund {
  amount: string;
  state: 'REQUESTED' | 'ACCEPTED' | 'REFUSED' | 'SETTLED' | 'RELEASED';
  /** The reason given with the request: the child's description. */
  description: string | null;
  /** Why the account refused it (state REFUSED). */
  detail: string | null;
}

/**
 * What a refund needs of its parent: a payment (from its `PaymentCreated`), or a deposit (from its
 * `DepositReceived`; its account and identity from the `DepositAssigned` that settled it). Both live on the
 * parent's stream (`payment-<id>`), so the ceiling is decided there either way.
 */
export interface RefundableParent {
  paymentId: string;
  clientId: string;
  totalAmount: string;
  currency: string;
  /** The account that took the funds and pays the refund out; null while a deposit awaits assignment. */
  accountId: string | null;
  identityId: string | null;
  identityEmail: string | null;
  customerId: string | null;
}

export interface ParentRefundState {
  payment: RefundableParent | null;
  /** The payment's status; a deposit's companion child's may also be CANCELLED (src/deposits/events.ts). */
  status: PaymentStatus | CompanionStatus | null;
  /**
   * Why this payment can never be refunded, whatever its status: a deposit's companion child (its amount was
   * part of the deposit, which is what is refunded). Null for every other payment.
   */
  notRefundable: string | null;
  /** Sum of the refunds that hold a reservation, canonical at the currency's scale. */
  reserved: string;
  /**
   * Every refund of the payment, by id. Append-only and extended in place by `evolve` (a folded state is used
   * linearly by the command handler, as the account's indexes are), so a parent refunded often folds in linear time.
   */
  refunds: Map<string, ParentRefund>;
}

/** The funding account's answer to the hold of a refund. */
export type HoldAnswer = { outcome: 'HELD' } | { outcome: 'REFUSED'; refusal: AccountHoldRefusedData['refusal']; detail: string };

export type ParentRefundCommand = (
  /** `amount` as the caller sent it (checked against the currency here), or null for all that is left. */
  | { type: 'RequestRefund'; refundId: string; amount: string | null; description: string | null; now: Date }
  | { type: 'AnswerRefund'; refundId: string; answer: HoldAnswer; now: Date }
  | { type: 'EndRefund'; refundId: string; outcome: RefundOutcome; now: Date }
) & TenantScoped;

const RESERVING: ReadonlySet<ParentRefund['state']> = new Set(['REQUESTED', 'ACCEPTED', 'SETTLED']);

/** What can still be refunded: the payment's total less every reservation. */
export function refundableRemainder(state: ParentRefundState): string {
  const payment = state.payment!;
  return formatAmount(toDecimal(payment.totalAmount).minus(toDecimal(state.reserved)), payment.currency);
}

function requestedAmount(text: string | null, state: ParentRefundState): string {
  const { currency } = state.payment!;
  if (text === null) return refundableRemainder(state);
  try {
    return formatAmount(parseAmount(text, currency, { positive: true }), currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`amount: ${error.message}`);
    throw error;
  }
}

const reserve = (state: ParentRefundState, amount: string, sign: 1 | -1) => {
  const currency = state.payment!.currency;
  const delta = sign === 1 ? toDecimal(amount) : toDecimal(amount).negated();
  return formatAmount(toDecimal(state.reserved).plus(delta), currency);
};

/**
 * Every event a parent's stream (`payment-<id>`) may hold: the payment's own (or, for a deposit without a
 * destination, the deposit's), and its refunds'.
 */
export type ParentStreamEvent = PaymentEvent | DepositEvent | ParentRefundEvent;

export const parentRefundDecider: Decider<ParentRefundCommand, ParentRefundEvent, ParentRefundState, ParentStreamEvent> = {
  initialState: { payment: null, status: null, notRefundable: null, reserved: '0', refunds: new Map() },

  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.payment?.clientId ?? null, 'payment not found');
    const payment = state.payment;
    if (!payment || !state.status) throw domainNotFound('payment not found');
    if (state.notRefundable) throw domainPrecondition(state.notRefundable);
    const base = { paymentId: payment.paymentId, refundId: command.refundId, at };
    const refund = state.refunds.get(command.refundId);
    switch (command.type) {
      case 'RequestRefund': {
        if (refund) return [];
        if (state.status !== 'SETTLED' || payment.accountId === null) {
          throw domainPrecondition(`payment ${payment.paymentId} is ${state.status}; only a SETTLED payment can be refunded`);
        }
        const remainder = refundableRemainder(state);
        if (!toDecimal(remainder).greaterThan(0)) {
          throw domainPrecondition(`payment ${payment.paymentId} has nothing left to refund (${payment.totalAmount} ${payment.currency} refunded or in progress)`);
        }
        const amount = requestedAmount(command.amount, state);
        if (toDecimal(amount).greaterThan(toDecimal(remainder))) {
          throw domainPrecondition(`a refund of ${amount} ${payment.currency} exceeds what is left to refund of payment ${payment.paymentId}: ${remainder} ${payment.currency}`);
        }
        return [{ type: 'PaymentRefundRequested', data: { ...base, amount, clientId: payment.clientId, currency: payment.currency, description: command.description } }];
      }
      case 'AnswerRefund': {
        if (!refund) throw domainNotFound(`payment ${payment.paymentId} has no refund ${command.refundId}`);
        // The first answer stands (the account answers once per hold, so a later one is the same anyway).
        if (refund.state !== 'REQUESTED') return [];
        return command.answer.outcome === 'HELD'
          ? [{ type: 'PaymentRefundAccepted', data: { ...base, amount: refund.amount } }]
          : [{ type: 'PaymentRefundRefused', data: { ...base, amount: refund.amount, refusal: command.answer.refusal, detail: command.answer.detail } }];
      }
      case 'EndRefund': {
        // A child the parent reserved nothing for (one funded from suspense) leaves the parent alone.
        if (!refund || refund.state === 'SETTLED' || refund.state === 'RELEASED') return [];
        if (refund.state === 'REFUSED') {
          throw domainPrecondition(`refund ${command.refundId} of payment ${payment.paymentId} is ${refund.state}; it cannot end`);
        }
        const ended: ParentRefundEvent = command.outcome === 'SETTLED'
          ? { type: 'PaymentRefundSettled', data: { ...base, amount: refund.amount } }
          : { type: 'PaymentRefundReleased', data: { ...base, amount: refund.amount, outcome: command.outcome } };
        // A child exists only once the account held its amount, and is created beside the parent's acceptance
        // (./handlers.ts): a child that ended before the acceptance reached this stream was accepted all the same.
        // The parent records both, in their order; the acceptance arriving after changes nothing.
        return refund.state === 'REQUESTED' ? [{ type: 'PaymentRefundAccepted', data: { ...base, amount: refund.amount } }, ended] : [ended];
      }
    }
  },

  evolve(state, event) {
    // The parent's stream also holds the payment's own events: the refund side follows its status.
    switch (event.type) {
      case 'PaymentCreated': {
        const d = event.data;
        return { ...state, status: 'CREATED', reserved: zeroAmount(d.currency), payment: {
          paymentId: d.paymentId, clientId: d.clientId, totalAmount: d.totalAmount, currency: d.currency, accountId: d.accountId,
          identityId: d.identityId, identityEmail: d.identityEmail, customerId: d.customerId,
        }, refunds: new Map() };
      }
      // A deposit without a destination (src/deposits): refundable like any payment once assigned and SETTLED.
      case 'DepositReceived': {
        const d = event.data;
        return { ...state, status: 'CREATED', reserved: zeroAmount(d.currency), payment: {
          paymentId: d.paymentId, clientId: d.clientId, totalAmount: d.totalAmount, currency: d.currency, accountId: null,
          identityId: null, identityEmail: null, customerId: d.customerId,
        }, refunds: new Map() };
      }
      case 'DepositAssigned': {
        const d = event.data;
        return state.payment ? { ...state, payment: { ...state.payment, accountId: d.accountId, identityId: d.identityId } } : state;
      }
      case 'DepositCompanionCreated': {
        const d = event.data;
        return { ...state, status: d.status, reserved: zeroAmount(d.currency), payment: {
          paymentId: d.paymentId, clientId: d.clientId, totalAmount: d.totalAmount, currency: d.currency, accountId: d.accountId,
          identityId: d.identityId, identityEmail: null, customerId: d.customerId,
        }, notRefundable: `payment ${d.paymentId} holds the difference of deposit ${d.parentPaymentId}; refund the deposit instead`,
        refunds: new Map() };
      }
      case 'PaymentRefundRequested': {
        const d = event.data;
        state.refunds.set(d.refundId, { amount: d.amount, state: 'REQUESTED', description: d.description, detail: null });
        return { ...state, reserved: reserve(state, d.amount, 1) };
      }
      case 'PaymentRefundAccepted':
      case 'PaymentRefundSettled': {
        const d = event.data;
        const known = state.refunds.get(d.refundId);
        state.refunds.set(d.refundId, { ...known!, state: event.type === 'PaymentRefundAccepted' ? 'ACCEPTED' : 'SETTLED' });
        return { ...state };
      }
      case 'PaymentRefundRefused':
      case 'PaymentRefundReleased': {
        const d = event.data;
        const known = state.refunds.get(d.refundId);
        const detail = 'detail' in d ? d.detail : null;
        state.refunds.set(d.refundId, { ...known!, state: event.type === 'PaymentRefundRefused' ? 'REFUSED' : 'RELEASED', detail });
        return { ...state, reserved: reserve(state, d.amount, -1) };
      }
      default:
        return 'to' in event.data ? { ...state, status: event.data.to } : state;
    }
  },
};

export interface RefundState {
  refund: RefundCreatedData | null;
  status: RefundStatus | null;
}

export type RefundCommand = (
  | { type: 'CreateRefund'; refund: Omit<RefundCreatedData, 'createdAt'>; now: Date }
  /** The provider's word on the reversal; `reason` is recorded with FAILED, UNSETTLED and EXPIRED. */
  | { type: 'EndRefund'; outcome: RefundOutcome; reason: string; now: Date }
) & TenantScoped;

export const refundDecider: Decider<RefundCommand, RefundEvent, RefundState> = {
  initialState: { refund: null, status: null },

  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.refund?.clientId ?? null, 'refund not found');
    if (command.type === 'CreateRefund') {
      // Ids are the process manager's (deterministic): a second creation is the same step run again.
      if (state.refund) return [];
      if (!toDecimal(command.refund.totalAmount).greaterThan(0)) throw domainInvalid(`a refund must be positive, not ${command.refund.totalAmount}`);
      return [{ type: 'RefundCreated', data: { ...command.refund, createdAt: at } }];
    }
    const refund = state.refund;
    if (!refund || !state.status) throw domainNotFound('refund not found');
    if (state.status === command.outcome) return [];
    if (state.status !== 'RECEIVED') {
      throw domainPrecondition(`refund ${refund.refundId} is ${state.status}; it cannot become ${command.outcome}`);
    }
    const data = {
      refundId: refund.refundId, parentPaymentId: refund.parentPaymentId, clientId: refund.clientId, currency: refund.currency,
      amount: refund.totalAmount, fundingSource: refund.funding.source,
      accountId: refund.funding.source === 'ACCOUNT' ? refund.funding.accountId : null, identityId: refund.identityId,
      identityEmail: refund.identityEmail, customerId: refund.customerId, from: 'RECEIVED', to: command.outcome, at,
    };
    if (command.outcome === 'SETTLED') return [{ type: 'RefundSettled', data }];
    return [{ type: OUTCOME_EVENTS[command.outcome], data: { ...data, reason: command.reason } }];
  },

  evolve(state, event) {
    if (event.type === 'RefundCreated') return { refund: event.data, status: 'RECEIVED' };
    return { ...state, status: event.data.to as RefundStatus };
  },
};

/** The refunds' part of the parent's stream (../stream.ts): steps of the refund flows, which wait once at their end. */
export const parentRefundPart: StreamPart<ParentRefundCommand, ParentRefundEvent, ParentRefundState, ParentStreamEvent> = {
  decider: parentRefundDecider, readModels: { RequestRefund: 'none', AnswerRefund: 'none', EndRefund: 'none' },
};

/** `refund-<refundId>`: steps of the refund flows, which wait once at their end. */
export const refundStreamType = streamType('refund-', { decider: refundDecider, readModels: { CreateRefund: 'none', EndRefund: 'none' } });
