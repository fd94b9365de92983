/**
 * The Refunds endpoints of the interface: refund a SETTLED payment, its children and their summary, the
 * cross-parent listing, and the provider's signed notification of a refund's end.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { idParamSchema } from '../../../schemas/common.ts';
import {
  createRefundSchema, listRefundsQuerySchema, refundListSchema, refundNotificationSchema, refundSchema, refundSummarySchema,
  type RefundRecord,
} from '../../../schemas/refunds.ts';
import { refundsOfParent, refundsPage, refundTotalsOfParent, type RefundRow } from '../../../projections/refunds.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../../http/route.ts';
import type { Services } from '../../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../../http/tenancy.ts';
import { invalidParam, notFound, unauthorized } from '../../http/errors.ts';
import { Decimal, formatAmount, toDecimal } from '../../domain/money.ts';
import { endRefund, loadRefund, requestRefund } from './handlers.ts';
import { clockOfPayment, onClockMetadata, platformOn, timeOf } from '../../testClocks/time.ts';
import { ownedPayment } from '../../../projections/payments.queries.ts';
import { ownedRefund } from '../../../projections/refunds.queries.ts';

const tags = ['Refunds'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const paymentNotFound = { description: 'no such payment for this client; another client’s payment answers the same, and nothing changes', schema: errorSchema } as const;

/** The provider signs `<refundId>:<outcome>`: hex HMAC-SHA256 under PROVIDER_SECRET, compared in constant time. */
export function refundNotificationSignature(secret: string, refundId: string, outcome: string): string {
  return createHmac('sha256', secret).update(`${refundId}:${outcome}`).digest('hex');
}

function signatureMatches(secret: string, refundId: string, outcome: string, signature: string): boolean {
  const expected = Buffer.from(refundNotificationSignature(secret, refundId, outcome), 'hex');
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function refundRecord(row: RefundRow): RefundRecord {
  return {
    id: row.refund_id, parentPaymentId: row.parent_payment_id, status: row.status,
    totalAmount: formatAmount(row.total_amount, row.currency), currency: row.currency,
    createdAt: row.created_at.toISOString(), description: row.description,
  };
}

/** The bounds of GET /refunds: an instant is itself; a day runs from its start to its end (UTC). */
function bound(value: string | undefined, edge: 'from' | 'to', name: string): { at: Date; inclusive: boolean } | null {
  if (value === undefined) return null;
  const day = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const at = new Date(day ? `${value}T00:00:00.000Z` : value);
  if (Number.isNaN(at.getTime())) throw invalidParam(`${name}: not an ISO 8601 instant or day`);
  if (day && edge === 'to') return { at: new Date(at.getTime() + 86_400_000), inclusive: false };
  return { at, inclusive: true };
}

export function refundRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/payments/:id/refund', operationId: 'refundPayment', summary: 'Refund a SETTLED payment',
      description: 'Creates a refund child (status RECEIVED) of `amount`, or of all that is left to refund when `amount` is omitted. ' +
        'The parent payment’s stream reserves the amount against what is left (totalAmount less every refund settled or in progress), ' +
        'so concurrent requests can never refund more than the payment took; then the parent’s destination account holds the amount ' +
        '(its available funds drop) and the child is created. The parent stays SETTLED. 422 (naming the reason) when the parent is not ' +
        'SETTLED, the amount exceeds what is left, or the account is not ACTIVE or its available funds are short; then nothing is held ' +
        'and nothing is reserved. The sandbox provider then settles the child (see the README for the triggers of every other end). ' +
        'A LOCAL_DEPOSIT settled into an account (matched on arrival, or assigned) is refunded the same way, from that account; a deposit ' +
        'awaiting assignment or expired is not SETTLED (422), and a deposit’s companion child is refused (422: refund the deposit); so ' +
        'is a refund child (422: a refund cannot be refunded).',
      tags, access: 'client', schemas: { params: idParamSchema, body: createRefundSchema },
      responses: {
        201: { description: 'the refund child as created (RECEIVED; reads show where the provider has taken it since)', schema: refundSchema },
        404: paymentNotFound,
        422: { description: 'the parent is not SETTLED, the amount exceeds what is left to refund, or the account cannot pay it out', schema: errorSchema },
      },
      handler: (input) => refundPayment(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/:id/refund', operationId: 'listPaymentRefunds', summary: 'The refund children of a payment',
      description: 'Every refund child of the payment, oldest first.',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the children', schema: refundListSchema }, 404: paymentNotFound },
      handler: (input) => listPaymentRefunds(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/:id/refunds', operationId: 'getPaymentRefundSummary', summary: 'The refund summary of a payment',
      description: 'totalRefunded sums SETTLED children, totalInProgress RECEIVED ones, totalFailed FAILED, EXPIRED and UNSETTLED ones; ' +
        'maxRefundable = parentAmount − (totalRefunded + totalInProgress) for a SETTLED payment, and 0 for what cannot be refunded ' +
        '(a payment not SETTLED, such as a deposit awaiting assignment or a FAILED purchase; a refund; a deposit’s companion).',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the summary', schema: refundSummarySchema }, 404: paymentNotFound },
      handler: (input) => getPaymentRefundSummary(services, input),
    }),
    defineRoute({
      method: 'get', path: '/refunds', operationId: 'listRefunds', summary: 'List refunds across payments',
      description: 'The caller’s refund children, newest first. clientId defaults to the caller’s and may only name it (another is 404). ' +
        'dateFrom and dateTo bound createdAt, both inclusive: an ISO 8601 instant, or a day (from its start, to its end, UTC).',
      tags, access: 'client', schemas: { query: listRefundsQuerySchema },
      responses: { 200: { description: 'a page of refunds', schema: refundListSchema }, 404: { description: 'clientId names another client', schema: errorSchema } },
      handler: (input) => listRefunds(services, input),
    }),
    defineRoute({
      method: 'post', path: '/refunds/notifications', operationId: 'refundNotification', summary: 'Provider notification: a refund ended',
      description: 'Not a client call: no token, but `signature` must be the hex HMAC-SHA256 of `<refundId>:<outcome>` under ' +
        'PROVIDER_SECRET (a bad signature is 401 and changes nothing; it is checked before Idempotency-Key is claimed). The provider ' +
        'notifies of any client’s refund. SETTLED: the reversal was paid (the account’s hold is debited into refunds payable and out to ' +
        'the provider’s clearing). FAILED: the provider rejected it; UNSETTLED: the reversal could not be reconciled; EXPIRED: the ' +
        'provider’s window for it elapsed. Those three give the hold back to the account and the amount back to what the parent can ' +
        'refund. A refund ends once: the same notification again changes nothing (200), another end is 422 naming its status.',
      tags, access: 'provider', schemas: { body: refundNotificationSchema },
      responses: {
        200: { description: 'the refund child', schema: refundSchema },
        401: { description: 'bad signature', schema: errorSchema },
        404: { description: 'no such refund', schema: errorSchema },
        422: { description: 'the refund already ended otherwise (its status named)', schema: errorSchema },
      },
      verify({ body }) {
        const { refundId, outcome, signature } = body;
        if (!signatureMatches(services.config.providerSecret, refundId, outcome, signature)) throw unauthorized('provider signature does not match');
      },
      handler: (input) => refundNotification(services, input),
    }),
  ];
}

