/**
 * Read-model rows → the two answer shapes: the flat payment record and the detailed transaction shape. The
 * detailed shape of a payment attempt (src/attempts/) is mapped by the same `detailedTransaction`.
 */
import type { DetailedPayment, PaymentRecord } from '../../schemas/payments.ts';
import { formatAmount, toDecimal } from '../domain/money.ts';
import type { PaymentView } from './ports.ts';
import { nodeKeyOf, type PaymentNode } from '../../schemas/paymentNodes.ts';
import type { PaymentExchange, PaymentFee } from './events.ts';
import { cardMaskedAsNow } from './events/nodes.ts';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

function lifecycle(row: PaymentView) {
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
    reconciliationStatus: row.reconciliation_status as PaymentRecord['reconciliationStatus'],
    relatedPaymentId: row.related_payment_id,
    parentPaymentId: row.parent_payment_id,
  };
}

export function paymentRecord(row: PaymentView): PaymentRecord {
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
    origins: row.origins.map(shownNode),
    destinations: row.destinations.map(shownNode),
    ...lifecycle(row),
  } as PaymentRecord;
}

/** The merchant a transaction pays: its identity, as the read model has it (projections/payments.queries.ts, merchantsOf). */
export interface Merchant {
  identity_id: string;
  name: string;
  country: string | null;
}

/** What the detailed shape needs of a transaction: a payment and an attempt alike. */
export interface Transaction {
  id: string;
  /** Null while a deposit awaits assignment. */
  identityId: string | null;
  identityExternalId: string | null;
  origins: readonly TransactionNode[];
  destinations: readonly TransactionNode[];
  totalAmount: string;
  currency: string;
  feeAmount: string;
  purchaseAmount: string | null;
  purchaseCurrency: string | null;
  exchange: PaymentExchange | null;
  /** Where the exchange stands: a quote (CREATED), done with the payment (EXECUTED), or dropped. */
  exchangeStatus: 'CREATED' | 'EXECUTED' | 'EXPIRED' | 'CANCELLED';
  fees: readonly PaymentFee[];
  type: string;
  product: string | null;
  description: string | null;
  updatedAt: Date;
}

/** A node as stored, by a payment or an attempt (an attempt's PAYMENT_INITATION origin names its method). */
export type TransactionNode = PaymentNode & {
  paymentInitiation?: { method: string; referenceId: string | null };
  identity: Record<string, string> | null;
};

export interface DetailContext {
  providerName: string;
  /** The identity paid, or null when the read model no longer has it. */
  merchant: Merchant | null;
}

type Fields = Record<string, string | undefined>;
/** The node object under the type's node key (none for a payment initiation). */
const objectOf = (node: TransactionNode): Fields | undefined =>
  (node as unknown as Record<string, Fields | undefined>)[nodeKeyOf[node.type as keyof typeof nodeKeyOf] ?? ''];

/** An account the node names (ACCOUNT, BANK_ACCOUNT, a bank rail), or null when it names none. */
function accountRecordOf(node: TransactionNode | undefined) {
  const fields = node && objectOf(node);
  const number = fields?.accountNumber ?? fields?.clabe ?? fields?.cvu;
  if (!fields || (number === undefined && fields.iban === undefined)) return null;
  return {
    id: fields.id ?? null, identity: node!.identity?.externalId ?? null, externalId: node!.externalId, accountNumber: number ?? null,
    nickName: node!.name, country: fields.country ?? null, currency: node!.currency, financialInstitution: fields.bank ?? null,
    type: fields.typeAccount ?? fields.accountType ?? null, accountHolder: fields.accountHolder ?? null,
    accountHolderDni: fields.accountHolderDni ?? null, createdAt: null, updatedAt: null, iban: fields.iban ?? null,
    sortCode: fields.sortCode ?? null,
  };
}

function walletRecordOf(node: TransactionNode | undefined, providerName: string) {
  const wallet = node?.wallet as Fields | undefined;
  if (!wallet) return null;
  return {
    id: wallet.accountId ?? null, externalId: node!.externalId, address: wallet.address ?? null, token: wallet.token ?? null,
    network: wallet.network ?? null, type: null, multisigType: null, passphrase: null, status: null,
    provider: wallet.provider ?? providerName, keys: null, extendedData: [], createdAt: null, updatedAt: null,
  };
}

