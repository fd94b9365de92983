/**
 * Test clocks (sandbox, DESIGN section 20): a client's clocks, their advances, and the simulated deposit that
 * makes the sandbox provider send its signed deposit notification (bound to a clock with `Test-Clock`).
 */
import type { Request } from 'express';
import type { Kysely } from 'kysely';
import { idParamSchema } from '../../schemas/common.ts';
import { paymentSchema } from '../../schemas/payments.ts';
import {
  advanceTestClockSchema, createTestClockSchema, listTestClocksQuerySchema, simulatedDepositSchema, testClockPageSchema, testClockSchema,
  type TestClockRecord,
} from '../../schemas/testClocks.ts';
import type { ReadModels } from '../../projections/readModels.ts';
import { liveClock, liveClocksPage, type TestClockRow } from '../../projections/testClocks.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { notFound } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { clientIdOf, commandMetadata, tenantOf } from '../http/tenancy.ts';
import { createdId } from '../eventstore/deterministicId.ts';
import { testClockHeaderDoc, testClockOf } from '../http/testClockHeader.ts';
import { depositSignature } from '../deposits/routes.ts';
import { receiveDeposit } from '../deposits/handlers.ts';

import { paymentRecord } from '../payments/records.ts';
import { MAX_CLOCKS_PER_CLIENT, MAX_OBJECTS_PER_CLOCK } from './decider.ts';
import { advanceClock, createClock, deleteClock } from './handlers.ts';
import { anyPayment } from '../../projections/payments.queries.ts';

const tags = ['Test clocks'];
const errorRef = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such test clock for this client (another client’s, or a deleted one, answers the same)', schema: errorRef } as const;

const BOUNDS = `A client has at most ${MAX_CLOCKS_PER_CLIENT} clocks at once; a clock holds at most ${MAX_OBJECTS_PER_CLOCK.toLocaleString('en')} ` +
  'objects (those created with its Test-Clock header; their children, such as refunds and companions, follow it without counting); ' +
  'one advance moves it at most 90 days.';

function clockRecord(row: TestClockRow): TestClockRecord {
  return { id: row.clock_id, name: row.name, frozenTime: row.frozen_time.toISOString(), status: row.status, createdAt: row.created_at.toISOString() };
}

async function ownedClock(db: Kysely<ReadModels>, req: Request, clockId: string): Promise<TestClockRow> {
  const row = await liveClock(db, clientIdOf(req), clockId);
  if (!row) throw notFound(`test clock ${clockId} not found`);
  return row;
}

