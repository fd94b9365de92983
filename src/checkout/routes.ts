/**
 * The Checkout sessions and Payment links endpoints of the interface, and the hosted pages a payer opens (their
 * checkout token is their only credential: no client token, the per-address rate limit).
 */
import type { Request } from 'express';
import {
  checkoutSessionPageSchema, checkoutSessionSchema, checkoutTokenParamSchema, createCheckoutSessionSchema, createPaymentLinkSchema,
  hostedMethodSchema, hostedPaySchema, hostedSessionOpenedSchema, hostedStatusSchema, listCheckoutSessionsQuerySchema, listPaymentLinksQuerySchema,
  MAX_CHECKOUT_TOKEN_LENGTH, MAX_FILTER_VALUES, payCheckoutSessionSchema, paymentLinkPageSchema, paymentLinkSchema,
  type HostedPay, type PayCheckoutSession,
} from '../../schemas/checkout.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { paymentSchema } from '../../schemas/payments.ts';
import type { PaymentNodeInput } from '../../schemas/paymentNodes.ts';
import {
  checkoutSessionsPage, linkOfCheckoutToken, paymentLinksPage, sessionOfCheckoutToken, sessionViewOf, type CheckoutSessionRow,
  type SessionSortField,
} from '../../projections/checkout.ts';
import { paymentsOfCheckoutSessions, paymentStatusOf } from '../../projections/payments.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { HttpError, invalidParam } from '../http/errors.ts';
import { compileValidator } from '../http/validation.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { dayRange } from '../http/dates.ts';
import { apiVersionHeaderDoc, apiVersionOf } from '../http/apiVersion.ts';
import { detailedPayment, paymentRecord } from '../payments/records.ts';
import { effectiveStatus } from './decider.ts';
import {
  activateLink, chooseSessionMethod, createLink, createSession, deleteLink, expireSession, openSessionFromLink,
  paySession, refreshSession, type CreatedSession,
} from './handlers.ts';
import { linkRecord, sessionRecord } from './records.ts';
import { deactivatedPage, linkPage, notFoundPage, PAGE_ASSETS, PAGE_ASSETS_PATH, PAGE_HEADERS, sessionPage } from './pages.ts';
import { testClockHeaderDoc, testClockOf } from '../http/testClockHeader.ts';
import { clockTimes } from '../../projections/testClocks.ts';
import { linkByToken, ownedLink, ownedSession, sessionByToken } from '../../projections/checkout.queries.ts';
import { merchantsOf } from '../../projections/payments.queries.ts';

