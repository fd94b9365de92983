/**
 * Read-model rows as the API answers them. A session's status and a link's are judged against `now`: an open
 * session past expiresAt is EXPIRED, a link past its active period is inactive, before any job records it.
 */
import type { CheckoutSessionView, PaymentLinkView } from './ports.ts';
import { formatAmount } from '../domain/money.ts';
import { effectiveStatus } from './decider.ts';

/** Where the hosted pages live, under the service's own origin. */
export const SESSION_PAGE_PATH = '/checkout';
export const LINK_PAGE_PATH = '/pay';

function terms(row: CheckoutSessionView | PaymentLinkView) {
  return {
    checkoutToken: row.checkout_token,
    currency: row.currency,
    preTaxAmount: formatAmount(row.pre_tax_amount, row.currency),
    totalAmount: formatAmount(row.total_amount, row.currency),
    items: row.items,
    paymentMethodsAllowed: row.payment_methods_allowed,
    destinations: row.destinations,
    owner: row.owner,
    customer: row.customer,
    customerRequirements: row.customer_requirements,
    successUrl: row.success_url,
    failedUrl: row.failed_url,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function sessionRecord(row: CheckoutSessionView, origin: string, now: Date) {
  return {
    id: row.session_id,
    paymentLinkId: row.payment_link_id,
    ...terms(row),
    url: `${origin}${SESSION_PAGE_PATH}/${row.checkout_token}`,
    status: effectiveStatus(row.status, row.expires_at, now),
    paymentConfigs: row.payment_configs,
    redirectUrl: row.redirect_url,
    paymentId: row.payment_id,
    expiresAt: row.expires_at.toISOString(),
  };
}

export function linkRecord(row: PaymentLinkView, origin: string, now: Date) {
  return {
    id: row.link_id,
    ...terms(row),
    url: `${origin}${LINK_PAGE_PATH}/${row.checkout_token}`,
    status: !row.deleted && row.active_until.getTime() > now.getTime(),
    duration: row.duration,
    expiresAt: row.active_until.toISOString(),
  };
}
