/**
 * The Payments endpoints of the interface, the provider's signed notification, the operator's review
 * decision, and the auditor's history of a payment.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  attachPaymentDocumentSchema, createPaymentSchema, detailedPaymentSchema, listPaymentsQuerySchema, paymentCustomerSchema,
  paymentDocumentSchema, paymentHistorySchema, paymentListSchema, paymentSchema, providerNotificationSchema, reviewDecisionSchema,
} from '../../schemas/payments.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { customerById, customerRecords } from '../../projections/customers.ts';
import { paymentDocument, paymentsPage, type PaymentSortField } from '../../projections/payments.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { unauthorized } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { dayRange } from '../http/dates.ts';
import { apiVersionHeaderDoc, apiVersionOf } from '../http/apiVersion.ts';
import { MAX_READ_LIMIT } from '../eventstore/port.ts';
import { recordedAs } from '../eventstore/typedEvents.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { paymentStream } from './events.ts';
import { refundStream } from './refunds/events.ts';
import { detailedPayment, paymentRecord } from './records.ts';
import { testClockHeaderDoc, testClockOf } from '../http/testClockHeader.ts';
import {
  attachPaymentDocument, authorizePayment, capturePayment, createPayment, receivePayment, resolvePaymentReview,
} from './handlers.ts';
import { anyPayment, merchantsOf, ownedPayment } from '../../projections/payments.queries.ts';

const tags = ['Payments'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such payment for this client; another client’s payment answers the same, and nothing changes', schema: errorSchema } as const;
const illegalMove = {
  description: 'the state machine does not allow this move from the current status (named in the message), or the payment is of a kind ' +
    'the move does not apply to (a deposit, a deposit’s companion, a refund child: named in the message)',
  schema: errorSchema,
} as const;

/** The provider signs the transaction id: hex HMAC-SHA256 under PROVIDER_SECRET, compared in constant time. */
export function providerSignature(secret: string, transactionId: string): string {
  return createHmac('sha256', secret).update(transactionId).digest('hex');
}

