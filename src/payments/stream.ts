/**
 * `payment-<paymentId>`: one stream, one decider. The stream holds a payment's life, and beside it the facts that
 * are decided against it: its refunds' reservations (the ceiling: ./refunds/decider.ts), and, for a payment that is
 * a deposit without a destination or a deposit's companion, their own (src/deposits/decider.ts). Each part keeps its
 * logic where it lives; this composes them, so that every event of the stream is folded once, into one state
 * holding each part's, and a command goes to the part that decides it.
 */
import { composeParts, streamType } from '../eventstore/streams.ts';
import { companionPart, depositPart } from '../deposits/decider.ts';
import { paymentPart } from './decider.ts';
import { parentRefundPart } from './refunds/decider.ts';

export const paymentStreamType = streamType('payment-', composeParts({
  payment: paymentPart, refunds: parentRefundPart, deposit: depositPart, companion: companionPart,
}));

export type PaymentStreamState = (typeof paymentStreamType)['decider']['initialState'];