export function testClockRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/test-clocks', operationId: 'createTestClock', summary: 'Create a test clock', tags, access: 'client',
      description: 'A clock of your sandbox, frozen at frozenTime until you advance it. Objects created with the header ' +
        '`Test-Clock: <id>` (POST /payments, /payment-attempts, /checkout-sessions, /payment-links, a link’s checkout session, ' +
        '/sandbox/deposits) follow it: their createdAt is its time, and every rule of time for them and their children reads it. ' +
        `${BOUNDS} Only the sandbox provider honours clocks.`,
      schemas: { body: createTestClockSchema },
      responses: {
        201: { description: 'the clock, ready', schema: testClockSchema },
        400: { description: 'frozenTime in the past or more than 365 days ahead', schema: errorRef },
        422: { description: 'the client already has the most clocks it may have', schema: errorRef },
      },
      handler: (input) => createTestClock(services, input),
    }),
    defineRoute({
      method: 'get', path: '/test-clocks', operationId: 'listTestClocks', summary: 'List your test clocks', tags, access: 'client',
      description: 'Newest first; deleted clocks are not listed.', schemas: { query: listTestClocksQuerySchema },
      responses: { 200: { description: 'a page of clocks', schema: testClockPageSchema } },
      handler: (input) => listTestClocks(services, input),
    }),
    defineRoute({
      method: 'get', path: '/test-clocks/:id', operationId: 'getTestClock', summary: 'Get a test clock', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the clock', schema: testClockSchema }, 404: notFoundResponse },
      handler: (input) => getTestClock(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/test-clocks/:id', operationId: 'deleteTestClock', summary: 'Delete a test clock', tags, access: 'client',
      description: 'The clock is gone: 404 from now on, and it no longer counts against your clocks. The objects bound to it stay as they ' +
        'are, judged at the time the clock had: nothing time-driven happens to them any more (they neither expire nor settle in a batch); ' +
        'what you do to them (assign, refund, pay) still works as at that time.',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted (no body)' }, 404: notFoundResponse },
      handler: (input) => deleteTestClock(services, input),
    }),
    defineRoute({
      method: 'post', path: '/test-clocks/:id/advance', operationId: 'advanceTestClock', summary: 'Advance a test clock',
      description: 'Moves the clock forward to frozenTime (after its time, at most 90 days after it: 400 naming frozenTime otherwise, ' +
        'and nothing recorded). The answer is the clock, `advancing`, with its new frozenTime; every time-driven effect due on its objects ' +
        'up to that time is then recorded, each as an event of its object whose business time is the instant it fell due on the clock ' +
        '(a deposit expires at its expiresAt; GET /payments/{id}/events shows it as occurredAt beside recordedAt), and the clock ' +
        'becomes `ready` (webhook test_clock.ready). One advance at a time: a clock still advancing refuses another (422); two sent ' +
        'together are decided by the clock in turn, so one wins.',
      tags, access: 'client', schemas: { params: idParamSchema, body: advanceTestClockSchema },
      responses: {
        200: { description: 'the clock, advancing', schema: testClockSchema },
        400: { description: 'frozenTime not after the clock’s, or more than 90 days after it', schema: errorRef },
        404: notFoundResponse,
        422: { description: 'the clock is still advancing', schema: errorRef },
      },
      handler: (input) => advanceTestClock(services, input),
    }),
    defineRoute({
      method: 'post', path: '/sandbox/deposits', operationId: 'simulateDeposit', summary: 'Simulate a deposit (sandbox)',
      description: 'The sandbox provider sends its signed deposit notification for you (signed under PROVIDER_SECRET, with a new ' +
        'depositId): the same as POST /payments/deposits from then on, and answered as it is (201 with the payment: SETTLED into the ' +
        'account `reference` names when it is an ACTIVE account of yours in `currency`, else CREATED, awaiting assignment for 48 hours). ' +
        'With `Test-Clock`, the deposit follows that clock (its 48 hours, and the 6-hour urgent window, are counted on it).',
      tags, access: 'client', schemas: { body: simulatedDepositSchema }, headers: [testClockHeaderDoc],
      responses: {
        201: { description: 'the deposit’s payment', schema: paymentSchema },
        404: { description: 'the Test-Clock is not one of your clocks (nothing is recorded)', schema: errorRef },
        422: { description: 'below the minimum or above the maximum deposit of the currency', schema: errorRef },
      },
      handler: (input) => simulateDeposit(services, input),
    }),
  ];
}

async function createTestClock(
  services: Services, { body, req }: HandlerInput<{ body: typeof createTestClockSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const clockId = await createClock(services, clientIdOf(req), body ?? {}, commandMetadata(req));
  return { status: 201, body: clockRecord(await ownedClock(db, req, clockId)) };
}

async function listTestClocks(
  services: Services, { query, req }: HandlerInput<{ query: typeof listTestClocksQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const page = pageRequest(query);
  const { rows, total } = await liveClocksPage(db, clientIdOf(req), page);
  return { status: 200, body: pageOfResults(rows.map(clockRecord), total, page) };
}

async function getTestClock(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  const db = services.readModels;
  return { status: 200, body: clockRecord(await ownedClock(db, req, params.id)) };
}

async function deleteTestClock(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await deleteClock(services, tenantOf(req), params.id, commandMetadata(req));
  return { status: 200 };
}

async function advanceTestClock(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof advanceTestClockSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  await ownedClock(db, req, params.id);
  await advanceClock(services, tenantOf(req), params.id, body.frozenTime, commandMetadata(req));
  return { status: 200, body: clockRecord(await ownedClock(db, req, params.id)) };
}

async function simulateDeposit(
  services: Services, { body, req }: HandlerInput<{ body: typeof simulatedDepositSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const clientId = clientIdOf(req);
  const metadata = commandMetadata(req, { actor: 'provider' });
  // Sent again under the same Idempotency-Key, it is the same deposit (its id derives from the key).
  const unsigned = { ...body, clientId, depositId: createdId(services.runtime, metadata, 'sandbox deposit') };
  const notification = { ...unsigned, signature: depositSignature(services.config.providerSecret, unsigned) };
  const result = await receiveDeposit(services, notification, metadata, testClockOf(req));
  return { status: 201, body: paymentRecord(await anyPayment(db, result.paymentId)) };
}
