/**
 * Payments: the create body, the flat record (v1 and the POST answers), the detailed transaction shape (GET
 * /payments/:id and v2 lists), the list query, the provider's signed notification, review, documents, and the
 * auditor's event history.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountPattern, pageOf } from './common.ts';
import { currencySchema } from './currencies.ts';
import { createCustomerSchema, customerSchema } from './customers.ts';
import { dayMonthYearSchema } from './accounts.ts';
import { paymentNodeSchema, paymentNodesInputSchema } from './paymentNodes.ts';

export const paymentTypes = [
  'PURCHASE', 'PAYMENT', 'P2P', 'TOPUP_ACCOUNT', 'LOCAL_DEPOSIT', 'REFUND', 'WITHDRAWAL_ACCOUNT', 'COLLECT', 'FEE', 'REMITTANCE',
] as const;
export const paymentStatusValues = [
  'CREATED', 'PENDING', 'ATTEMPT', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'EXPIRED', 'UNSETTLED',
  'REQUIRES_REVIEW', 'FAILED', 'REFUNDED',
] as const;
export const settlementValues = ['INSTANT', 'T+1', 'T+2'] as const;
export const reviewDecisions = ['APPROVED', 'REJECTED'] as const;
export const paymentSortFields = ['createdAt', 'updatedAt', 'totalAmount', 'status', 'type', 'externalId', 'expiresAt'] as const;

const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;
const amount = { type: 'string', pattern: amountPattern, examples: ['1500'], description: 'decimal string at the currency’s scale' } as const;
const nullableText = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const time = { type: 'string', format: 'date-time' } as const;

export const createPaymentSchema = {
  title: 'CreatePayment',
  type: 'object',
  additionalProperties: false,
  required: ['externalId', 'identityId', 'accountNumber', 'totalAmount', 'currency', 'type'],
  properties: {
    externalId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._:/-]+$', description: 'your reference; unique per client (a second use is 409)' },
    identityId: { ...idRef, description: 'the identity that owns the destination account' },
    identityExternalId: { type: 'string', minLength: 1, maxLength: 128 },
    accountNumber: { type: 'string', minLength: 1, maxLength: 32, description: 'the destination account (one of yours)' },
    totalAmount: { ...amount, description: 'what the account is paid, in its currency, at the currency’s scale' },
    currency: { ...currencySchema, description: 'must be the account’s currency' },
    description: { type: 'string', minLength: 1, maxLength: 500 },
    product: { type: 'string', minLength: 1, maxLength: 100 },
    type: { type: 'string', enum: paymentTypes },
    purchaseAmount: { ...amount, description: 'what the payer pays in purchaseCurrency (your quote); computed from the catalog rate when omitted' },
    purchaseCurrency: { ...currencySchema, description: 'the currency the payer pays in, when it is not `currency`' },
    expiresAt: { ...time, description: 'the payment expires if not received by then' },
    customerId: { ...idRef, description: 'the payer, a customer of yours; reviews use its operation level (BASIC without one)' },
    customer: {
      ...createCustomerSchema, title: 'PaymentPayer',
      description: 'the payer’s fields instead of customerId: matched on documentNumber, else created (autoCreated: true); ' +
        'payments sent together naming the same new payer all take the one customer created',
    },
    origins: { ...paymentNodesInputSchema, description: 'how the payer pays (pay-in nodes); the first names the method' },
    destinations: { ...paymentNodesInputSchema, description: 'where the funds go beyond the account (pay-out nodes)' },
  },
} as const;
export type CreatePayment = FromSchema<typeof createPaymentSchema>;

export const feeSchema = {
  title: 'Fee',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'value', 'amount', 'currency'],
  properties: {
    name: { type: 'string' },
    type: { type: 'string', enum: ['FIXED', 'PERCENTAGE'] },
    value: { type: 'string', description: 'the percentage, or the fixed amount' },
    amount: { type: 'string', description: 'what is charged, in the payment’s currency' },
    currency: { type: 'string' },
  },
} as const;

/** Lifecycle fields both shapes carry. */
const lifecycleProperties = {
  status: { type: 'string', enum: paymentStatusValues },
  accountNumber: { type: 'string' },
  totalAmount: { type: 'string' },
  currency: { type: 'string' },
  settlement: { type: 'string', enum: settlementValues, description: 'the settlement period of the pay-in method' },
  createdAt: time,
  updatedAt: time,
  expiresAt: nullableTime,
  authorizedAt: nullableTime,
  capturedAt: nullableTime,
  receivedAt: nullableTime,
  settledAt: nullableTime,
  expiredAt: nullableTime,
  unsettledAt: nullableTime,
  unsettledReason: { type: ['string', 'null'], enum: ['ACCOUNT_NOT_ACTIVE', 'AMOUNT_MISMATCH', null] },
  failedAt: nullableTime,
  failureReason: nullableText,
  settlementBatchId: nullableText,
  customerId: nullableText,
  checkoutSessionId: nullableText,
  reviewDocuments: { type: 'integer', minimum: 0, description: 'documents attached for the review' },
} as const;
const lifecycleRequired = Object.keys(lifecycleProperties) as Array<keyof typeof lifecycleProperties>;

