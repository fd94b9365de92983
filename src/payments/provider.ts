/**
 * The port behind which payment rails sit. The service ships the sandbox provider (./sandbox); an adapter for
 * a real rail answers the same questions from the rail's own answers.
 */
import type { PaymentCreatedData } from './events.ts';

export type AuthorizationDecision = { approved: true } | { approved: false; reason: string };

export interface PaymentProvider {
  /** Shown as the exchange provider and in audit trails. */
  readonly name: string;
  /** The issuer's answer to a card authorization. */
  authorize(payment: PaymentCreatedData): AuthorizationDecision;
  /** What the rail reports it delivered for a payment it notifies as received. */
  receivedAmount(payment: PaymentCreatedData): string;
  /** A review the provider asks for before the payment runs (fraud screening), or null. */
  reviewReason(payment: { description?: string | null }): string | null;
  /** How long a quote for an exchange stays good, in seconds. */
  quoteTtlSeconds(payment: { description?: string | null }): number;
  /** What becomes of a refund the rail was handed (reported back by a notification, or by the sandbox's autopilot). */
  refundOutcome(refund: { description: string | null }): 'SETTLED' | 'FAILED' | 'UNSETTLED' | 'EXPIRED';
}
