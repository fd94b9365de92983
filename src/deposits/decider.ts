/**
 * An unassigned deposit, pure (README, "Deposits without a destination"):
 *
 *   (none) ─record→ CREATED (awaiting assignment) ─request→ assigning ─credited→ SETTLED (PAID | UNDERPAID | OVERPAID)
 *                      │                                  └─refused→ CREATED again
 *                      └─ expiresAt passes, nothing in flight → EXPIRED (refund to the originator due)
 *
 * Only this stream decides that a deposit is assigned once and never after it expired: two assignments sent
 * together find one of them in flight, and the expiry job finds it assigning or assigned. Whether the account
 * takes the funds is its own stream's answer, brought here by the assignment's process manager.
 */
import type { Decider } from '../domain/decider.ts';
import type { StreamPart } from '../eventstore/streams.ts';
import { domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import { AmountError, formatAmount, parseAmount, toDecimal, zeroAmount } from '../domain/money.ts';
import { PARENT_REFUND_EVENT_TYPES } from '../payments/refunds/events.ts';
import type { PaymentSettledData } from '../ledger/events.ts';
import type { CompanionStatus, DepositCompanionCreatedData, DepositEventData, DepositReceivedData, DepositStreamEvent, ReconciliationStatus } from './events.ts';

/** The account the deposit is being assigned to, as its own stream describes it. */
export interface AssignmentTarget {
  accountId: string;
  accountNumber: string;
  identityId: string;
}

/** The account's answer to the assignment's credit (decided on the account's stream). */
export type AssignmentAnswer =
  | { outcome: 'CREDITED'; creditEventId: string }
  | { outcome: 'REFUSED'; accountStatus: string };

export type DepositCommand = (
  /** A new deposit; on a stream that already holds anything (a repeated notification) nothing is recorded. */
  | { type: 'RecordDeposit'; deposit: Omit<DepositReceivedData, 'createdAt' | 'expiresAt'>; lifetimeMs: number; now: Date }
  /** `companionId`: the UNDERPAID companion of another deposit that this one pays (checked by the caller on its stream), or null. */
  | { type: 'RequestAssignment'; target: AssignmentTarget; expectedAmount: string | null; companionId?: string | null; now: Date }
  /** `companionId`: the id the companion child takes when the amounts differ. */
  | { type: 'RecordAssignmentAnswer'; accountId: string; answer: AssignmentAnswer; companionId: string; now: Date }
  | { type: 'ExpireDeposit'; refundPaymentId: string; now: Date }
) & TenantScoped;

export type DepositStatus = 'CREATED' | 'SETTLED' | 'EXPIRED';

export interface Assignment extends AssignmentTarget {
  expectedAmount: string | null;
  /** The companion (amount still due of another deposit) it pays, or null. */
  companionId: string | null;
}

export interface DepositState {
  deposit: DepositReceivedData | null;
  /** The stream holds something other than a deposit (a payment, a matched deposit): never a deposit now. */
  foreign: boolean;
  status: DepositStatus | null;
  /** The assignment asked and not yet answered. */
  inFlight: Assignment | null;
  /** The account it was assigned to, and when, once SETTLED; the account's credit; the companion it pays, if any. */
  assigned: (AssignmentTarget & { at: string; creditEventId: string; companionId: string | null }) | null;
  /** The refund child owed to the originator once the deposit expired. */
  refundDue: string | null;
  /** The companion child, when the assignment reconciled UNDERPAID or OVERPAID. */
  companion: { paymentId: string; kind: 'UNDERPAID' | 'OVERPAID'; difference: string } | null;
}

function existing(state: DepositState): DepositReceivedData {
  if (!state.deposit) throw domainNotFound('payment not found');
  return state.deposit;
}

/** `expected` against what arrived: the status, and the difference the companion child holds (zero when PAID). */
export function reconcile(received: string, expected: string | null, currency: string): { status: ReconciliationStatus; difference: string } {
  if (expected === null) return { status: 'PAID', difference: zeroAmount(currency) };
  const delta = toDecimal(received).minus(toDecimal(expected));
  const status: ReconciliationStatus = delta.isZero() ? 'PAID' : delta.isNegative() ? 'UNDERPAID' : 'OVERPAID';
  return { status, difference: formatAmount(delta.abs(), currency) };
}

/** `expectedAmount` canonical at the deposit's currency scale, or a 400 naming the field. */
export function expectedIn(text: string, currency: string): string {
  try {
    return formatAmount(parseAmount(text, currency, { positive: true }), currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`expectedAmount: ${error.message}`);
    throw error;
  }
}

function assigned(state: DepositState, command: Extract<DepositCommand, { type: 'RecordAssignmentAnswer' }>, at: string): DepositStreamEvent[] {
  const deposit = state.deposit!;
  const target = state.inFlight!;
  if (command.answer.outcome === 'REFUSED') {
    return [{ type: 'DepositAssignmentRefused', data: { paymentId: deposit.paymentId, clientId: deposit.clientId,
      accountId: target.accountId, accountStatus: command.answer.accountStatus, at } }];
  }
  const { currency, totalAmount } = deposit;
  const { status, difference } = reconcile(totalAmount, target.expectedAmount, currency);
  const relatedPaymentId = status === 'PAID' ? null : command.companionId;
  const purchase = { paymentId: deposit.paymentId, clientId: deposit.clientId, externalId: deposit.externalId, totalAmount,
    currency, customerId: deposit.customerId, at };
  const where = { accountId: target.accountId, accountNumber: target.accountNumber, identityId: target.identityId };
  const expectedAmount = target.expectedAmount ?? totalAmount;
  // Where it went first, so that payment.settled's payload already names the account's identity and the companion.
  const events: DepositStreamEvent[] = [
    { type: 'DepositAssigned', data: { ...purchase, ...where, expectedAmount, reconciliationStatus: status, relatedPaymentId,
      creditEventId: command.answer.creditEventId } },
    { type: 'PaymentSettled', data: { paymentId: deposit.paymentId, from: 'CREATED', to: 'SETTLED', at, clientId: deposit.clientId,
      accountId: target.accountId, currency, totalAmount, feeAmount: zeroAmount(currency), netAmount: totalAmount,
      settlementBatchId: null, creditEventId: command.answer.creditEventId } },
  ];
  if (relatedPaymentId) {
    const data = { ...purchase, ...where, expectedAmount, difference, relatedPaymentId };
    events.push(status === 'UNDERPAID' ? { type: 'PurchaseUnderpaid', data } : { type: 'PurchaseOverpaid', data });
  }
  return events;
}

export const depositDecider: Decider<DepositCommand, DepositStreamEvent, DepositState> = {
  initialState: { deposit: null, foreign: false, status: null, inFlight: null, assigned: null, refundDue: null, companion: null },

  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.deposit?.clientId ?? null, 'payment not found');
    if (command.type === 'RecordDeposit') {
      if (state.deposit || state.foreign) return [];
      const expiresAt = new Date(command.now.getTime() + command.lifetimeMs).toISOString();
      const deposit: DepositReceivedData = { ...command.deposit, createdAt: at, expiresAt };
      return [
        { type: 'DepositReceived', data: deposit },
        { type: 'PurchasePendingAssignment', data: { paymentId: deposit.paymentId, clientId: deposit.clientId, externalId: deposit.externalId,
          totalAmount: deposit.totalAmount, currency: deposit.currency, customerId: deposit.customerId, expiresAt, at } },
      ];
    }
    const deposit = existing(state);
    switch (command.type) {
      case 'RequestAssignment': {
        if (state.status !== 'CREATED') throw domainPrecondition(`payment ${deposit.paymentId} is ${state.status}; it cannot be assigned`);
        if (state.inFlight) {
          throw domainPrecondition(`payment ${deposit.paymentId} is being assigned to account ${state.inFlight.accountId}; it cannot be assigned twice`);
        }
        if (Date.parse(deposit.expiresAt) <= command.now.getTime()) {
          throw domainPrecondition(`payment ${deposit.paymentId} expired at ${deposit.expiresAt}; it cannot be assigned`);
        }
        const expectedAmount = command.expectedAmount === null ? null : expectedIn(command.expectedAmount, deposit.currency);
        return [{ type: 'DepositAssignmentRequested', data: { paymentId: deposit.paymentId, clientId: deposit.clientId, ...command.target,
          expectedAmount, at, companionId: command.companionId ?? null } }];
      }
      case 'RecordAssignmentAnswer':
        // Another process (or the reactor) recorded this answer first: nothing left to do.
        if (!state.inFlight || state.inFlight.accountId !== command.accountId) return [];
        return assigned(state, command, at);
      case 'ExpireDeposit':
        if (state.status !== 'CREATED') throw domainPrecondition(`payment ${deposit.paymentId} is ${state.status}; it cannot expire`);
        if (state.inFlight) throw domainPrecondition(`payment ${deposit.paymentId} is being assigned; it cannot expire now`);
        if (Date.parse(deposit.expiresAt) > command.now.getTime()) {
          throw domainPrecondition(`payment ${deposit.paymentId} awaits assignment until ${deposit.expiresAt}`);
        }
        return [
          { type: 'PaymentExpired', data: { paymentId: deposit.paymentId, from: 'CREATED', to: 'EXPIRED', at, reason: 'EXPIRES_AT' } },
          { type: 'DepositRefundDue', data: { paymentId: deposit.paymentId, clientId: deposit.clientId, externalId: deposit.externalId,
            totalAmount: deposit.totalAmount, currency: deposit.currency, customerId: deposit.customerId, at,
            refundPaymentId: command.refundPaymentId, originator: deposit.originator, reference: deposit.reference } },
        ];
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'DepositReceived':
        return { ...state, deposit: event.data, status: 'CREATED' };
      case 'DepositAssignmentRequested': {
        const { accountId, accountNumber, identityId, expectedAmount, companionId } = event.data;
        return { ...state, inFlight: { accountId, accountNumber, identityId, expectedAmount, companionId } };
      }
      case 'DepositAssignmentRefused':
        return { ...state, inFlight: null };
      case 'PaymentSettled':
        return state.deposit ? { ...state, status: 'SETTLED', inFlight: null } : { ...state, foreign: true };
      case 'PurchaseUnderpaid':
      case 'PurchaseOverpaid':
        return { ...state, companion: { paymentId: event.data.relatedPaymentId, kind: event.type === 'PurchaseUnderpaid' ? 'UNDERPAID' : 'OVERPAID',
          difference: event.data.difference } };
      case 'PaymentExpired':
        return state.deposit ? { ...state, status: 'EXPIRED' } : { ...state, foreign: true };
      case 'DepositAssigned': {
        const { accountId, accountNumber, identityId, at, creditEventId } = event.data;
        // Folded before PaymentSettled (which clears inFlight): the request still names the companion it pays.
        return { ...state, assigned: { accountId, accountNumber, identityId, at, creditEventId, companionId: state.inFlight?.companionId ?? null } };
      }
      case 'DepositRefundDue':
        return { ...state, refundDue: event.data.refundPaymentId };
      case 'PurchasePendingAssignment':
        return state;
      default:
        // The refunds of a settled deposit are decided on this stream by the refunds' decider; nothing here.
        if (state.deposit && (PARENT_REFUND_EVENT_TYPES as readonly string[]).includes(event.type)) return state;
        // Any other event (PaymentCreated, a companion's creation): this stream is not an unassigned deposit.
        return { ...state, foreign: true };
    }
  },
};