function signatureMatches(secret: string, transactionId: string, signature: string): boolean {
  const expected = Buffer.from(providerSignature(secret, transactionId), 'hex');
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

// A table of 10 routes, long only by the documentation the OpenAPI document shows (descriptions, responses).
export function paymentRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/payments', operationId: 'listPayments', summary: 'List payments', tags, access: 'client',
      description: 'Filters are exact matches; startDate and endDate bound the creation day (dd/mm/yyyy, UTC, inclusive). ' +
        'Sort is field:asc or field:desc (default createdAt:desc), ties broken by id; absent values sort last. ' +
        'With service-api-version 24-04-2025 the results are in the detailed transaction shape (v2). ' +
        'Refund children are payments too: type REFUND, parentPaymentId and relatedPaymentId naming the refunded payment (or deposit), ' +
        'their own id as externalId, the status of the refund (RECEIVED, SETTLED, FAILED, UNSETTLED, EXPIRED) and the account number of ' +
        'the account that pays them out (null for a refund from suspense, such as an expired deposit’s); type=REFUND lists only them.',
      schemas: { query: listPaymentsQuerySchema }, headers: [apiVersionHeaderDoc],
      responses: { 200: { description: 'a page of payments (flat records in v1, detailed shapes in v2)', schema: paymentListSchema } },
      handler: (input) => listPayments(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payments', operationId: 'createPayment', summary: 'Create a payment',
      description: 'Validates the nodes against the catalog (node object, direction, country, currency, per-method limits), ' +
        'computes the method’s fees and the exchange, screens the payer (REQUIRES_REVIEW or FAILED at once when due), and ' +
        'records the payment. externalId is unique per client: a second use is 409.',
      tags, access: 'client', schemas: { body: createPaymentSchema }, headers: [testClockHeaderDoc],
      responses: {
        200: { description: 'the payment', schema: paymentSchema },
        404: { description: 'no such identity, account or customer for this client', schema: errorSchema },
        409: { description: 'externalId already used', schema: errorSchema },
        422: { description: 'the account is not ACTIVE', schema: errorSchema },
      },
      handler: (input) => onCreatePayment(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/received', operationId: 'paymentReceived', summary: 'Provider notification: the funds arrived',
      description: 'Not a client call: no token, but `signature` must be the hex HMAC-SHA256 of transactionId under ' +
        'PROVIDER_SECRET (a bad signature is 401 and changes nothing). The signature is checked before Idempotency-Key ' +
        'is claimed, so a request whose signature does not match claims no key; keys are the provider\'s own scope. Requests that fail ' +
        'before the signature matches count against the per-address rate limit. The provider notifies of any client’s payment. INSTANT payments reconcile at once ' +
        'to SETTLED or UNSETTLED; others wait for the next settlement batch.',
      tags, access: 'provider', schemas: { body: providerNotificationSchema },
      responses: {
        200: { description: 'the payment', schema: paymentSchema },
        401: { description: 'bad signature', schema: errorSchema }, 404: notFoundResponse, 422: illegalMove,
      },
      verify({ body }) {
        const { transactionId, signature } = body;
        if (!signatureMatches(services.config.providerSecret, transactionId, signature)) throw unauthorized('provider signature does not match');
      },
      handler: (input) => paymentReceived(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/:id', operationId: 'getPayment', summary: 'Get a payment (detailed transaction shape)',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the payment', schema: detailedPaymentSchema }, 404: notFoundResponse },
      handler: (input) => getPayment(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/:id/authorized', operationId: 'authorizePayment', summary: 'Authorize a card payment',
      description: 'The provider is asked; a declined card fails the payment (200, status FAILED). From any status but CREATED, or on a push rail, 422.',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the payment', schema: paymentSchema }, 404: notFoundResponse, 422: illegalMove },
      handler: (input) => movePayment(services, authorizePayment, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/:id/captured', operationId: 'capturePayment', summary: 'Capture an authorized card payment',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the payment', schema: paymentSchema }, 404: notFoundResponse, 422: illegalMove },
      handler: (input) => movePayment(services, capturePayment, input),
    }),
    defineRoute({
      method: 'post', path: '/payments/:id/documents', operationId: 'attachPaymentDocument', summary: 'Attach a review document',
      description: 'Only while the payment is REQUIRES_REVIEW (otherwise 422); at most 20 per payment.',
      tags, access: 'client', schemas: { params: idParamSchema, body: attachPaymentDocumentSchema },
      responses: { 201: { description: 'the document', schema: paymentDocumentSchema }, 404: notFoundResponse, 422: illegalMove },
      handler: (input) => onAttachPaymentDocument(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/:id/customer', operationId: 'getPaymentCustomer', summary: 'The customer (payer) of a payment',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the payer, or attached false', schema: paymentCustomerSchema }, 404: notFoundResponse },
      handler: (input) => getPaymentCustomer(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payments/:id/events', operationId: 'getPaymentEvents', summary: 'The immutable history of a payment',
      description: 'For auditors: every event of the payment, in order, with its times, actor and data, read from the event store ' +
        '(a refund child’s: the events of its own stream). occurredAt is the business time (for an object bound to a test clock, the ' +
        'clock’s time when it happened: a deposit expires at its expiresAt), recordedAt the real time it was recorded; they differ ' +
        'only under a test clock.',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the events', schema: paymentHistorySchema }, 404: notFoundResponse },
      handler: (input) => getPaymentEvents(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/payments/:id/review', operationId: 'reviewPayment', summary: 'Approve or reject a payment under review',
      description: 'APPROVED returns the payment to the status it had before the review; REJECTED fails it. Operators act on the payments of every client.',
      tags: ['Operator'], access: 'operator', schemas: { params: idParamSchema, body: reviewDecisionSchema },
      responses: { 200: { description: 'the payment', schema: paymentSchema }, 404: { description: 'no such payment (of any client)', schema: errorSchema }, 422: illegalMove },
      handler: (input) => reviewPayment(services, input),
    }),
  ];
}

