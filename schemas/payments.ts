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
import { nodeIdentitySchema, paymentInitiationType, paymentNodeSchema, paymentNodesInputSchema } from './paymentNodes.ts';
import { nodeTypeSchema, nodeTypes } from './catalog.ts';

export const paymentTypes = [
  'PURCHASE', 'PAYMENT', 'P2P', 'TOPUP_ACCOUNT', 'LOCAL_DEPOSIT', 'REFUND', 'WITHDRAWAL_ACCOUNT', 'COLLECT', 'FEE', 'REMITTANCE',
] as const;
/** CANCELLED: a deposit's companion whose amount still due the client cancelled (POST /payments/{id}/cancel). */
export const paymentStatusValues = [
  'CREATED', 'PENDING', 'ATTEMPT', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'EXPIRED', 'UNSETTLED',
  'REQUIRES_REVIEW', 'FAILED', 'REFUNDED', 'CANCELLED',
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
    type: { type: 'string', enum: paymentTypes, description: 'not REFUND (400): a refund is made by POST /payments/{id}/refund, as a child of a SETTLED payment' },
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
  accountNumber: { type: ['string', 'null'], description: 'null while a deposit awaits assignment' },
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
  unsettledReason: {
    type: ['string', 'null'], enum: ['ACCOUNT_NOT_ACTIVE', 'AMOUNT_MISMATCH', 'REVERSAL_NOT_RECONCILED', null],
    description: 'REVERSAL_NOT_RECONCILED: a refund child whose reversal the provider could not reconcile',
  },
  failedAt: nullableTime,
  failureReason: nullableText,
  settlementBatchId: nullableText,
  customerId: nullableText,
  checkoutSessionId: nullableText,
  reviewDocuments: { type: 'integer', minimum: 0, description: 'documents attached for the review' },
  reconciliationStatus: {
    type: ['string', 'null'], enum: ['PAID', 'UNDERPAID', 'OVERPAID', null],
    description: 'an assigned deposit: its amount against the expectedAmount of the assignment',
  },
  relatedPaymentId: {
    ...nullableText,
    description: 'an under- or overpaid deposit: its companion child holding the difference; the companion: its deposit; a refund child: the refunded payment',
  },
  parentPaymentId: { ...nullableText, description: 'a child payment (a deposit’s companion, a refund child of type REFUND): its parent' },
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
    identityId: { ...nullableText, description: 'null while a deposit awaits assignment' },
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

const nullableString = { type: ['string', 'null'] } as const;
const nameValueSchema = {
  type: 'object', additionalProperties: false, required: ['name', 'value'],
  properties: { name: { type: 'string' }, value: { type: 'string' } },
} as const;

/** An account as the detailed shape shows it: what the node or the read model knows, null for the rest. */
export const accountRecordSchema = {
  title: 'AccountRecord',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'identity', 'externalId', 'accountNumber', 'nickName', 'country', 'currency', 'financialInstitution', 'type',
    'accountHolder', 'accountHolderDni', 'createdAt', 'updatedAt', 'iban', 'sortCode'],
  properties: {
    id: nullableString, identity: nullableString, externalId: nullableString, accountNumber: nullableString, nickName: nullableString,
    country: nullableString, currency: nullableString, financialInstitution: nullableString, type: nullableString,
    accountHolder: nullableString, accountHolderDni: nullableString, createdAt: nullableString, updatedAt: nullableString,
    iban: nullableString, sortCode: nullableString,
  },
} as const;

/** A stablecoin wallet as the detailed shape shows it (from a CRYPTO node's `wallet`). */
export const walletRecordSchema = {
  title: 'WalletRecord',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'externalId', 'address', 'token', 'network', 'type', 'multisigType', 'passphrase', 'status', 'provider', 'keys',
    'extendedData', 'createdAt', 'updatedAt'],
  properties: {
    id: nullableString, externalId: nullableString, address: nullableString, token: nullableString, network: nullableString,
    type: nullableString, multisigType: nullableString, passphrase: { type: 'null', description: 'never shown' }, status: nullableString,
    provider: nullableString,
    keys: { type: 'null', description: 'custody keys are never shown' },
    extendedData: { type: 'array', items: nameValueSchema },
    createdAt: nullableString, updatedAt: nullableString,
  },
} as const;

export const exchangeSchema = {
  title: 'Exchange',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'product', 'status', 'origin', 'destination', 'exchangeRate', 'fee', 'executable', 'provider', 'marketValue',
    'extendedData', 'quoteExpiresAt', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['SPOT'] },
    product: { type: 'string', description: 'FROM:TO, e.g. CLP:USDC' },
    status: { type: 'string', enum: ['CREATED', 'EXECUTED', 'EXPIRED', 'CANCELLED'] },
    origin: { oneOf: [accountRecordSchema, { type: 'null' }], description: 'the payer’s account, when the first origin names one (ACCOUNT, BANK_ACCOUNT and the bank rails)' },
    destination: { oneOf: [walletRecordSchema, { type: 'null' }], description: 'the wallet of the first CRYPTO node, when there is one' },
    exchangeRate: { type: 'string', description: 'how many purchaseCurrency one currency buys' },
    fee: { type: 'string' },
    executable: { type: 'boolean' },
    provider: { type: 'string' },
    marketValue: { type: 'string', description: 'the purchase amount at the catalog rate' },
    extendedData: { type: 'array', items: nameValueSchema, description: 'the quote: quotedAt, quoteExpiresAt, purchaseAmount' },
    quoteExpiresAt: time,
    createdAt: time,
    updatedAt: time,
  },
} as const;