/**
 * A deposit's companion child, pure (README, "Deposits without a destination"):
 *
 *   OVERPAID: SETTLED from its creation (the surplus came with the deposit); nothing moves it.
 *   UNDERPAID: CREATED (the amount still due) ─a further deposit assigned to it→ SETTLED
 *                                             ├─the client cancels→ CANCELLED
 *                                             └─expiresAt passes (48 h after its creation)→ EXPIRED
 *
 * Only this stream decides how the amount still due ends, once: a payment, a cancellation and an expiry sent
 * together find the first one recorded. The payment comes last in its flow (after the paying deposit's account took
 * the funds): one refused here (the companion was cancelled or expired meanwhile) leaves that deposit settled into
 * the account as any deposit, and the companion as it ended.
 */
export type CompanionCommand = (
  /**
   * The child of an under- or overpaid assignment, created once: its id (the payment's and the event's) is derived
   * from the deposit, and a stream that holds it already records nothing.
   */
  | { type: 'CreateCompanion'; companion: DepositCompanionCreatedData }
  /** The deposit `depositPaymentId` was assigned to pay it; `creditEventId`: that deposit's credit on the account. */
  | { type: 'PayCompanion'; depositPaymentId: string; creditEventId: string; now: Date }
  | { type: 'CancelCompanion'; now: Date }
  | { type: 'ExpireCompanion'; now: Date }
) & TenantScoped;

