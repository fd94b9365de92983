/**
 * The sandbox provider: behaves like the rails, deterministically. It approves every authorization but the
 * declined test card, delivers exactly what a payment expects, and asks for no review, except where a
 * documented trigger (./triggers.ts) says otherwise.
 */
import type { PaymentCreatedData } from '../events.ts';
import type { AuthorizationDecision, PaymentProvider } from '../provider.ts';
import { currencyScale, formatAmount, toDecimal } from '../../domain/money.ts';
import { DECLINED_CARD, hasTrigger } from './triggers.ts';

export const SANDBOX_PROVIDER_NAME = 'payments-ledger-sandbox';

function paysWithDeclinedCard(payment: PaymentCreatedData): boolean {
  return payment.origins.some((node) => {
    const card = (node as { card?: { bin?: string; last4?: string } }).card;
    return node.type === 'CARD' && card?.bin === DECLINED_CARD.bin && card.last4 === DECLINED_CARD.last4;
  });
}

export class SandboxProvider implements PaymentProvider {
  readonly name = SANDBOX_PROVIDER_NAME;

  constructor(private readonly defaultQuoteTtlSeconds: number) {}

  authorize(payment: PaymentCreatedData): AuthorizationDecision {
    if (paysWithDeclinedCard(payment) || hasTrigger(payment.description, 'decline')) {
      return { approved: false, reason: 'CARD_DECLINED' };
    }
    return { approved: true };
  }

  receivedAmount(payment: PaymentCreatedData): string {
    if (!hasTrigger(payment.description, 'unsettled')) return payment.totalAmount;
    // One minor unit more than expected: the amounts differ, so reconciliation cannot settle it.
    const unit = toDecimal('1').dividedBy(toDecimal('10').pow(currencyScale(payment.currency)));
    return formatAmount(toDecimal(payment.totalAmount).plus(unit), payment.currency);
  }

  reviewReason(payment: { description?: string | null }): string | null {
    return hasTrigger(payment.description, 'review') ? 'SANDBOX_REVIEW_TRIGGER' : null;
  }

  quoteTtlSeconds(payment: { description?: string | null }): number {
    return hasTrigger(payment.description, 'expireQuote') ? 0 : this.defaultQuoteTtlSeconds;
  }

  refundOutcome(refund: { description: string | null }): 'SETTLED' | 'FAILED' | 'UNSETTLED' | 'EXPIRED' {
    if (hasTrigger(refund.description, 'refundFail')) return 'FAILED';
    if (hasTrigger(refund.description, 'refundUnsettled')) return 'UNSETTLED';
    if (hasTrigger(refund.description, 'refundExpire')) return 'EXPIRED';
    return 'SETTLED';
  }
}