const sessionTags = ['Checkout sessions'];
const linkTags = ['Payment links'];
const pageTags = ['Hosted checkout'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const sessionNotFound = { description: 'no such checkout session for this client; another client’s answers the same, and nothing changes', schema: errorSchema } as const;
const linkNotFound = { description: 'no such payment link for this client (or it was deleted); another client’s answers the same', schema: errorSchema } as const;
const htmlResponse = { description: 'HTML', contentType: 'text/html', schema: { type: 'string' } } as const;

/** The path of one of the hosted pages' files. */
const pageAssetParamsSchema = {
  type: 'object', additionalProperties: false, required: ['file'], properties: { file: { type: 'string', enum: Object.keys(PAGE_ASSETS) } },
} as const;

const listOf = (text: string | undefined) => {
  if (text === undefined) return undefined;
  const values = [...new Set(text.split(',').map((value) => value.trim()).filter(Boolean))];
  if (values.length > MAX_FILTER_VALUES) throw invalidParam(`query parameter lists hold at most ${MAX_FILTER_VALUES} values`);
  return values;
};

/** The origin the caller reached this service at: the hosted pages' URLs live there. */
const originOf = (req: Request) => `${req.protocol}://${req.get('host') ?? 'localhost'}`;

/** The API's pay body, checked by its own schema: the hosted page's pay is held to exactly what the API route takes. */
const validatePayBody = compileValidator('body', payCheckoutSessionSchema);

/** Where the hosted body put what the API body names `origins[0]…`, for messages that name the field the page sent. */
function hostedField(message: string, nodeKey: string | undefined): string {
  const renamed = nodeKey ? message.replace(`origins[0].${nodeKey}`, 'fields') : message;
  return renamed.replace('origins[0].currency', 'currency').replace('origins[0].type', 'method');
}

export function checkoutRoutes(services: Services): AnyRoute[] {
  return [...sessionRoutes(services), ...linkRoutes(services), ...hostedPageRoutes(services)];
}

// A table of 6 routes, long only by the documentation the OpenAPI document shows (descriptions, responses).
/** The Checkout sessions endpoints. */
function sessionRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/checkout-sessions', operationId: 'listCheckoutSessions', summary: 'List checkout sessions', tags: sessionTags,
      access: 'client', headers: [apiVersionHeaderDoc],
      description: 'Filters: identityId (the owner), accountNumber (an ACCOUNT destination), status (as readers see it: an open session ' +
        'past expiresAt is EXPIRED), startDate and endDate (the creation day, dd/mm/yyyy, UTC, inclusive). Sort is field:asc or field:desc ' +
        '(createdAt, expiresAt, totalAmount, status; default createdAt:desc), ties broken by id. With service-api-version 24-04-2025 (v2) ' +
        'each session embeds its payments (`payments`, in the detailed transaction shape).',
      schemas: { query: listCheckoutSessionsQuerySchema },
      responses: { 200: { description: 'a page of sessions', schema: checkoutSessionPageSchema } },
      handler: (input) => listCheckoutSessions(services, input),
    }),
    defineRoute({
      method: 'get', path: '/checkout-sessions/:id', operationId: 'getCheckoutSession', summary: 'Get a checkout session', tags: sessionTags,
      access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the session', schema: checkoutSessionSchema }, 404: sessionNotFound },
      handler: (input) => getCheckoutSession(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/checkout-sessions/:id', operationId: 'deleteCheckoutSession', summary: 'Expire a checkout session now',
      description: 'An ATTEMPT or ACTIVE session becomes EXPIRED (its page shows so); an expired one stays so. A session whose payment ' +
        'is running or done (PROCESSING_PAYMENT, FINISHED, FAILED) cannot be deleted (422). The session’s stream decides between a ' +
        'DELETE and a pay at the same moment: one of them wins whole, so an EXPIRED session never has a payment.',
      tags: sessionTags, access: 'client', schemas: { params: idParamSchema },
      responses: {
        200: { description: 'the session, EXPIRED', schema: checkoutSessionSchema }, 404: sessionNotFound,
        422: { description: 'the session’s payment is running or done', schema: errorSchema },
      },
      handler: (input) => deleteCheckoutSession(services, input),
    }),
    defineRoute({
      method: 'post', path: '/checkout-sessions', operationId: 'createCheckoutSession', summary: 'Create a checkout session',
      description: 'The service computes each item’s tax (FIXED: the amount; PERCENTAGE: of preTaxAmount, half-up at the currency’s ' +
        'scale), totalAmount = preTaxAmount + tax, the sums, paymentConfigs (per currency the payer may pay in: product, catalog rate, ' +
        'and per allowed method enabled, requiredFields and purchaseAmount), checkoutToken, url (the hosted page) and expiresAt = ' +
        'createdAt + duration. Amounts you send alongside must agree with the items (400 otherwise). The destinations receive what ' +
        'the payer pays: their amounts add up to totalAmount, and each is an ACCOUNT destination naming the one account the payment ' +
        'credits (one of yours, ACTIVE, in the session’s currency); several split the total into labelled parts, each within the ' +
        'catalog’s ACCOUNT limits (400 naming the destination otherwise). At least one method of paymentMethodsAllowed must be ' +
        'enabled in one of the paymentConfigs (it moves the session’s currency, or one it is priced in, and the amount is within ' +
        'its limits there): a session no payer could pay is a 400 naming paymentMethodsAllowed and why. The session starts ACTIVE.',
      tags: sessionTags, access: 'client', schemas: { body: createCheckoutSessionSchema }, headers: [testClockHeaderDoc],
      responses: {
        201: { description: 'the session', schema: checkoutSessionSchema },
        404: { description: 'no such identity (owner), account or customer for this client', schema: errorSchema },
      },
      handler: (input) => createCheckoutSession(services, input),
    }),
    defineRoute({
      method: 'post', path: '/checkout-sessions/:id/payments', operationId: 'payCheckoutSession', summary: 'Pay a checkout session',
      description: 'Creates the session’s payment (type PURCHASE, for its totalAmount, to the account its destinations name, carrying ' +
        'checkoutSessionId and the destinations as its destination nodes) and moves the session to PROCESSING_PAYMENT; its settlement makes the session FINISHED, its failure or ' +
        'expiry FAILED. origins is required: one origin, whose type is one of paymentMethodsAllowed (400 naming origins[0].type ' +
        'otherwise), with the payer’s fields for it; without one the answer is a 400 naming origins, since a payment with no method ' +
        'would escape paymentMethodsAllowed and every pay-in method needs the payer’s own fields (a CARD its card), even when the ' +
        'session allows a single method. The origin’s currency (the session’s when it names none) picks the paymentConfig the payer pays in: the ' +
        'method must be enabled there (400 otherwise), and in another currency the payment carries that config’s purchaseCurrency, ' +
        'purchaseAmount and product. customer (over the session’s) must carry every field of customerRequirements (400 naming those missing). ' +
        'Only an ATTEMPT or ACTIVE session before expiresAt can be paid (422), once: the session’s own stream decides, taking the ' +
        'session for the payment (PROCESSING_PAYMENT) before the payment is created, so of a pay and a DELETE (or two pays) at once ' +
        'exactly one goes through and the other is a 422 naming the status. A payment refused after that (its origin or payer ' +
        'refused, 400) leaves the session ACTIVE again, payable; so does a payment that does not appear within ' +
        'CHECKOUT_RESERVATION_TIMEOUT_SECONDS (the call’s process died in between), released by a job at most about 5 s later ' +
        '(EXPIRED instead when its time is up). A payment that appears after that still takes the session, which follows it. ' +
        'The hosted page pays through the same path.',
      tags: sessionTags, access: 'client', schemas: { params: idParamSchema, body: payCheckoutSessionSchema },
      responses: {
        200: { description: 'the payment', schema: paymentSchema }, 404: sessionNotFound,
        409: { description: 'too many changes to the session at once; retry (Retry-After)', schema: errorSchema },
        422: { description: 'the session cannot be paid in its status (named in the message), e.g. it expired or is being paid', schema: errorSchema },
      },
      handler: (input) => payCheckoutSession(services, input),
    }),
    defineRoute({
      method: 'post', path: '/checkout-sessions/token/:token/refresh', operationId: 'refreshCheckoutSession',
      summary: 'Extend a checkout session by its token',
      description: 'expiresAt becomes now + the session’s duration, for a session that is not final (ATTEMPT, ACTIVE, PROCESSING_PAYMENT); ' +
        'an expired, finished or failed one is refused (422).',
      tags: sessionTags, access: 'client', schemas: { params: checkoutTokenParamSchema },
      responses: {
        200: { description: 'the session', schema: checkoutSessionSchema }, 404: sessionNotFound,
        422: { description: 'the session is final', schema: errorSchema },
      },
      handler: (input) => refreshCheckoutSession(services, input),
    }),
  ];
}