/** What a companion's stream records: its own events and the payments' status changes it reuses. */
export type CompanionStreamEvent =
  | { type: 'DepositCompanionCreated'; data: DepositCompanionCreatedData; id?: string }
  | { type: 'DepositCompanionPaid'; data: DepositEventData<'DepositCompanionPaid'> }
  | { type: 'DepositCompanionCancelled'; data: DepositEventData<'DepositCompanionCancelled'> }
  | { type: 'PaymentSettled'; data: PaymentSettledData & { from: 'CREATED'; to: 'SETTLED' } }
  | { type: 'PaymentExpired'; data: { paymentId: string; from: 'CREATED'; to: 'EXPIRED'; at: string; reason: 'EXPIRES_AT' } };

export interface CompanionState {
  companion: DepositCompanionCreatedData | null;
  status: CompanionStatus | null;
  /** The deposit that paid it, once SETTLED by one. */
  paidBy: string | null;
}

/** The companion, if it still holds an amount due: UNDERPAID, CREATED and not past its expiresAt; else why not (a 422's words). */
export function companionOpen(state: CompanionState, now: Date): { open: true } | { open: false; why: string } {
  const companion = state.companion!;
  if (companion.kind !== 'UNDERPAID') return { open: false, why: `holds the surplus of deposit ${companion.parentPaymentId} (OVERPAID), not an amount due` };
  if (state.status !== 'CREATED') return { open: false, why: `is ${state.status}` };
  if (companion.expiresAt !== null && Date.parse(companion.expiresAt) <= now.getTime()) return { open: false, why: `expired at ${companion.expiresAt}` };
  return { open: true };
}

