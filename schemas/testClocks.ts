/**
 * Test clocks (sandbox): create, list, read, delete, advance; the `Test-Clock` header that binds a new object to
 * one; and the simulated deposit, which makes the sandbox provider send its signed deposit notification.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { pageOf, pageQueryProperties } from './common.ts';
import { depositNotificationSchema } from './deposits.ts';

const time = { type: 'string', format: 'date-time' } as const;

export const testClockStatuses = ['ready', 'advancing'] as const;

export const createTestClockSchema = {
  title: 'CreateTestClock',
  type: 'object',
  additionalProperties: false,
  properties: {
    frozenTime: { ...time, examples: ['2026-01-01T00:00:00Z'], description: 'the clock’s starting time: now when omitted; not in the past (a minute of skew is allowed), at most 365 days ahead' },
    name: { type: 'string', minLength: 1, maxLength: 100, examples: ['deposit expiry'] },
  },
} as const;

export const advanceTestClockSchema = {
  title: 'AdvanceTestClock',
  type: 'object',
  additionalProperties: false,
  required: ['frozenTime'],
  properties: {
    frozenTime: { ...time, examples: ['2026-01-03T00:00:00Z'], description: 'the new time: after the clock’s, at most 90 days after it' },
  },
} as const;

export const testClockSchema = {
  title: 'TestClock',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'frozenTime', 'status', 'createdAt'],
  properties: {
    id: { type: 'string' },
    name: { type: ['string', 'null'] },
    frozenTime: { ...time, description: 'the clock’s time (its target, while it is advancing)' },
    status: { type: 'string', enum: testClockStatuses, description: 'advancing until every time-driven effect due up to frozenTime is recorded, then ready' },
    createdAt: time,
  },
} as const;
export type TestClockRecord = FromSchema<typeof testClockSchema>;

export const testClockPageSchema = { title: 'TestClockPage', ...pageOf(testClockSchema) } as const;

export const listTestClocksQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...pageQueryProperties },
} as const;

const { clientId: _clientId, signature: _signature, depositId: _depositId, ...simulatedProperties } = depositNotificationSchema.properties;

export const simulatedDepositSchema = {
  title: 'SimulatedDeposit',
  type: 'object',
  additionalProperties: false,
  required: ['reference', 'amount', 'currency', 'originator'],
  properties: simulatedProperties,
} as const;

/** The header that binds a new object to a test clock of the caller. */
export const TEST_CLOCK_HEADER = 'Test-Clock';
export const testClockHeaderDoc = {
  name: TEST_CLOCK_HEADER,
  description: 'Sandbox: binds the new object to this test clock of yours (404 when it is not yours, nothing created). Its createdAt is ' +
    'the clock’s time, and every rule of time for it and its children (expiry, quote lifetimes, durations, settlement periods) ' +
    'follows that clock from then on. Without it, the object follows the wall clock.',
  schema: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' },
} as const;