/** The Payment links endpoints. */
function linkRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/payment-links/token/:token/checkout-sessions', operationId: 'openCheckoutSessionFromLink',
      summary: 'Open a checkout session from a payment link',
      description: 'A new session with the link’s items, methods, destinations and customer, in status ATTEMPT (no method chosen yet), ' +
        `lasting the link’s duration or 30 minutes, whichever is shorter. An inactive link is refused (422); a deleted one is not found. ` +
        'The session follows the link’s test clock, if it has one, unless Test-Clock names another.',
      tags: linkTags, access: 'client', schemas: { params: checkoutTokenParamSchema }, headers: [testClockHeaderDoc],
      responses: {
        201: { description: 'the session', schema: checkoutSessionSchema }, 404: linkNotFound,
        422: { description: 'the link is inactive', schema: errorSchema },
      },
      handler: (input) => openCheckoutSessionFromLink(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payment-links', operationId: 'listPaymentLinks', summary: 'List payment links', tags: linkTags, access: 'client',
      description: 'Filters, each comma-separated: ids, statuses (true or ACTIVE, false or INACTIVE, judged now), accountNumbers (ACCOUNT ' +
        'destinations), customerEmails, identityIds (owners). Newest first; limit with offset or cursor. Deleted links are not listed.',
      schemas: { query: listPaymentLinksQuerySchema },
      responses: { 200: { description: 'a page of links', schema: paymentLinkPageSchema } },
      handler: (input) => listPaymentLinks(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payment-links/:id', operationId: 'getPaymentLink', summary: 'Get a payment link', tags: linkTags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the link', schema: paymentLinkSchema }, 404: linkNotFound },
      handler: (input) => getPaymentLink(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payment-links', operationId: 'createPaymentLink', summary: 'Create a payment link',
      description: 'The same body as a checkout session’s, checked and computed the same way (a link no payer could pay, with no ' +
        'method of paymentMethodsAllowed enabled in any currency, is a 400 naming paymentMethodsAllowed). The link is active (status true) for ' +
        '`duration` seconds; its url opens a new session for each payer (or shows that the link is deactivated).',
      tags: linkTags, access: 'client', schemas: { body: createPaymentLinkSchema }, headers: [testClockHeaderDoc],
      responses: {
        201: { description: 'the link', schema: paymentLinkSchema },
        404: { description: 'no such identity (owner), account or customer for this client', schema: errorSchema },
      },
      handler: (input) => createPaymentLink(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/payment-links/:id', operationId: 'deletePaymentLink', summary: 'Delete a payment link',
      description: 'The link is gone: the API answers 404 for it from now on, and its url shows the deactivated page.',
      tags: linkTags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted (no body)' }, 404: linkNotFound },
      handler: (input) => deletePaymentLink(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payment-links/:id/activate', operationId: 'activatePaymentLink', summary: 'Activate a payment link',
      description: 'The link is active again for `duration` seconds from now.',
      tags: linkTags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'the link', schema: paymentLinkSchema }, 404: linkNotFound },
      handler: (input) => activatePaymentLink(services, input),
    }),

  ];
}

