/** The Payment attempts endpoints of the interface. */
import {
  attemptPageSchema, attemptSchema, createAttemptSchema, getAttemptQuerySchema, listAttemptsQuerySchema,
} from '../../schemas/attempts.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { notFound } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { dayRange } from '../http/dates.ts';
import { attemptsPage, type AttemptRow } from '../../projections/attempts.ts';
import { createAttempt } from './handlers.ts';
import { testClockHeaderDoc, testClockOf } from '../http/testClockHeader.ts';
import { attemptRecord } from './records.ts';
import { ownedAttempt } from '../../projections/attempts.queries.ts';
import { merchantsOf } from '../../projections/payments.queries.ts';

const tags = ['Payment attempts'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such attempt for this client; another client’s attempt answers the same', schema: errorSchema } as const;

export function attemptRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/payment-attempts', operationId: 'listPaymentAttempts', summary: 'List payment attempts', tags, access: 'client',
      description: 'Newest first (ties broken by id). Filters are exact matches; startDate and endDate bound the creation day '
        + '(dd/mm/yyyy, UTC, inclusive). Page with `limit` and `next` (or `cursor`: the `next` of the previous page) or `offset`. '
        + 'As the interface has it, the attempts are in `data` (other lists answer `results`), beside `pagination` '
        + '{count, next, previous, total}.',
      schemas: { query: listAttemptsQuerySchema },
      responses: { 200: { description: 'a page of attempts', schema: attemptPageSchema } },
      handler: (input) => listPaymentAttempts(services, input),
    }),
    defineRoute({
      method: 'post', path: '/payment-attempts', operationId: 'createPaymentAttempt', summary: 'Check a payment before it runs',
      description: 'Checks what POST /payments would: the identity and its ACTIVE account in `currency`, every node against the '
        + 'catalog (node object, direction, required fields, country, currency, per-method limits), that the accounts ACCOUNT nodes '
        + 'name are yours (ACTIVE, in the node’s currency), the first origin’s fee and the '
        + 'exchange; records the outcome with status ATTEMPT and answers it in the detailed transaction shape. Nothing runs: no '
        + 'money moves and no customer is created. An origin of type PAYMENT_INITATION (the interface’s spelling) starts a pay-in '
        + 'method from the payer’s bank: `paymentInitiation {origin, referenceId}` names the method (FINTOC or fintoc) and carries no '
        + 'node object. A destination’s `identity` takes `userId`, `name`, `lastname`, `nickname`, `dni`.',
      tags, access: 'client', schemas: { body: createAttemptSchema }, headers: [testClockHeaderDoc],
      responses: {
        201: { description: 'the attempt', schema: attemptSchema },
        404: { description: 'no such identity, account or customer for this client', schema: errorSchema },
        422: { description: 'the account is not ACTIVE', schema: errorSchema },
      },
      handler: (input) => createPaymentAttempt(services, input),
    }),
    defineRoute({
      method: 'get', path: '/payment-attempts/:id', operationId: 'getPaymentAttempt', summary: 'Get a payment attempt (detailed transaction shape)',
      description: 'With `type` or `product`, an attempt of another type or product answers 404.',
      tags, access: 'client', schemas: { params: idParamSchema, query: getAttemptQuerySchema },
      responses: { 200: { description: 'the attempt', schema: attemptSchema }, 404: notFoundResponse },
      handler: (input) => getPaymentAttempt(services, input),
    }),
  ];
}

async function listPaymentAttempts(
  services: Services, { query, req }: HandlerInput<{ query: typeof listAttemptsQuerySchema }>,
): Promise<HandlerResult> {
  const clientId = clientIdOf(req);
  const { from, before } = dayRange(query.startDate, query.endDate);
  const page = pageRequest({ ...query, cursor: query.next ?? query.cursor });
  const { rows, total } = await attemptsPage(services.readModels, clientId, { ...query, from, before }, page);
  const { pagination, results } = pageOfResults(await recordsOf(services, clientId, rows), total, page);
  return { status: 200, body: { data: results, pagination } };
}

async function createPaymentAttempt(
  services: Services, { body, req }: HandlerInput<{ body: typeof createAttemptSchema }>,
): Promise<HandlerResult> {
  const clientId = clientIdOf(req);
  const { row, readModels } = await createAttempt(services, clientId, body, commandMetadata(req), testClockOf(req));
  return { status: 201, body: (await recordsOf(services, clientId, [row]))[0], readModels };
}

async function getPaymentAttempt(
  services: Services, { params, query, req }: HandlerInput<{ params: typeof idParamSchema; query: typeof getAttemptQuerySchema }>,
): Promise<HandlerResult> {
  const row = await ownedAttempt(services.readModels, tenantOf(req), params.id);
  if ((query.type !== undefined && row.type !== query.type) || (query.product !== undefined && row.product !== query.product)) {
    throw notFound('payment attempt not found');
  }
  return { status: 200, body: (await recordsOf(services, row.client_id, [row]))[0] };
}

/** The records of these rows of one client, with their merchants read in one query. */
async function recordsOf(services: Services, clientId: string, rows: readonly AttemptRow[]) {
  const merchants = await merchantsOf(services.readModels, clientId, rows.map((row) => row.identity_id));
  return rows.map((row) => attemptRecord(row, { providerName: services.provider.name, merchant: merchants.get(row.identity_id) ?? null }));
}
