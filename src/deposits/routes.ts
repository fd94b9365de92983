/**
 * Deposits without a destination: the provider's signed deposit notification, the list of deposits awaiting
 * assignment, their assignment, and the unassigned balance widget. Mounted before the payments' and accounts'
 * routes (src/contexts.ts), so `/payments/unassigned` and `/accounts/unassigned` are not taken for ids.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import {
  assignDepositSchema, depositNotificationSchema, listUnassignedQuerySchema, unassignedDepositPageSchema, widgetQuerySchema, widgetSchema,
  type DepositNotification,
} from '../../schemas/deposits.ts';
import { paymentSchema } from '../../schemas/payments.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { awaitingAssignmentPage, awaitingInCurrency, awaitingPerCurrency, type DepositRow } from '../../projections/deposits.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, commandMetadata, tenantOf } from '../http/tenancy.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { formatAmount } from '../domain/money.ts';
import { paymentRecord } from '../payments/records.ts';
import { assignDeposit, cancelCompanion, receiveDeposit } from './handlers.ts';
import { anyPayment } from '../../projections/payments.queries.ts';
import { paymentRowOf } from '../../projections/payments.ts';

const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const HOUR_MS = 60 * 60 * 1000;
/** The widget's warning window (interface, Limits: typically 6 hours before expiry). */
export const URGENT_WINDOW_MS = 6 * HOUR_MS;
/** Urgent items the widget lists per currency, soonest expiry first (the count and total cover them all). */
export const MAX_URGENT_ITEMS = 100;
const WITHIN_MS: Record<string, number> = { '6h': 6 * HOUR_MS, '24h': 24 * HOUR_MS, '48h': 48 * HOUR_MS };

/** The string a deposit notification's signature covers. */
export function depositSignedText(body: Pick<DepositNotification, 'depositId' | 'clientId' | 'reference' | 'amount' | 'currency'>): string {
  return [body.depositId, body.clientId, body.reference, body.amount, body.currency].join(':');
}

/** The provider signs a deposit notification: hex HMAC-SHA256 of `depositSignedText` under PROVIDER_SECRET. */
export function depositSignature(secret: string, body: Parameters<typeof depositSignedText>[0]): string {
  return createHmac('sha256', secret).update(depositSignedText(body)).digest('hex');
}

/** Hours until `expiresAt`, two decimals, rounded down (never more than is left), 0 once past. */
const hoursRemaining = (expiresAt: Date, now: Date) => Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / HOUR_MS * 100) / 100);
const originanteName = (row: DepositRow) => [row.originator_first_name, row.originator_last_name].filter(Boolean).join(' ');

/** The interface's clientId query parameter: the caller's own client, or 404 as for any other client's objects. */
function scopeOf(req: Request, asked: string | undefined): string {
  const clientId = clientIdOf(req);
  if (asked !== undefined && asked !== clientId) throw notFound(`client ${asked} not found`);
  return clientId;
}