/** The hosted pages: the checkout token in the path is the only credential. */
function hostedPageRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: `${PAGE_ASSETS_PATH}/:file`, operationId: 'checkoutPageAsset', summary: 'The hosted pages’ script and stylesheet',
      tags: pageTags, access: 'public', raw: true,
      schemas: { params: pageAssetParamsSchema },
      responses: { 200: { description: 'the file', contentType: 'application/octet-stream' } },
      handler: (input) => checkoutPageAsset(services, input),
    }),
    defineRoute({
      method: 'get', path: '/checkout/:token', operationId: 'checkoutPage', summary: 'The hosted checkout page of a session',
      description: 'Items, taxes, totals (in the session’s currency and per other currency), the allowed methods, the required customer ' +
        'fields, and pay; then the payment’s progress, and the way to successUrl or failedUrl. An expired, finished or failed session ' +
        'shows its page. Works offline: its script and stylesheet come from this service, under a strict Content-Security-Policy.',
      tags: pageTags, access: 'public', raw: true, schemas: { params: checkoutTokenParamSchema },
      responses: { 200: htmlResponse, 404: htmlResponse },
      handler: (input) => checkoutPage(services, input),
    }),
    defineRoute({
      method: 'get', path: '/checkout/:token/status', operationId: 'checkoutPageStatus', summary: 'A session’s progress, for its page',
      description: 'The page asks every second while the payment runs. The poll draws on a budget per checkout token ' +
        '(CHECKOUT_STATUS_RATE_LIMIT_PER_SECOND, bursts up to CHECKOUT_STATUS_RATE_LIMIT_BURST), not on its address’s, so a payer ' +
        'waiting on a payment is never limited by the page’s own polling; past the token’s budget, 429 with Retry-After. A token ' +
        'new to the poll needs a token left at its address, and an unknown or malformed one (404, 400) costs its address one.',
      tags: pageTags, access: 'public', schemas: { params: checkoutTokenParamSchema },
      // The token in the path, cut to the longest a token is: the key of this poll's budget.
      budgetKey: (req) => String(req.params.token).slice(0, MAX_CHECKOUT_TOKEN_LENGTH),
      responses: {
        200: { description: 'the status, and where the payer goes now', schema: hostedStatusSchema }, 404: sessionNotFound,
        429: { description: 'this checkout token’s poll budget is spent (or a new or unknown token’s address has none left)', schema: errorSchema },
      },
      handler: (input) => checkoutPageStatus(services, input),
    }),
    defineRoute({
      method: 'post', path: '/checkout/:token/method', operationId: 'checkoutPageMethod', summary: 'The payer picked a method on the page',
      description: 'A session opened from a link (ATTEMPT) becomes ACTIVE; an ACTIVE one stays so. The method must be one of the ' +
        'session’s allowed methods (400), and the session open (422).',
      tags: pageTags, access: 'public', schemas: { params: checkoutTokenParamSchema, body: hostedMethodSchema },
      responses: {
        200: { description: 'the session’s status', schema: hostedStatusSchema },
        404: sessionNotFound, 422: { description: 'the session cannot be paid in its status', schema: errorSchema },
      },
      handler: (input) => checkoutPageMethod(services, input),
    }),
    defineRoute({
      method: 'post', path: '/checkout/:token/pay', operationId: 'checkoutPagePay', summary: 'Pay from the hosted page',
      description: 'The page’s pay: `method` (one of the session’s allowed methods) with its node fields, `currency` (one of the ' +
        'session’s paymentConfigs in which the method is enabled; the session’s own by default), and the payer’s fields; as ' +
        'POST /checkout-sessions/:id/payments, and checked by that route’s own schema: `fields` is the method’s node object, so a field ' +
        'the node does not have is a 400 naming it (`body field fields.pin is not allowed`), as the API refuses origins[0].card.pin. ' +
        'The card number reaches the event store masked; the cvv is checked for shape and dropped. ' +
        'The payer’s fields are the payer’s word: they are never matched to an existing customer (its operation level, its payments) ' +
        'unless they keep the document number of the customer set on the session, and cannot name a customer (customer.id, 400); ' +
        'a payer whose document number is another customer’s pays with no customer.',
      tags: pageTags, access: 'public', schemas: { params: checkoutTokenParamSchema, body: hostedPaySchema },
      responses: {
        200: { description: 'the payment started; follow it at /checkout/{token}/status', schema: hostedStatusSchema },
        404: sessionNotFound, 422: { description: 'the session cannot be paid in its status', schema: errorSchema },
      },
      handler: (input) => checkoutPagePay(services, input),
    }),
    defineRoute({
      method: 'get', path: '/pay/:token', operationId: 'paymentLinkPage', summary: 'The hosted page of a payment link',
      description: 'An active link offers to open a new checkout session; an inactive or deleted one shows the deactivated page (410).',
      tags: pageTags, access: 'public', raw: true, schemas: { params: checkoutTokenParamSchema },
      responses: { 200: htmlResponse, 404: htmlResponse, 410: htmlResponse },
      handler: (input) => paymentLinkPage(services, input),
    }),
    defineRoute({
      method: 'post', path: '/pay/:token/sessions', operationId: 'paymentLinkPageOpen', summary: 'Open a session from a link’s page',
      tags: pageTags, access: 'public', schemas: { params: checkoutTokenParamSchema },
      responses: {
        201: { description: 'the new session’s page', schema: hostedSessionOpenedSchema }, 404: linkNotFound,
        422: { description: 'the link is deactivated', schema: errorSchema },
      },
      handler: (input) => paymentLinkPageOpen(services, input),
    }),
  ];
}

