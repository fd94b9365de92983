/** An attempt's read-model row → the attempt record: the detailed transaction shape payments answer, status ATTEMPT. */
import type { AttemptView } from './ports.ts';
import { formatAmount } from '../domain/money.ts';
import { detailedTransaction, type DetailContext, type TransactionNode } from '../payments/records.ts';

export function attemptRecord(row: AttemptView, context: DetailContext) {
  return {
    externalId: row.external_id,
    ...detailedTransaction({
      id: row.attempt_id, identityId: row.identity_id, identityExternalId: row.identity_external_id,
      origins: row.origins as TransactionNode[], destinations: row.destinations as TransactionNode[],
      totalAmount: row.total_amount, currency: row.currency, feeAmount: row.fee_amount, purchaseAmount: row.purchase_amount,
      purchaseCurrency: row.purchase_currency, exchange: row.exchange, exchangeStatus: 'CREATED', fees: row.fees, type: row.type,
      product: row.product, description: row.description, updatedAt: row.created_at,
    }, context),
    status: 'ATTEMPT' as const,
    accountNumber: row.account_number,
    totalAmount: formatAmount(row.total_amount, row.currency),
    currency: row.currency,
    description: row.description,
    purchaseAmount: row.purchase_amount,
    purchaseCurrency: row.purchase_currency,
    settlement: row.settlement,
    customerId: row.customer_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.created_at.toISOString(),
    expiresAt: row.exchange?.quoteExpiresAt ?? null,
    authorizedAt: null,
    capturedAt: null,
    refundedAt: null,
    identityExternalId: row.identity_external_id,
    expiredAt: null,
  };
}