export const paymentSchema = {
  title: 'Payment',
  description: 'The flat payment record: POST answers, and GET /payments without a version header (v1).',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'externalId', 'identityId', 'identityExternalId', 'description', 'product', 'type', 'purchaseAmount',
    'purchaseCurrency', 'fees', 'refundedAt', 'origins', 'destinations', ...lifecycleRequired],
  properties: {
    id: { type: 'string' },
    externalId: { type: 'string' },
    identityId: { type: 'string' },
    identityExternalId: nullableText,
    description: nullableText,
    product: nullableText,
    type: { type: 'string', enum: paymentTypes },
    purchaseAmount: nullableText,
    purchaseCurrency: nullableText,
    fees: { type: 'array', items: feeSchema },
    refundedAt: { ...nullableTime, description: 'when a refund of the payment last settled, or null (a refunded payment stays SETTLED)' },
    origins: { type: 'array', items: paymentNodeSchema },
    destinations: { type: 'array', items: paymentNodeSchema },
    ...lifecycleProperties,
  },
} as const;
export type PaymentRecord = FromSchema<typeof paymentSchema>;

const amountAndCurrency = {
  type: 'object', additionalProperties: false, required: ['amount', 'currency'],
  properties: { amount: { type: 'string' }, currency: { type: 'string' } },
} as const;

export const detailedFeeSchema = {
  title: 'TransactionFee',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'method', 'currency', 'value', 'amount'],
  properties: {
    name: { type: 'string' },
    type: { type: 'string', enum: ['TRANSACTION'] },
    method: { type: 'string', enum: ['FIXED', 'PERCENTAGE'] },
    currency: { type: 'string' },
    value: { type: 'string' },
    amount: { type: 'string' },
  },
} as const;

export const exchangeSchema = {
  title: 'Exchange',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'product', 'status', 'exchangeRate', 'fee', 'executable', 'provider', 'marketValue', 'quoteExpiresAt', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['SPOT'] },
    product: { type: 'string', description: 'FROM:TO, e.g. CLP:USDC' },
    status: { type: 'string', enum: ['CREATED', 'EXECUTED', 'EXPIRED', 'CANCELLED'] },
    exchangeRate: { type: 'string', description: 'how many purchaseCurrency one currency buys' },
    fee: { type: 'string' },
    executable: { type: 'boolean' },
    provider: { type: 'string' },
    marketValue: { type: 'string', description: 'the purchase amount at the catalog rate' },
    quoteExpiresAt: time,
    createdAt: time,
    updatedAt: time,
  },
} as const;