// A table of 5 routes, long only by the documentation the OpenAPI document shows (descriptions, responses).
export function depositRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/payments/deposits', operationId: 'depositReceived', summary: 'Provider notification: a deposit arrived',
      description: 'Not a client call: no token, but `signature` must be the hex HMAC-SHA256 under PROVIDER_SECRET of ' +
        '`<depositId>:<clientId>:<reference>:<amount>:<currency>` (a bad signature is 401 and records nothing; it is checked before ' +
        'Idempotency-Key is claimed). Records a LOCAL_DEPOSIT payment with externalId `<provider>:<depositId>`: when `reference` is the ' +
        'account number of an ACTIVE account of the client in `currency`, it is received and settled into that account (201, SETTLED, or ' +
        'UNSETTLED when the account refuses it meanwhile); otherwise it awaits assignment (201, CREATED, no accountNumber, expiresAt 48 h ' +
        'later, purchase.pendingAssignment recorded), its funds in system:<currency>:suspense. The originator is matched to a customer ' +
        'of the client by documentNumber, else created (autoCreated). The same notification again changes nothing and answers 200 with ' +
        'the payment as it is now; a notification with the same depositId that differs in amount, currency, reference or originator is ' +
        '409 naming what differs, and the first deposit stands. An amount below the catalog’s minimum for the currency (the lowest ' +
        'minAmount of its pay-in methods) or above its maximum (the highest maxAmount) is 422 and records nothing.',
      tags: ['Payments'], access: 'provider', schemas: { body: depositNotificationSchema },
      responses: {
        200: { description: 'a repeated notification: the payment as it is', schema: paymentSchema },
        201: { description: 'the deposit’s payment', schema: paymentSchema },
        401: { description: 'bad signature', schema: errorSchema },
        404: { description: 'no such client', schema: errorSchema },
        409: { description: 'the depositId was notified before with other content', schema: errorSchema },
        422: { description: 'below the minimum or above the maximum deposit of the currency', schema: errorSchema },
      },
      verify({ body }) {
        const notification = body;
        const expected = Buffer.from(depositSignature(services.config.providerSecret, notification), 'hex');
        const given = Buffer.from(notification.signature, 'hex');
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized('provider signature does not match');
      },
      handler: (input) => depositReceived(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/unassigned', operationId: 'listUnassignedPayments', summary: 'Deposits awaiting assignment',
      description: 'The client’s LOCAL_DEPOSIT payments that arrived without a destination and are neither assigned nor expired, ' +
        'soonest expiry first (ties by id). expiresWithin keeps those whose expiresAt is at most 6, 24 or 48 hours ahead (inclusive; ' +
        'those already past, until the expiry job runs, too); amountMin and amountMax bound totalAmount inclusively; search matches the ' +
        'originator’s first name, last name or document number (case-insensitive, anywhere in the text).',
      tags: ['Unassigned balances'], access: 'client', schemas: { query: listUnassignedQuerySchema },
      responses: {
        200: { description: 'a page of deposits awaiting assignment', schema: unassignedDepositPageSchema },
        404: { description: 'clientId is not the caller’s', schema: errorSchema },
      },
      handler: (input) => listUnassignedPayments(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/:id/assign', operationId: 'assignPayment', summary: 'Assign a deposit to one of your accounts',
      description: 'The deposit must await assignment (CREATED, not past expiresAt, no other assignment in flight: otherwise 422). ' +
        'The account must be yours (404 otherwise), in the deposit’s currency and ACTIVE (422): its own stream decides, so an account ' +
        'blocked at the same moment either took the funds before the block or refuses them (422, and the deposit awaits assignment ' +
        'again; that account answers the same for this deposit from then on). The deposit becomes SETTLED and its whole amount moves ' +
        'from suspense to the account in one balanced entry. With expectedAmount, reconciliationStatus is PAID, UNDERPAID or OVERPAID; ' +
        'a difference is held by a companion child payment (UNDERPAID: CREATED, the amount still due; OVERPAID: SETTLED, the surplus ' +
        'already credited), linked both ways by relatedPaymentId, and purchase.underpaid or purchase.overpaid is recorded alongside ' +
        'payment.settled. An expectedAmount above the catalog’s maximum deposit of the currency is 400. With companionId, the deposit ' +
        'pays the amount still due of an earlier underpaid deposit (its companion, UNDERPAID and CREATED, owed to accountId: 422 ' +
        'otherwise): it reconciles against that amount (unless expectedAmount says otherwise), and the companion becomes SETTLED ' +
        '(transaction.status_changed, payment.settled) once the deposit is; the money is the deposit’s, moved by its assignment.',
      tags: ['Unassigned balances'], access: 'client', schemas: { params: idParamSchema, body: assignDepositSchema },
      responses: {
        200: { description: 'the deposit, SETTLED', schema: paymentSchema },
        400: { description: 'expectedAmount malformed or above the maximum deposit of the currency', schema: errorSchema },
        404: { description: 'no such deposit or account for this client (another client’s answers the same)', schema: errorSchema },
        422: { description: 'already assigned, being assigned, expired, not a deposit (a purchase, a companion, a refund), another currency, the account is not ACTIVE, or companionId names no amount still due owed to that account', schema: errorSchema },
      },
      handler: (input) => assignPayment(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/:id/cancel', operationId: 'cancelPayment', summary: 'Cancel the amount still due of an underpaid deposit',
      description: 'No body. The companion child of an underpaid deposit (UNDERPAID, CREATED: the amount still due) becomes CANCELLED, a ' +
        'terminal status, and transaction.status_changed fires; nothing more is expected from the payer, and no money moves (none was ' +
        'received for it). Anything else is refused with 422 naming why: another payment (a purchase, a deposit, a refund), a companion ' +
        'holding a surplus (OVERPAID), or one already SETTLED (paid by a further deposit), CANCELLED or EXPIRED (48 hours after its creation).',
      tags: ['Unassigned balances'], access: 'client', schemas: { params: idParamSchema },
      responses: {
        200: { description: 'the companion, CANCELLED', schema: paymentSchema },
        404: { description: 'no such payment for this client (another client’s answers the same)', schema: errorSchema },
        422: { description: 'not a companion holding an amount still due, or not CREATED any more', schema: errorSchema },
      },
      handler: (input) => cancelPayment(services, input),
    }),
    defineRoute({
      method: 'get', path: '/accounts/unassigned', operationId: 'getUnassignedBalance', summary: 'The unassigned balance widget',
      description: 'What awaits assignment, per currency: totalAmount and count of the deposits awaiting assignment, and urgent: those ' +
        `whose expiresAt is at most 6 hours ahead (inclusive), soonest first, at most ${MAX_URGENT_ITEMS}, each with hoursRemaining. ` +
        'One widget per currency: the top-level fields are the widget of `currency` when it is given, else of the currency with the ' +
        'most deposits awaiting assignment (ties: alphabetical); `currencies` lists every currency’s widget (those with deposits ' +
        'awaiting assignment, alphabetical). With nothing awaiting and no currency asked, currency is null and the totals zero.',
      tags: ['Unassigned balances'], access: 'client', schemas: { query: widgetQuerySchema },
      responses: {
        200: { description: 'the widget', schema: widgetSchema },
        404: { description: 'clientId is not the caller’s', schema: errorSchema },
      },
      handler: (input) => getUnassignedBalance(services, input),
    }),
  ];
}