/** When each row is judged: at its test clock's time when it is bound to one (read model), else now. */
async function judgedAtOf(services: Services, rows: ReadonlyArray<{ test_clock_id: string | null }>) {
  const times = await clockTimes(services.readModels, rows.map((row) => row.test_clock_id));
  const at = services.runtime.now();
  return (row: { test_clock_id: string | null }) => (row.test_clock_id === null ? at : times.get(row.test_clock_id) ?? at);
}

async function judgedOne(services: Services, row: { test_clock_id: string | null }): Promise<Date> {
  return (await judgedAtOf(services, [row]))(row);
}

async function sessionOf(services: Services, req: Request, sessionId: string) {
  const row = await ownedSession(services.readModels, tenantOf(req), sessionId);
  return sessionRecord(row, originOf(req), await judgedOne(services, row));
}

async function linkOf(services: Services, req: Request, linkId: string) {
  const row = await ownedLink(services.readModels, tenantOf(req), linkId);
  return linkRecord(row, originOf(req), await judgedOne(services, row));
}

/** The sessions with their payments embedded (v2), detailed as GET /payments/:id answers them. */
async function withPayments(services: Services, rows: CheckoutSessionRow[], req: Request) {
  const db = services.readModels;
  const payments = await paymentsOfCheckoutSessions(db, clientIdOf(req), rows.map((row) => row.session_id));
  const merchants = await merchantsOf(db, clientIdOf(req), payments.map((p) => p.identity_id));
  const judged = await judgedAtOf(services, rows);
  return rows.map((row) => ({
    ...sessionRecord(row, originOf(req), judged(row)),
    payments: payments.filter((p) => p.checkout_session_id === row.session_id)
      .map((p) => detailedPayment(p, { providerName: services.provider.name, merchant: merchants.get(p.identity_id) ?? null })),
  }));
}