async function refundPayment(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof createRefundSchema }>,
): Promise<HandlerResult> {
  const clientId = clientIdOf(req);
  // A refund of a payment bound to a test clock is made at the clock's time.
  const clockId = await clockOfPayment(services, params.id);
  // The child as created: RECEIVED, even when the provider ended it before this answer (reads show its end).
  const { child: refund, readModels } = await requestRefund(await platformOn(services, clockId), tenantOf(req), params.id, body,
    onClockMetadata(commandMetadata(req), clockId, await timeOf(services, clockId)));
  return { status: 201, readModels, body: {
    id: refund.refundId, parentPaymentId: refund.parentPaymentId, status: 'RECEIVED', totalAmount: refund.totalAmount,
    currency: refund.currency, createdAt: refund.createdAt, description: refund.description,
  } satisfies RefundRecord };
}

async function listPaymentRefunds(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const parent = await ownedPayment(db, tenantOf(req), params.id);
  const rows = await refundsOfParent(db, parent.payment_id);
  return { status: 200, body: { total: rows.length, refunds: rows.map(refundRecord) } };
}

async function getPaymentRefundSummary(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const parent = await ownedPayment(db, tenantOf(req), params.id);
  const rows = await refundTotalsOfParent(db, parent.payment_id);
  const sumOf = (statuses: string[]) => rows.filter((r) => statuses.includes(r.status))
    .reduce((acc, r) => ({ total: acc.total.plus(toDecimal(r.total)), n: acc.n + Number(r.n) }), { total: new Decimal(0), n: 0 });
  const refunded = sumOf(['SETTLED']);
  const inProgress = sumOf(['RECEIVED']);
  const failed = sumOf(['FAILED', 'EXPIRED', 'UNSETTLED']);
  const { currency } = parent;
  const parentAmount = toDecimal(parent.total_amount);
  // As POST /payments/:id/refund decides: only a SETTLED payment that is no child (a refund, a companion) is refunded.
  const refundable = parent.status === 'SETTLED' && parent.parent_payment_id === null;
  return { status: 200, body: {
    parentPaymentId: parent.payment_id, parentAmount: formatAmount(parentAmount, currency), currency,
    totalRefunded: formatAmount(refunded.total, currency), totalInProgress: formatAmount(inProgress.total, currency),
    totalFailed: formatAmount(failed.total, currency),
    maxRefundable: formatAmount(refundable ? parentAmount.minus(refunded.total).minus(inProgress.total) : new Decimal(0), currency),
    completedCount: refunded.n, inProgressCount: inProgress.n, failedCount: failed.n,
  } };
}

async function listRefunds(
  services: Services, { query, req }: HandlerInput<{ query: typeof listRefundsQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const clientId = clientIdOf(req);
  if (query.clientId !== undefined && query.clientId !== clientId) throw notFound(`client ${query.clientId} not found`);
  const from = bound(query.dateFrom, 'from', 'dateFrom');
  const to = bound(query.dateTo, 'to', 'dateTo');
  const page = { limit: query.limit ?? 50, offset: query.offset ?? 0 };
  const { rows, total } = await refundsPage(db, clientId, { ...(query.status ? { status: query.status } : {}), from, to }, page);
  return { status: 200, body: { total, refunds: rows.map(refundRecord) } };
}

async function refundNotification(
  services: Services, { body, req }: HandlerInput<{ body: typeof refundNotificationSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { refundId, outcome } = body;
  // From the child's stream, not the read model: a refund notified the moment it was created is known.
  const { refund } = await loadRefund(services, refundId);
  if (!refund) throw notFound(`refund ${refundId} not found`);
  await endRefund(services, 'any', refundId, outcome, commandMetadata(req, { clientId: refund.clientId }));
  return { status: 200, body: refundRecord(await ownedRefund(db, 'any', refundId)) };
}