async function listPayments(
  services: Services, { query, req }: HandlerInput<{ query: typeof listPaymentsQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { from, before } = dayRange(query.startDate, query.endDate);
  const [field, direction] = (query.sort ?? 'createdAt:desc').split(':') as [PaymentSortField, 'asc' | 'desc'];
  const page = pageRequest(query);
  const { rows, total } = await paymentsPage(db, clientIdOf(req), { ...query, from, before }, { field, direction }, page);
  if (apiVersionOf(req) !== 2) return { status: 200, body: pageOfResults<unknown>(rows.map(paymentRecord), total, page) };
  const merchants = await merchantsOf(db, clientIdOf(req), rows.map((row) => row.identity_id));
  const results = rows.map((row) => detailedPayment(row, { providerName: services.provider.name, merchant: merchants.get(row.identity_id) ?? null }));
  return { status: 200, body: pageOfResults<unknown>(results, total, page) };
}

/** A client's move on its own payment (the command answers 404 for anyone else's), then the record. */
async function movePayment(
  services: Services, move: typeof authorizePayment, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await move(services, tenantOf(req), params.id, commandMetadata(req));
  return { status: 200, body: paymentRecord(await ownedPayment(services.readModels, { clientId: clientIdOf(req) }, params.id)) };
}

async function onCreatePayment(
  services: Services, { body, req }: HandlerInput<{ body: typeof createPaymentSchema }>,
): Promise<HandlerResult> {
  const { row, readModels } = await createPayment(services, clientIdOf(req), body, commandMetadata(req), { clock: { testClockId: testClockOf(req) } });
  return { status: 200, body: paymentRecord(row), readModels };
}

async function paymentReceived(
  services: Services, { body, req }: HandlerInput<{ body: typeof providerNotificationSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { transactionId } = body;
  // The provider notifies of any client's payment.
  const row = await anyPayment(db, transactionId);
  await receivePayment(services, 'any', transactionId, commandMetadata(req, { clientId: row.client_id }));
  return { status: 200, body: paymentRecord(await anyPayment(db, transactionId)) };
}

async function getPayment(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await ownedPayment(db, tenantOf(req), params.id);
  const merchant = (await merchantsOf(db, row.client_id, [row.identity_id])).get(row.identity_id) ?? null;
  return { status: 200, body: detailedPayment(row, { providerName: services.provider.name, merchant }) };
}

async function onAttachPaymentDocument(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof attachPaymentDocumentSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  const documentId = await attachPaymentDocument(services, tenantOf(req), id, body, commandMetadata(req));
  const row = await paymentDocument(db, documentId);
  return { status: 201, body: {
    id: row.document_id, paymentId: row.payment_id, type: row.type, url: row.url, contentType: row.content_type,
    createdAt: row.created_at.toISOString(),
  } };
}

async function getPaymentCustomer(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await ownedPayment(db, tenantOf(req), params.id);
  const customer = row.customer_id ? await customerById(db, row.customer_id) : undefined;
  const record = customer ? (await customerRecords(db, [customer]))[0]! : null;
  return { status: 200, body: { paymentId: row.payment_id, attached: record !== null, customer: record } };
}

async function getPaymentEvents(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  const row = await ownedPayment(db, tenantOf(req), id);
  // A refund child's lifecycle is recorded on its own stream (src/payments/refunds/events.ts).
  const stream = row.type === 'REFUND' && row.parent_payment_id !== null ? refundStream(id) : paymentStream(id);
  const events = await services.storage.store.readStream(stream, { limit: MAX_READ_LIMIT });
  return { status: 200, body: { paymentId: id, events: events.map((event) => ({
    revision: Number(event.revision), type: event.type,
    // The business time: the test clock's for an event recorded under one, else when it was recorded.
    occurredAt: typeof event.metadata?.businessTime === 'string' ? event.metadata.businessTime : event.recordedAt.toISOString(),
    recordedAt: event.recordedAt.toISOString(),
    actor: typeof event.metadata?.actor === 'string' ? event.metadata.actor : null, data: recordedAs<StoredEventData>(event).data,
  })) } };
}

async function reviewPayment(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof reviewDecisionSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  const row = await anyPayment(db, id);
  await resolvePaymentReview(services, 'any', id, body.decision, commandMetadata(req, { clientId: row.client_id }));
  return { status: 200, body: paymentRecord(await anyPayment(db, id)) };
}