/**
 * The hosted page's body as the API's pay body: the method's fields become its origin node (the card's cvv too,
 * which the card schema checks for shape and the payment never stores), validated by the API's schema; a refusal
 * names the field as the page sent it (`fields.pin`).
 */
function apiPayBody(services: Services, body: HostedPay, sessionCurrency: string): PayCheckoutSession {
  const nodeKey = services.catalog.nodeType(body.method)?.nodeKey;
  const fields = body.fields ?? {};
  if (!nodeKey && Object.keys(fields).length > 0) throw invalidParam(`body field fields: ${body.method} takes no fields`);
  const currency = body.currency !== undefined && body.currency !== sessionCurrency ? { currency: body.currency } : {};
  const origin = { type: body.method, ...currency, ...(nodeKey ? { [nodeKey]: fields } : {}) } as PaymentNodeInput;
  const payBody = { origins: [origin], ...(body.customer ? { customer: body.customer } : {}) };
  try {
    return validatePayBody(payBody) as PayCheckoutSession;
  } catch (error) {
    if (error instanceof HttpError) throw new HttpError(error.statusCode, error.category, hostedField(error.message, nodeKey));
    throw error;
  }
}

async function listCheckoutSessions(
  services: Services, { query, req }: HandlerInput<{ query: typeof listCheckoutSessionsQuerySchema }>,
): Promise<HandlerResult> {
  const { from, before } = dayRange(query.startDate, query.endDate);
  const [field, direction] = (query.sort ?? 'createdAt:desc').split(':') as [SessionSortField, 'asc' | 'desc'];
  const page = pageRequest(query);
  const filters = { ...query, from, before };
  const { rows, total } = await checkoutSessionsPage(services.readModels, clientIdOf(req), filters, { field, direction }, services.runtime.now(), page);
  const judged = await judgedAtOf(services, rows);
  const results = apiVersionOf(req) === 2
    ? await withPayments(services, rows, req) : rows.map((row) => sessionRecord(row, originOf(req), judged(row)));
  return { status: 200, body: pageOfResults<unknown>(results, total, page) };
}

async function getCheckoutSession(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  return { status: 200, body: await sessionOf(services, req, params.id) };
}

async function deleteCheckoutSession(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await expireSession(services, tenantOf(req), params.id, 'DELETED', commandMetadata(req));
  return { status: 200, body: await sessionOf(services, req, params.id) };
}

async function createCheckoutSession(
  services: Services, { body, req }: HandlerInput<{ body: typeof createCheckoutSessionSchema }>,
): Promise<HandlerResult> {
  return createdSession(services, req, await createSession(services, clientIdOf(req), body, commandMetadata(req), testClockOf(req)));
}

/**
 * A new session's answer, made from its creation as the read model will show it; the read models' catching up is
 * handed on to the HTTP edge, which keeps the answer meanwhile.
 */
async function createdSession(services: Services, req: Request, { session, readModels }: CreatedSession): Promise<HandlerResult> {
  const view = sessionViewOf(session);
  return { status: 201, body: sessionRecord(view, originOf(req), await judgedOne(services, view)), readModels };
}

async function payCheckoutSession(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof payCheckoutSessionSchema }>,
): Promise<HandlerResult> {
  const { row, readModels } = await paySession(services, tenantOf(req), params.id, body, commandMetadata(req));
  return { status: 200, body: paymentRecord(row), readModels };
}

async function refreshCheckoutSession(
  services: Services, { params, req }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await sessionByToken(db, params.token, clientIdOf(req));
  await refreshSession(services, tenantOf(req), row.session_id, commandMetadata(req));
  return { status: 200, body: await sessionOf(services, req, row.session_id) };
}

async function openCheckoutSessionFromLink(
  services: Services, { params, req }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const link = await linkByToken(db, params.token, clientIdOf(req));
  return createdSession(services, req, await openSessionFromLink(services, tenantOf(req), link.link_id, commandMetadata(req), testClockOf(req)));
}

async function listPaymentLinks(
  services: Services, { query, req }: HandlerInput<{ query: typeof listPaymentLinksQuerySchema }>,
): Promise<HandlerResult> {
  const page = pageRequest(query);
  const filters = {
    ids: listOf(query.ids), active: listOf(query.statuses)?.map((s) => s === 'true' || s === 'ACTIVE'), accountNumbers: listOf(query.accountNumbers),
    customerEmails: listOf(query.customerEmails)?.map((e) => e.toLowerCase()), identityIds: listOf(query.identityIds),
  };
  const { rows, total } = await paymentLinksPage(services.readModels, clientIdOf(req), filters, services.runtime.now(), page);
  const judged = await judgedAtOf(services, rows);
  return { status: 200, body: pageOfResults(rows.map((row) => linkRecord(row, originOf(req), judged(row))), total, page) };
}

