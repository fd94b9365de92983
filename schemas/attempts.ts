/**
 * Payment attempts: a payment checked before it runs (nodes, limits, fees, exchange) and kept with status
 * ATTEMPT. The create body takes the interface's node shapes: an origin may be a payment initiation
 * (`PAYMENT_INITATION`, the interface's spelling, with `paymentInitiation {origin, referenceId}`), and a node's
 * `identity` may name `userId`, `nickname` and `dni`.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { nodeTypes } from './catalog.ts';
import { paginationSchema, pageQueryProperties } from './common.ts';
import { currencySchema } from './currencies.ts';
import { dayMonthYearSchema } from './accounts.ts';
import { MAX_PAYMENT_NODES, paymentInitiationType, paymentNodeInputSchema } from './paymentNodes.ts';
import { detailedCoreProperties, paymentTypes, settlementValues } from './payments.ts';

const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;
const amount = { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,18})?$', examples: ['1500'] } as const;
const nullableText = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;

/** An attempt's origin or destination: a payment node, or (origins only) a payment initiation. */
export const attemptNodeInputSchema = {
  title: 'PaymentAttemptNode',
  type: 'object',
  description: 'a payment node (`type` and exactly the one node object it names), or an origin of type PAYMENT_INITATION '
    + 'with `paymentInitiation` and no node object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    ...paymentNodeInputSchema.properties,
    type: { type: 'string', enum: [...nodeTypes, paymentInitiationType], description: 'a node type, or PAYMENT_INITATION (origins only)' },
    identity: {
      type: 'object',
      additionalProperties: false,
      description: 'who holds the node; `userId` and `dni` are the interface’s names of externalId and documentNumber',
      properties: {
        userId: text(120), name: text(120), lastname: text(120), nickname: text(120), dni: text(120),
        documentNumber: text(120), externalId: text(120),
      },
    },
    paymentInitiation: {
      type: 'object',
      additionalProperties: false,
      required: ['origin'],
      description: 'the pay-in method the payer starts from their bank, with PAYMENT_INITATION only',
      properties: {
        origin: { type: 'string', minLength: 1, maxLength: 40, examples: ['FINTOC'],
          description: 'a pay-in method as GET /payment-origins lists it: its `type` (FINTOC) or its `origin` (fintoc); not CARD' },
        referenceId: { ...text(120), description: 'your reference of the initiation' },
      },
    },
  },
} as const;
export type AttemptNodeInput = FromSchema<typeof attemptNodeInputSchema>;

const attemptNodesSchema = { type: 'array', maxItems: MAX_PAYMENT_NODES, items: attemptNodeInputSchema } as const;

export const createAttemptSchema = {
  title: 'CreatePaymentAttempt',
  type: 'object',
  additionalProperties: false,
  required: ['identityId', 'accountNumber', 'type', 'currency'],
  properties: {
    identityId: { ...idRef, description: 'the identity that owns the destination account' },
    accountNumber: { type: 'string', minLength: 1, maxLength: 32, description: 'the destination account (one of yours, ACTIVE)' },
    type: { type: 'string', enum: paymentTypes, description: 'not REFUND (400): a refund is made by POST /payments/{id}/refund' },
    currency: { ...currencySchema, description: 'the account’s currency' },
    totalAmount: { ...amount, description: 'what the account would be paid; when omitted, the sum of the destinations’ amounts, '
      + 'else of the origins’ amounts (when they are in `currency`)' },
    externalId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._:/-]+$', description: 'your reference (not unique: an order may be attempted many times)' },
    identityExternalId: text(128),
    description: text(500),
    product: text(100),
    purchaseAmount: { ...amount, description: 'what the payer would pay in purchaseCurrency (your quote); the catalog rate when omitted' },
    purchaseCurrency: { ...currencySchema, description: 'the currency the payer pays in, when it is not `currency`' },
    customerId: { ...idRef, description: 'the payer, a customer of yours' },
    origins: { ...attemptNodesSchema, description: 'how the payer pays (pay-in nodes or a payment initiation); the first names the method' },
    destinations: { ...attemptNodesSchema, description: 'where the funds go (pay-out nodes)' },
  },
} as const;
export type CreateAttempt = FromSchema<typeof createAttemptSchema>;

/** The attempt record (create, retrieve, list): the detailed transaction shape, with status ATTEMPT. */
export const attemptSchema = {
  title: 'PaymentAttempt',
  type: 'object',
  additionalProperties: false,
  required: ['externalId', ...Object.keys(detailedCoreProperties) as Array<keyof typeof detailedCoreProperties>, 'status', 'accountNumber',
    'totalAmount', 'currency', 'description', 'purchaseAmount', 'purchaseCurrency', 'settlement', 'customerId', 'createdAt', 'updatedAt',
    'expiresAt', 'authorizedAt', 'capturedAt', 'refundedAt', 'identityExternalId', 'expiredAt'],
  properties: {
    externalId: nullableText,
    ...detailedCoreProperties,
    identityExternalId: { ...nullableText, description: 'the attempt record’s name of externalIdentityId (the same value)' },
    status: { type: 'string', enum: ['ATTEMPT'] },
    accountNumber: { type: 'string' },
    totalAmount: { type: 'string' },
    currency: { type: 'string' },
    description: nullableText,
    purchaseAmount: nullableText,
    purchaseCurrency: nullableText,
    settlement: { type: 'string', enum: settlementValues, description: 'the settlement period of the pay-in method' },
    customerId: nullableText,
    createdAt: time,
    updatedAt: time,
    expiresAt: { ...nullableTime, description: 'when the exchange quote ends (null without an exchange)' },
    authorizedAt: { type: 'null', description: 'an attempt never runs' },
    capturedAt: { type: 'null' },
    refundedAt: { type: 'null' },
    expiredAt: { type: 'null', description: 'an attempt never expires (its status stays ATTEMPT); its quote’s end is expiresAt' },
  },
} as const;

export const listAttemptsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    identityId: idRef,
    accountNumber: { type: 'string', minLength: 1, maxLength: 32 },
    type: { type: 'string', enum: paymentTypes },
    startDate: dayMonthYearSchema,
    endDate: dayMonthYearSchema,
    ...pageQueryProperties,
    next: { ...pageQueryProperties.cursor, description: 'the interface’s name of `cursor`: the `next` value of a previous page' },
  },
} as const;

export const getAttemptQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: paymentTypes, description: 'when given, an attempt of another type is not found' },
    product: { ...text(100), description: 'when given, an attempt of another product is not found' },
  },
} as const;

/**
 * GET /payment-attempts answers the interface's shape for this list: the items as `data` (every other list
 * answers them as `results`) beside the same pagination object.
 */
export const attemptPageSchema = {
  title: 'PaymentAttemptPage',
  type: 'object',
  additionalProperties: false,
  required: ['data', 'pagination'],
  properties: { data: { type: 'array', items: attemptSchema }, pagination: paginationSchema },
} as const;
