/**
 * Events of an internal account. Stream: `account-<accountId>`. The movements of money (adjusted, credited, held,
 * released, debited) are the ledger's source contracts: their schemas and types are declared once, in
 * src/ledger/events.ts, and registered here with the account's other events.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';
import {
  accountAdjustedSchema, accountCreditedSchema, accountFundsHeldSchema, accountHoldDebitedSchema, accountHoldReleasedSchema,
  type AccountAdjustedData, type AccountCreditedData, type AccountFundsHeldData, type AccountHoldDebitedData,
  type AccountHoldReleasedData,
} from '../ledger/events.ts';

export const accountStatusValues = ['PENDING', 'ACTIVE', 'BLOCKED'] as const;
export type AccountStatus = (typeof accountStatusValues)[number];
const accountStatusSchema = { type: 'string', enum: accountStatusValues } as const;

const accountOpenedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  identityId: textSchema,
  externalId: nullableTextSchema,
  type: { type: 'string', enum: ['CHECKING', 'ASSET', 'SAVINGS', 'ESCROW', 'FEE'] },
  custody: { type: 'string', enum: ['PLATFORM', 'PARTNER_BANK', 'SELF'] },
  currency: textSchema,
  name: nullableTextSchema,
  accountNumber: textSchema,
  accountHolder: nullableTextSchema,
  country: nullableTextSchema,
  parentId: nullableTextSchema,
  openedAt: instantSchema,
});
export type AccountOpenedData = FromSchema<typeof accountOpenedSchema>;

/** The fields a PATCH changes besides its status (recorded apart, as AccountStatusChanged). */
const accountChangesSchema = closed({ name: textSchema, externalId: textSchema }, ['name', 'externalId']);

const accountCreditRefusedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  paymentId: textSchema,
  reason: { type: 'string', enum: ['ACCOUNT_NOT_ACTIVE'] },
  /** The account's status when it refused: BLOCKED, PENDING, or CLOSED (deleted). */
  status: { type: 'string', enum: [...accountStatusValues, 'CLOSED'] },
  settlementBatchId: nullableTextSchema,
  at: instantSchema,
});
export type AccountCreditRefusedData = FromSchema<typeof accountCreditRefusedSchema>;

/** The account's refusal of a hold it was asked for (`RequestHold`): recorded, so it is its answer for good. */
const accountHoldRefusedSchema = closed({
  accountId: textSchema,
  clientId: textSchema,
  currency: textSchema,
  holdId: textSchema,
  amount: amountSchema,
  refusal: { type: 'string', enum: ['ACCOUNT_NOT_ACTIVE', 'INSUFFICIENT_FUNDS'] },
  /** The account's status when it refused: ACTIVE (funds short), BLOCKED, PENDING, or CLOSED (deleted). */
  status: { type: 'string', enum: [...accountStatusValues, 'CLOSED'] },
  /** What could leave the account when it refused (balance less holds). */
  availableFunds: amountSchema,
  at: instantSchema,
});
export type AccountHoldRefusedData = FromSchema<typeof accountHoldRefusedSchema>;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const accountEventSchemas = {
  AccountOpened: accountOpenedSchema,
  AccountUpdated: closed({ accountId: textSchema, changes: accountChangesSchema, updatedAt: instantSchema }),
  AccountStatusChanged: closed({ accountId: textSchema, from: accountStatusSchema, to: accountStatusSchema, changedAt: instantSchema }),
  AccountAdjusted: accountAdjustedSchema,
  AccountCredited: accountCreditedSchema,
  AccountCreditRefused: accountCreditRefusedSchema,
  AccountFundsHeld: accountFundsHeldSchema,
  AccountHoldReleased: accountHoldReleasedSchema,
  AccountHoldDebited: accountHoldDebitedSchema,
  AccountHoldRefused: accountHoldRefusedSchema,
  AccountClosed: closed({ accountId: textSchema, closedAt: instantSchema }),
} as const;

/** Reservation of an account number, on its own stream (see accountNumberStream). */
export const accountNumberEventSchemas = {
  AccountNumberReserved: closed({ accountNumber: textSchema, accountId: textSchema }),
} as const;

type Data<K extends keyof typeof accountEventSchemas> = FromSchema<(typeof accountEventSchemas)[K]>;

export type AccountEvent =
  | { type: 'AccountOpened'; data: AccountOpenedData }
  | { type: 'AccountUpdated'; data: Data<'AccountUpdated'> }
  | { type: 'AccountStatusChanged'; data: Data<'AccountStatusChanged'> }
  /** An operator's test deposit or correction; the ledger posts it against the currency's adjustments account. */
  | { type: 'AccountAdjusted'; data: AccountAdjustedData }
  /** The account's answer to a settlement of a payment to it: credited... */
  | { type: 'AccountCredited'; data: AccountCreditedData; id?: string }
  /** ...or refused, because the account was not ACTIVE when asked (the payment becomes UNSETTLED). */
  | { type: 'AccountCreditRefused'; data: AccountCreditRefusedData; id?: string }
  | { type: 'AccountFundsHeld'; data: AccountFundsHeldData; id?: string }
  /** A hold the account would not place (RequestHold): not ACTIVE, or not enough available funds. */
  | { type: 'AccountHoldRefused'; data: AccountHoldRefusedData; id?: string }
  | { type: 'AccountHoldReleased'; data: AccountHoldReleasedData }
  | { type: 'AccountHoldDebited'; data: AccountHoldDebitedData }
  | { type: 'AccountClosed'; data: Data<'AccountClosed'> };

export type AccountNumberEvent = { type: 'AccountNumberReserved'; data: FromSchema<typeof accountNumberEventSchemas.AccountNumberReserved> };

export const accountEvents = { schemas: { ...accountEventSchemas, ...accountNumberEventSchemas } } satisfies ContextEvents;

export const accountStream = (accountId: string) => `account-${accountId}`;
/** Reservation of an account number: appended once with no_stream, never released, so never reused. */
export const accountNumberStream = (accountNumber: string) => `account-number-${accountNumber}`;