/** A node as responses show it: its card masked as now (a read model built before from version 1 events may hold one). */
function shownNode<N extends { card?: unknown }>(node: N): N {
  return node.card ? { ...node, card: cardMaskedAsNow(node.card as { number: string; last4: string; bin?: string }) } : node;
}

/** The node and what the detailed shape adds to it, each present (null where it does not apply). */
function detailedNode(node: TransactionNode) {
  const wallet = node.wallet as Fields | undefined;
  const initiation = node.paymentInitiation;
  return {
    ...shownNode(node),
    referenceId: initiation?.referenceId ?? wallet?.referenceId ?? null,
    processing: node.settlement === 'INSTANT' ? 'INSTANT_PAYMENT' : 'BATCH_PAYMENT',
    paymentInitiation: initiation
      ? { method: initiation.method, referenceId: initiation.referenceId, publicKey: null, widgetLink: null, signatureToken: null, origin: null }
      : null,
    crypto: wallet
      ? { address: wallet.address!, token: wallet.token ?? null, network: wallet.network ?? null, extendedData: [] }
      : null,
  };
}

/** The detailed transaction shape's own fields, for a payment (`detailedPayment`) and an attempt alike. */
export function detailedTransaction(tx: Transaction, context: DetailContext) {
  const net = toDecimal(tx.totalAmount).minus(toDecimal(tx.feeAmount));
  const { exchange } = tx;
  const crypto = [...tx.origins, ...tx.destinations].find((node) => node.wallet !== undefined);
  return {
    id: tx.id,
    externalIdentityId: tx.identityExternalId,
    identityId: tx.identityId,
    origins: tx.origins.map(detailedNode),
    originAmount: { amount: tx.purchaseAmount ?? formatAmount(tx.totalAmount, tx.currency), currency: tx.purchaseCurrency ?? tx.currency },
    destinations: tx.destinations.map(detailedNode),
    destinationAmount: { amount: formatAmount(net, tx.currency), currency: tx.currency },
    type: tx.type,
    product: tx.product,
    enrich: context.merchant ? {
      merchantCode: context.merchant.identity_id, merchantName: context.merchant.name,
      location: {
        country: context.merchant.country, administrativeAreaLevel1: null, administrativeAreaLevel2: null,
        administrativeAreaLevel3: null, street: null, zipcode: null, optionalAddress: null,
      },
    } : null,
    fees: tx.fees.map((fee) => ({ name: fee.name, type: 'TRANSACTION' as const, method: fee.type, currency: fee.currency, value: fee.value, amount: fee.amount })),
    exchange: exchange ? {
      id: `${tx.id}:exchange`, type: 'SPOT', product: exchange.product, status: tx.exchangeStatus,
      origin: accountRecordOf(tx.origins[0]), destination: walletRecordOf(crypto, context.providerName),
      exchangeRate: exchange.rate, fee: '0', executable: tx.exchangeStatus === 'CREATED', provider: context.providerName,
      marketValue: exchange.marketValue,
      extendedData: [
        { name: 'quotedAt', value: exchange.quotedAt },
        { name: 'quoteExpiresAt', value: exchange.quoteExpiresAt },
        { name: 'purchaseAmount', value: tx.purchaseAmount ?? exchange.marketValue },
      ],
      quoteExpiresAt: exchange.quoteExpiresAt, createdAt: exchange.quotedAt, updatedAt: tx.updatedAt.toISOString(),
    } : null,
    metaData: { description: tx.description, image: null, category: tx.product },
  };
}

export function detailedPayment(row: PaymentView, context: DetailContext): DetailedPayment {
  const exchangeStatus = row.status === 'SETTLED' ? 'EXECUTED' : row.status === 'EXPIRED' ? 'EXPIRED'
    : row.status === 'FAILED' || row.status === 'UNSETTLED' ? 'CANCELLED' : 'CREATED';
  return {
    externalId: row.external_id,
    ...detailedTransaction({
      id: row.payment_id, identityId: row.identity_id, identityExternalId: row.identity_external_id,
      origins: row.origins as TransactionNode[], destinations: row.destinations as TransactionNode[],
      totalAmount: row.total_amount, currency: row.currency, feeAmount: row.fee_amount, purchaseAmount: row.purchase_amount,
      purchaseCurrency: row.purchase_currency, exchange: row.exchange, exchangeStatus, fees: row.fees, type: row.type,
      product: row.product, description: row.description, updatedAt: row.updated_at,
    }, context),
    ...lifecycle(row),
    refundedAt: iso(row.refunded_at),
  } as DetailedPayment;
}
