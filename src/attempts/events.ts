/**
 * Events of a payment attempt. Stream: `payment-attempt-<attemptId>`. An attempt is recorded once, as checked
 * (status ATTEMPT), and never moves: it is the answer to "would this payment run, and at what cost?".
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableAmountSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';
import { boundToNoClock, testClockIdProperty } from '../testClocks/events.ts';
import { nodesMaskedAsNow, storedPaymentNodeSchema } from '../payments/events/nodes.ts';
import { paymentEventSchemas, settlementPeriodValues } from '../payments/events.ts';

const optionalTexts = <const K extends string>(keys: readonly K[]) =>
  closed(Object.fromEntries(keys.map((key) => [key, textSchema])) as { [P in K]: typeof textSchema }, keys);

const { properties: nodeProperties, required: nodeRequired } = storedPaymentNodeSchema;

/**
 * A node of an attempt: a payment's stored node (src/payments/events/nodes.ts), whose holder may also have a
 * nickname, or a payment initiation: type PAYMENT_INITATION, no node object, `paymentInitiation` naming the
 * pay-in method (whose catalog facts the node carries) and the client's reference.
 */
export const storedAttemptNodeSchema = {
  type: 'object',
  additionalProperties: false,
  required: nodeRequired,
  properties: {
    ...nodeProperties,
    identity: { oneOf: [optionalTexts(['name', 'documentNumber', 'externalId', 'lastname', 'nickname']), { type: 'null' }] },
    paymentInitiation: closed({ method: textSchema, referenceId: nullableTextSchema }),
  },
} as const;
export type StoredAttemptNode = FromSchema<typeof storedAttemptNodeSchema>;

const { fees: feesSchema, exchange: exchangeSchema } = paymentEventSchemas.PaymentCreated.properties;

const paymentAttemptCreatedSchema = closed({
  attemptId: textSchema,
  clientId: textSchema,
  externalId: nullableTextSchema,
  identityId: textSchema,
  identityExternalId: nullableTextSchema,
  accountId: textSchema,
  accountNumber: textSchema,
  totalAmount: amountSchema,
  currency: textSchema,
  description: nullableTextSchema,
  product: nullableTextSchema,
  type: textSchema,
  purchaseAmount: nullableAmountSchema,
  purchaseCurrency: nullableTextSchema,
  exchange: exchangeSchema,
  origins: { type: 'array', items: storedAttemptNodeSchema },
  destinations: { type: 'array', items: storedAttemptNodeSchema },
  fees: feesSchema,
  /** Sum of `fees`, in `currency`. */
  feeAmount: amountSchema,
  /** The pay-in method (the first origin's type, or the method a payment initiation starts), or null. */
  method: nullableTextSchema,
  settlement: { type: 'string', enum: settlementPeriodValues },
  customerId: nullableTextSchema,
  createdAt: instantSchema,
  ...testClockIdProperty,
}, ['testClockId']);
export type PaymentAttemptCreatedData = FromSchema<typeof paymentAttemptCreatedSchema>;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const attemptEventSchemas = {
  PaymentAttemptCreated: paymentAttemptCreatedSchema,
} as const;

export type AttemptEvent = { type: 'PaymentAttemptCreated'; data: PaymentAttemptCreatedData };

export const attemptEvents = {
  schemas: attemptEventSchemas,
  upcasters: [
    { type: 'PaymentAttemptCreated', fromVersion: 1, upcaster: nodesMaskedAsNow },
    { type: 'PaymentAttemptCreated', fromVersion: 2, upcaster: boundToNoClock },
  ],
} satisfies ContextEvents;

export const attemptStream = (attemptId: string) => `payment-attempt-${attemptId}`;