function openCompanion(state: CompanionState, now: Date, what: string): DepositCompanionCreatedData {
  const open = companionOpen(state, now);
  if (!open.open) {
    throw domainPrecondition(`payment ${state.companion!.paymentId} ${open.why}; only a CREATED companion holding the amount still due (UNDERPAID) can be ${what}`);
  }
  return state.companion!;
}

export const companionDecider: Decider<CompanionCommand, CompanionStreamEvent, CompanionState> = {
  initialState: { companion: null, status: null, paidBy: null },

  decide(command, state) {
    refuseOtherTenants(command.tenant, state.companion?.clientId ?? null, 'payment not found');
    if (command.type === 'CreateCompanion') {
      if (state.companion) return [];
      return [{ type: 'DepositCompanionCreated', id: command.companion.paymentId, data: command.companion }];
    }
    if (!state.companion) throw domainNotFound('payment not found');
    const at = command.now.toISOString();
    switch (command.type) {
      case 'PayCompanion': {
        // Recorded before, by this flow or the deposits' reactor.
        if (state.status === 'SETTLED' && state.paidBy === command.depositPaymentId) return [];
        const companion = state.companion;
        if (companion.kind !== 'UNDERPAID' || state.status !== 'CREATED') {
          throw domainPrecondition(`payment ${companion.paymentId} is ${state.status}; only a CREATED companion holding the amount still due can be paid`);
        }
        const { paymentId, clientId, accountId, currency, totalAmount } = companion;
        return [
          { type: 'DepositCompanionPaid', data: { paymentId, clientId, depositPaymentId: command.depositPaymentId, at } },
          { type: 'PaymentSettled', data: { paymentId, from: 'CREATED', to: 'SETTLED', at, clientId, accountId, currency, totalAmount,
            feeAmount: zeroAmount(currency), netAmount: totalAmount, settlementBatchId: null, creditEventId: command.creditEventId } },
        ];
      }
      case 'CancelCompanion': {
        const { paymentId, clientId } = openCompanion(state, command.now, 'cancelled');
        return [{ type: 'DepositCompanionCancelled', data: { paymentId, clientId, from: 'CREATED', to: 'CANCELLED', at } }];
      }
      case 'ExpireCompanion': {
        const { paymentId, expiresAt } = state.companion;
        // Paid, cancelled or expired already, an OVERPAID one, or not due yet: nothing to do.
        if (state.status !== 'CREATED' || expiresAt === null || Date.parse(expiresAt) > command.now.getTime()) return [];
        return [{ type: 'PaymentExpired', data: { paymentId, from: 'CREATED', to: 'EXPIRED', at, reason: 'EXPIRES_AT' } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'DepositCompanionCreated':
        return { companion: event.data, status: event.data.status, paidBy: null };
      case 'DepositCompanionPaid':
        return { ...state, paidBy: event.data.depositPaymentId };
      case 'DepositCompanionCancelled':
      case 'PaymentSettled':
      case 'PaymentExpired':
        // A stream that is no companion's (a payment, a deposit) has no companion to move.
        return state.companion ? { ...state, status: event.data.to } : state;
      default:
        return state;
    }
  },
};

/**
 * The deposit's part of its stream (src/payments/stream.ts): every command is a step of a flow (the notification,
 * the assignment, the expiry), which waits once at its end for every type its steps may write.
 */
export const depositPart: StreamPart<DepositCommand, DepositStreamEvent, DepositState> = { decider: depositDecider, readModels: {
  RecordDeposit: 'none', RequestAssignment: 'none', RecordAssignmentAnswer: 'none', ExpireDeposit: 'none',
} };

/** The companion's part of its stream: its creation and payment are steps of the assignment; its end, a request's own. */
export const companionPart: StreamPart<CompanionCommand, CompanionStreamEvent, CompanionState> = { decider: companionDecider, readModels: {
  CreateCompanion: 'none', PayCompanion: 'none', CancelCompanion: 'written', ExpireCompanion: 'written',
} };
