/** Read-model rows → the two answer shapes: the flat payment record and the detailed transaction shape. */
import type { DetailedPayment, PaymentRecord } from '../../schemas/payments.ts';
import type { PaymentRow } from '../../projections/payments.ts';
import { formatAmount, toDecimal } from '../ledger/money.ts';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

function lifecycle(row: PaymentRow) {
  return {
    status: row.status,
    accountNumber: row.account_number,
    totalAmount: formatAmount(row.total_amount, row.currency),
    currency: row.currency,
    settlement: row.settlement,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    expiresAt: iso(row.expires_at),
    authorizedAt: iso(row.authorized_at),
    capturedAt: iso(row.captured_at),
    receivedAt: iso(row.received_at),
    settledAt: iso(row.settled_at),
    expiredAt: iso(row.expired_at),
    unsettledAt: iso(row.unsettled_at),
    unsettledReason: row.unsettled_reason as PaymentRecord['unsettledReason'],
    failedAt: iso(row.failed_at),
    failureReason: row.failure_reason,
    settlementBatchId: row.settlement_batch_id,
    customerId: row.customer_id,
    checkoutSessionId: row.checkout_session_id,
    reviewDocuments: row.review_documents,
  };
}

export function paymentRecord(row: PaymentRow): PaymentRecord {
  return {
    id: row.payment_id,
    externalId: row.external_id,
    identityId: row.identity_id,
    identityExternalId: row.identity_external_id,
    description: row.description,
    product: row.product,
    type: row.type as PaymentRecord['type'],
    purchaseAmount: row.purchase_amount,
    purchaseCurrency: row.purchase_currency,
    fees: row.fees,
    refundedAt: iso(row.refunded_at),
    origins: row.origins,
    destinations: row.destinations,
    ...lifecycle(row),
  } as PaymentRecord;
}

export function detailedPayment(row: PaymentRow, providerName: string): DetailedPayment {
  const net = toDecimal(row.total_amount).minus(toDecimal(row.fee_amount));
  const exchange = row.exchange;
  const exchangeStatus = row.status === 'SETTLED' ? 'EXECUTED' : row.status === 'EXPIRED' ? 'EXPIRED'
    : row.status === 'FAILED' || row.status === 'UNSETTLED' ? 'CANCELLED' : 'CREATED';
  return {
    id: row.payment_id,
    externalId: row.external_id,
    externalIdentityId: row.identity_external_id,
    identityId: row.identity_id,
    origins: row.origins,
    originAmount: { amount: row.purchase_amount ?? formatAmount(row.total_amount, row.currency), currency: row.purchase_currency ?? row.currency },
    destinations: row.destinations,
    destinationAmount: { amount: formatAmount(net, row.currency), currency: row.currency },
    type: row.type as DetailedPayment['type'],
    product: row.product,
    enrich: null,
    fees: row.fees.map((fee) => ({ name: fee.name, type: 'TRANSACTION' as const, method: fee.type, currency: fee.currency, value: fee.value, amount: fee.amount })),
    exchange: exchange ? {
      id: `${row.payment_id}:exchange`, type: 'SPOT', product: exchange.product, status: exchangeStatus, exchangeRate: exchange.rate,
      fee: '0', executable: exchangeStatus === 'CREATED', provider: providerName, marketValue: exchange.marketValue,
      quoteExpiresAt: exchange.quoteExpiresAt, createdAt: exchange.quotedAt, updatedAt: row.updated_at.toISOString(),
    } : null,
    metaData: { description: row.description, image: null, category: row.product },
    ...lifecycle(row),
  } as DetailedPayment;
}
