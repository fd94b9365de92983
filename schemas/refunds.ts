/**
 * Refunds: the request body, the refund child (the interface's Refund shape), the per-parent summary, the
 * cross-parent listing's query and answer, and the provider's signed notification of a refund's end.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountPattern } from './common.ts';

export const refundStatusValues = ['RECEIVED', 'SETTLED', 'FAILED', 'EXPIRED', 'UNSETTLED'] as const;
export const refundOutcomeValues = ['SETTLED', 'FAILED', 'UNSETTLED', 'EXPIRED'] as const;

const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;
const amount = { type: 'string', pattern: amountPattern, examples: ['250.00'] } as const;
const time = { type: 'string', format: 'date-time' } as const;

export const createRefundSchema = {
  title: 'CreateRefund',
  type: 'object',
  additionalProperties: false,
  properties: {
    amount: { ...amount, description: 'at the parent’s currency scale; omitted = all that is left to refund' },
    reason: { type: 'string', minLength: 1, maxLength: 500, description: 'kept as the refund child’s description' },
  },
} as const;

export const refundSchema = {
  title: 'Refund',
  description: 'A refund child of a SETTLED payment.',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'parentPaymentId', 'status', 'totalAmount', 'currency', 'createdAt', 'description'],
  properties: {
    id: { type: 'string' },
    parentPaymentId: { type: 'string' },
    status: { type: 'string', enum: refundStatusValues },
    totalAmount: { type: 'string' },
    currency: { type: 'string' },
    createdAt: time,
    description: { type: ['string', 'null'], description: 'the reason given with the request' },
  },
} as const;
export type RefundRecord = FromSchema<typeof refundSchema>;

export const refundListSchema = {
  title: 'RefundList',
  type: 'object',
  additionalProperties: false,
  required: ['total', 'refunds'],
  properties: {
    total: { type: 'integer', minimum: 0, description: 'refunds matching the filters' },
    refunds: { type: 'array', items: refundSchema },
  },
} as const;

export const refundSummarySchema = {
  title: 'RefundSummary',
  type: 'object',
  additionalProperties: false,
  required: ['parentPaymentId', 'parentAmount', 'currency', 'totalRefunded', 'totalInProgress', 'totalFailed', 'maxRefundable',
    'completedCount', 'inProgressCount', 'failedCount'],
  properties: {
    parentPaymentId: { type: 'string' },
    parentAmount: { type: 'string', description: 'the parent’s totalAmount' },
    currency: { type: 'string' },
    totalRefunded: { type: 'string', description: 'sum of SETTLED refunds' },
    totalInProgress: { type: 'string', description: 'sum of RECEIVED refunds' },
    totalFailed: { type: 'string', description: 'sum of FAILED, EXPIRED and UNSETTLED refunds' },
    maxRefundable: { type: 'string', description: 'parentAmount − (totalRefunded + totalInProgress)' },
    completedCount: { type: 'integer', minimum: 0 },
    inProgressCount: { type: 'integer', minimum: 0 },
    failedCount: { type: 'integer', minimum: 0 },
  },
} as const;

/** An ISO 8601 instant or calendar day; a day bound covers the whole day (UTC). */
const isoBound = { type: 'string', anyOf: [{ format: 'date-time' }, { format: 'date' }], examples: ['2026-01-31'] } as const;

export const listRefundsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    clientId: { ...idRef, description: 'the caller’s own client id (the default); another client’s is 404' },
    status: { type: 'string', enum: refundStatusValues },
    dateFrom: { ...isoBound, description: 'createdAt at or after (ISO 8601 instant, or a day: from its start, UTC)' },
    dateTo: { ...isoBound, description: 'createdAt at or before (ISO 8601 instant, or a day: to its end, UTC)' },
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
    offset: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 0 },
  },
} as const;

export const refundNotificationSchema = {
  title: 'RefundNotification',
  type: 'object',
  additionalProperties: false,
  required: ['refundId', 'outcome', 'signature'],
  properties: {
    refundId: { ...idRef, description: 'the refund child’s id' },
    outcome: { type: 'string', enum: refundOutcomeValues, description: 'what became of the reversal' },
    signature: {
      type: 'string', pattern: '^[0-9a-fA-F]{64}$', examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
      description: 'hex HMAC-SHA256 of `<refundId>:<outcome>` under PROVIDER_SECRET',
    },
  },
} as const;