export const detailedPaymentSchema = {
  title: 'PaymentDetail',
  description: 'The detailed transaction shape: GET /payments/:id, and GET /payments with service-api-version 24-04-2025 (v2).',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'externalId', 'externalIdentityId', 'identityId', 'origins', 'originAmount', 'destinations', 'destinationAmount',
    'type', 'product', 'enrich', 'fees', 'exchange', 'metaData', ...lifecycleRequired],
  properties: {
    id: { type: 'string' },
    externalId: { type: 'string' },
    externalIdentityId: nullableText,
    identityId: { type: 'string' },
    origins: { type: 'array', items: paymentNodeSchema },
    originAmount: { ...amountAndCurrency, description: 'what the payer pays' },
    destinations: { type: 'array', items: paymentNodeSchema },
    destinationAmount: { ...amountAndCurrency, description: 'what the account is credited: totalAmount less fees' },
    type: { type: 'string', enum: paymentTypes },
    product: nullableText,
    enrich: { type: 'null', description: 'merchant enrichment; not provided by the sandbox provider' },
    fees: { type: 'array', items: detailedFeeSchema },
    exchange: { oneOf: [exchangeSchema, { type: 'null' }] },
    metaData: {
      type: 'object', additionalProperties: false, required: ['description', 'image', 'category'],
      properties: { description: nullableText, image: nullableText, category: nullableText },
    },
    ...lifecycleProperties,
  },
} as const;
export type DetailedPayment = FromSchema<typeof detailedPaymentSchema>;

export const listPaymentsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    identityId: idRef,
    type: { type: 'string', enum: paymentTypes },
    accountNumber: { type: 'string', minLength: 1, maxLength: 32 },
    status: { type: 'string', enum: paymentStatusValues, description: 'REFUNDED is accepted and matches nothing (legacy)' },
    startDate: dayMonthYearSchema,
    endDate: dayMonthYearSchema,
    sort: { type: 'string', pattern: `^(${paymentSortFields.join('|')}):(asc|desc)$`, default: 'createdAt:desc', description: 'field:asc or field:desc' },
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
    offset: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 0 },
    checkoutSessionId: idRef,
  },
} as const;

export const paymentPageSchema = pageOf(paymentSchema);
export const detailedPaymentPageSchema = pageOf(detailedPaymentSchema);
export const paymentListSchema = { anyOf: [paymentPageSchema, detailedPaymentPageSchema] } as const;

export const providerNotificationSchema = {
  title: 'ProviderNotification',
  type: 'object',
  additionalProperties: false,
  required: ['transactionId', 'signature'],
  properties: {
    transactionId: { ...idRef, description: 'the payment id' },
    signature: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'], description: 'hex HMAC-SHA256 of transactionId under PROVIDER_SECRET' },
  },
} as const;

export const reviewDecisionSchema = {
  title: 'ReviewDecision',
  type: 'object',
  additionalProperties: false,
  required: ['decision'],
  properties: { decision: { type: 'string', enum: reviewDecisions } },
} as const;

export const attachPaymentDocumentSchema = {
  title: 'AttachPaymentDocument',
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 60, description: 'e.g. INVOICE, PROOF_OF_FUNDS, ID' },
    url: { type: 'string', format: 'uri', maxLength: 2000, pattern: '^https://' },
    contentType: { type: 'string', maxLength: 100, pattern: '^[a-z]+/[a-zA-Z0-9.+-]+$' },
  },
} as const;

export const paymentDocumentSchema = {
  title: 'PaymentDocument',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'paymentId', 'type', 'url', 'contentType', 'createdAt'],
  properties: {
    id: { type: 'string' },
    paymentId: { type: 'string' },
    type: { type: 'string' },
    url: nullableText,
    contentType: nullableText,
    createdAt: time,
  },
} as const;

export const paymentCustomerSchema = {
  title: 'PaymentCustomer',
  type: 'object',
  additionalProperties: false,
  required: ['paymentId', 'attached', 'customer'],
  properties: {
    paymentId: { type: 'string' },
    attached: { type: 'boolean', description: 'whether the payment names a customer' },
    customer: { oneOf: [customerSchema, { type: 'null' }] },
  },
} as const;

export const paymentHistorySchema = {
  title: 'PaymentHistory',
  type: 'object',
  additionalProperties: false,
  required: ['paymentId', 'events'],
  properties: {
    paymentId: { type: 'string' },
    events: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['revision', 'type', 'occurredAt', 'actor', 'data'],
        properties: {
          revision: { type: 'integer', minimum: 0 },
          type: { type: 'string' },
          occurredAt: time,
          actor: nullableText,
          data: { type: 'object' },
        },
      },
    },
  },
} as const;