/** Merchant enrichment: the identity the transaction pays (merchantCode is its id). */
export const enrichSchema = {
  title: 'Enrich',
  type: 'object',
  additionalProperties: false,
  required: ['merchantCode', 'merchantName', 'location'],
  properties: {
    merchantCode: { type: 'string', description: 'the identity id' },
    merchantName: { type: 'string' },
    location: {
      type: 'object', additionalProperties: false,
      required: ['country', 'administrativeAreaLevel1', 'administrativeAreaLevel2', 'administrativeAreaLevel3', 'street', 'zipcode', 'optionalAddress'],
      properties: {
        country: nullableString, administrativeAreaLevel1: nullableString, administrativeAreaLevel2: nullableString,
        administrativeAreaLevel3: nullableString, street: nullableString, zipcode: nullableString, optionalAddress: nullableString,
      },
    },
  },
} as const;

/**
 * A node in the detailed transaction shape: the stored node, and what the interface adds, each present and null
 * where it does not apply: `referenceId`, `processing`, `paymentInitiation` (PAYMENT_INITATION origins of an
 * attempt) and `crypto` (CRYPTO nodes).
 */
export const detailedNodeSchema = {
  ...paymentNodeSchema,
  title: 'TransactionNode',
  required: [...paymentNodeSchema.required, 'referenceId', 'processing', 'paymentInitiation', 'crypto'],
  properties: {
    ...paymentNodeSchema.properties,
    type: { type: 'string', enum: [...nodeTypes, paymentInitiationType] },
    identity: { oneOf: [nodeIdentitySchema, { type: 'null' }] },
    referenceId: { ...nullableString, description: 'the payment initiation’s or the wallet’s reference' },
    processing: { type: 'string', enum: ['INSTANT_PAYMENT', 'BATCH_PAYMENT'], description: 'INSTANT settlement, or a settlement batch (T+1, T+2)' },
    paymentInitiation: {
      oneOf: [{
        type: 'object', additionalProperties: false,
        required: ['method', 'referenceId', 'publicKey', 'widgetLink', 'signatureToken', 'origin'],
        properties: {
          method: { ...nodeTypeSchema, description: 'the pay-in method the payer starts from their bank' },
          referenceId: nullableString,
          publicKey: { ...nullableString, description: 'null in the sandbox' },
          widgetLink: { ...nullableString, description: 'null in the sandbox' },
          signatureToken: { ...nullableString, description: 'null in the sandbox' },
          origin: { oneOf: [accountRecordSchema, { type: 'null' }], description: 'the payer’s account, known once the payer authorizes (null before)' },
        },
      }, { type: 'null' }],
    },
    crypto: {
      oneOf: [{
        type: 'object', additionalProperties: false, required: ['address', 'token', 'network', 'extendedData'],
        properties: {
          address: { type: 'string' }, token: nullableString, network: nullableString,
          extendedData: { type: 'array', items: { type: 'array', items: nameValueSchema } },
        },
      }, { type: 'null' }],
    },
  },
} as const;

/** What the detailed shape of a payment and of an attempt share (src/payments/records.ts maps both). */
export const detailedCoreProperties = {
  id: { type: 'string' },
  externalIdentityId: nullableText,
  identityId: { ...nullableText, description: 'null while a deposit awaits assignment (an attempt always names one)' },
  origins: { type: 'array', items: detailedNodeSchema },
  originAmount: { ...amountAndCurrency, description: 'what the payer pays' },
  destinations: { type: 'array', items: detailedNodeSchema },
  destinationAmount: { ...amountAndCurrency, description: 'what the account is credited: totalAmount less fees' },
  type: { type: 'string', enum: paymentTypes },
  product: nullableText,
  enrich: { oneOf: [enrichSchema, { type: 'null' }], description: 'the merchant: the identity paid (null if it was deleted)' },
  fees: { type: 'array', items: detailedFeeSchema },
  exchange: { oneOf: [exchangeSchema, { type: 'null' }] },
  metaData: {
    type: 'object', additionalProperties: false, required: ['description', 'image', 'category'],
    properties: { description: nullableText, image: nullableText, category: nullableText },
  },
} as const;
const detailedCoreRequired = Object.keys(detailedCoreProperties) as Array<keyof typeof detailedCoreProperties>;

export const detailedPaymentSchema = {
  title: 'PaymentDetail',
  description: 'The detailed transaction shape: GET /payments/:id, and GET /payments with service-api-version 24-04-2025 (v2).',
  type: 'object',
  additionalProperties: false,
  required: ['externalId', ...detailedCoreRequired, ...lifecycleRequired, 'refundedAt'],
  properties: {
    externalId: { type: 'string' },
    ...detailedCoreProperties,
    ...lifecycleProperties,
    refundedAt: { ...nullableTime, description: 'when a refund of the payment last settled, or null (a refunded payment stays SETTLED)' },
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
        required: ['revision', 'type', 'occurredAt', 'recordedAt', 'actor', 'data'],
        properties: {
          revision: { type: 'integer', minimum: 0 },
          type: { type: 'string' },
          occurredAt: { ...time, description: 'the business time: a test clock’s time for an event recorded under one, else recordedAt' },
          recordedAt: { ...time, description: 'when the event store recorded it (real time)' },
          actor: nullableText,
          data: { type: 'object' },
        },
      },
    },
  },
} as const;