async function depositReceived(
  services: Services, { body: notification, req }: HandlerInput<{ body: typeof depositNotificationSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const result = await receiveDeposit(services, notification, commandMetadata(req, { clientId: notification.clientId }));
  // A deposit recorded awaiting assignment answers as the read model shows it (which it waited for), without reading it.
  const row = result.received ? paymentRowOf([result.received]) : await anyPayment(db, result.paymentId);
  return { status: result.recorded ? 201 : 200, body: paymentRecord(row) };
}

async function listUnassignedPayments(
  services: Services, { query, req }: HandlerInput<{ query: typeof listUnassignedQuerySchema }>,
): Promise<HandlerResult> {
  const clientId = scopeOf(req, query.clientId);
  const page = pageRequest(query);
  const filters = { ...query, ...(query.expiresWithin ? { expiresWithinMs: WITHIN_MS[query.expiresWithin]! } : {}) };
  const { rows, total } = await awaitingAssignmentPage(services.readModels, clientId, filters, services.runtime.now(), page);
  const results = rows.map((row) => ({
    id: row.payment_id, externalId: row.external_id, type: 'LOCAL_DEPOSIT', status: 'CREATED',
    totalAmount: formatAmount(row.total_amount, row.currency), currency: row.currency, reference: row.reference,
    originator: { firstName: row.originator_first_name, lastName: row.originator_last_name, documentType: row.originator_document_type,
      documentNumber: row.originator_document_number },
    originanteName: originanteName(row), customerId: row.customer_id, createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(), hoursRemaining: hoursRemaining(row.expires_at, new Date(row.judged_at)),
  }));
  return { status: 200, body: pageOfResults(results, total, page) };
}

async function assignPayment(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof assignDepositSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  await assignDeposit(services, clientIdOf(req), id, body, commandMetadata(req));
  return { status: 200, body: paymentRecord(await anyPayment(db, id)) };
}

async function cancelPayment(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  await cancelCompanion(services, tenantOf(req), id, commandMetadata(req));
  return { status: 200, body: paymentRecord(await anyPayment(db, id)) };
}

async function getUnassignedBalance(
  services: Services, { query, req }: HandlerInput<{ query: typeof widgetQuerySchema }>,
): Promise<HandlerResult> {
  const clientId = scopeOf(req, query.clientId);
  const now = services.runtime.now();
  const held = await awaitingPerCurrency(services.readModels, clientId);
  const currencies = await Promise.all(held.map((row) => widgetOf(services, clientId, row.currency, now)));
  const busiest = [...held].sort((a, b) => Number(b.n) - Number(a.n) || a.currency.localeCompare(b.currency))[0];
  const main = query.currency !== undefined
    ? (currencies.find((w) => w.currency === query.currency) ?? await widgetOf(services, clientId, query.currency, now))
    : currencies.find((w) => w.currency === busiest?.currency) ?? await widgetOf(services, clientId, null, now);
  return { status: 200, body: { ...main, currencies } };
}

/** The widget of one currency (`null`: none asked and none awaiting, all zero). */
async function widgetOf(services: Services, clientId: string, currency: string | null, now: Date) {
  if (currency === null) return { clientId, totalAmount: '0', currency: null, count: 0, urgent: [] };
  const { total, count, urgent } = await awaitingInCurrency(services.readModels, clientId, currency, now, URGENT_WINDOW_MS, MAX_URGENT_ITEMS);
  return {
    clientId, totalAmount: formatAmount(total, currency), currency, count,
    urgent: urgent.map((row) => ({
      paymentId: row.payment_id, originanteName: originanteName(row), amount: formatAmount(row.total_amount, row.currency),
      currency: row.currency, expiresAt: row.expires_at.toISOString(), hoursRemaining: hoursRemaining(row.expires_at, new Date(row.judged_at)),
    })),
  };
}