async function getPaymentLink(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  return { status: 200, body: await linkOf(services, req, params.id) };
}

async function createPaymentLink(
  services: Services, { body, req }: HandlerInput<{ body: typeof createPaymentLinkSchema }>,
): Promise<HandlerResult> {
  const { linkId, readModels } = await createLink(services, clientIdOf(req), body, commandMetadata(req), testClockOf(req));
  await readModels;
  return { status: 201, body: await linkOf(services, req, linkId) };
}

async function deletePaymentLink(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await deleteLink(services, tenantOf(req), params.id, commandMetadata(req));
  return { status: 200 };
}

async function activatePaymentLink(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await activateLink(services, tenantOf(req), params.id, commandMetadata(req));
  return { status: 200, body: await linkOf(services, req, params.id) };
}

async function checkoutPageAsset(
  services: Services, { params, res }: HandlerInput<{ params: typeof pageAssetParamsSchema }>,
): Promise<void> {
  const asset = PAGE_ASSETS[params.file]!;
  res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' }).type(asset.contentType).send(asset.text);
}

async function checkoutPage(services: Services, { params, res }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>): Promise<void> {
  const db = services.readModels;
  const row = await sessionOfCheckoutToken(db, params.token);
  res.set(PAGE_HEADERS).type('html');
  if (!row) res.status(404).send(notFoundPage());
  else res.send(sessionPage(row, services.catalog, await judgedOne(services, row)));
}

async function checkoutPageStatus(
  services: Services, { params }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await sessionByToken(db, params.token);
  const status = effectiveStatus(row.status, row.expires_at, await judgedOne(services, row));
  const paymentStatus = row.payment_id ? await paymentStatusOf(db, row.payment_id) : undefined;
  const redirectTo = status === 'FINISHED' ? row.success_url ?? row.redirect_url : status === 'FAILED' ? row.failed_url : null;
  return { status: 200, body: { status, paymentStatus: paymentStatus ?? null, redirectTo }, headers: { 'Cache-Control': 'no-store' } };
}

async function checkoutPageMethod(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof checkoutTokenParamSchema; body: typeof hostedMethodSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await sessionByToken(db, params.token);
  await chooseSessionMethod(services, row.session_id, body.method, commandMetadata(req, { clientId: row.client_id, actor: 'payer' }));
  const status = effectiveStatus((await ownedSession(db, 'any', row.session_id)).status, row.expires_at, await judgedOne(services, row));
  return { status: 200, body: { status, paymentStatus: null, redirectTo: null } };
}

async function checkoutPagePay(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof checkoutTokenParamSchema; body: typeof hostedPaySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const row = await sessionByToken(db, params.token);
  const metadata = commandMetadata(req, { clientId: row.client_id, actor: 'payer' });
  const { row: payment, readModels } = await paySession(services, 'any', row.session_id, apiPayBody(services, body, row.currency), metadata, 'payer');
  return { status: 200, body: { status: 'PROCESSING_PAYMENT', paymentStatus: payment.status, redirectTo: null }, readModels };
}

async function paymentLinkPage(
  services: Services, { params, res }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>,
): Promise<void> {
  const db = services.readModels;
  res.set(PAGE_HEADERS).type('html');
  const row = await linkOfCheckoutToken(db, params.token);
  if (!row) res.status(404).send(notFoundPage());
  else if (row.deleted || row.active_until.getTime() <= (await judgedOne(services, row)).getTime()) res.status(410).send(deactivatedPage());
  else res.send(linkPage(row));
}

async function paymentLinkPageOpen(
  services: Services, { params, req }: HandlerInput<{ params: typeof checkoutTokenParamSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const link = await linkByToken(db, params.token);
  const metadata = commandMetadata(req, { clientId: link.client_id, actor: 'payer' });
  const { session, readModels } = await openSessionFromLink(services, 'any', link.link_id, metadata);
  // The page it sends the payer to reads the session's row.
  return { status: 201, body: { url: `/checkout/${session.checkoutToken}` }, readModels };
}
