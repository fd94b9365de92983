import type { FromSchema } from 'json-schema-to-ts';
import { amountPattern, pageOf, pageQueryProperties } from './common.ts';
import { countrySchema } from './countries.ts';
import { currencySchema } from './currencies.ts';

export const accountTypes = ['CHECKING', 'ASSET', 'SAVINGS', 'ESCROW', 'FEE'] as const;
export const custodyTypes = ['PLATFORM', 'PARTNER_BANK', 'SELF'] as const;
export const accountStatuses = ['PENDING', 'ACTIVE', 'BLOCKED'] as const;
const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;

export const createAccountSchema = {
  title: 'CreateAccount',
  type: 'object',
  additionalProperties: false,
  required: ['identityId', 'type', 'currency'],
  properties: {
    identityId: { ...idRef, description: 'the owning identity (user or organization) of this client' },
    externalId: text(128),
    type: { type: 'string', enum: accountTypes },
    custody: { type: 'string', enum: custodyTypes, default: 'PLATFORM', description: 'who holds the funds' },
    currency: currencySchema,
    name: text(200),
    parentId: { ...idRef, description: 'makes this a sub-account: same identity and currency as the parent' },
  },
} as const;
export type CreateAccount = FromSchema<typeof createAccountSchema>;

export const updateAccountSchema = {
  title: 'UpdateAccount',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: text(200),
    externalId: text(128),
    status: { type: 'string', enum: ['ACTIVE', 'BLOCKED'], description: 'a BLOCKED account receives nothing' },
  },
} as const;
export type UpdateAccount = FromSchema<typeof updateAccountSchema>;

export const adjustmentSchema = {
  title: 'AccountAdjustment',
  type: 'object',
  additionalProperties: false,
  required: ['amount', 'reason'],
  properties: {
    amount: { type: 'string', pattern: `^-?${amountPattern.slice(1)}`, examples: ['-12.50'], description: 'signed decimal string, within the currency’s scale, not zero' },
    reason: text(500),
  },
} as const;

const nullableText = { type: ['string', 'null'] } as const;
const balanceText = { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' } as const;

export const accountSchema = {
  title: 'Account',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'identityId', 'type', 'custody', 'balance', 'availableFunds', 'currency', 'accountNumber', 'status', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' },
    identityId: { type: 'string' },
    externalId: nullableText,
    type: { type: 'string', enum: accountTypes },
    custody: { type: 'string', enum: custodyTypes },
    balance: { ...balanceText, description: 'from the ledger' },
    availableFunds: { ...balanceText, description: 'balance less funds held (e.g. refunds in flight)' },
    currency: { type: 'string' },
    name: nullableText,
    accountNumber: { type: 'string' },
    accountHolder: nullableText,
    country: nullableText,
    status: { type: 'string', enum: accountStatuses },
    parentId: nullableText,
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export type AccountRecord = FromSchema<typeof accountSchema>;

export const dayMonthYearSchema = { type: 'string', pattern: '^\\d{2}/\\d{2}/\\d{4}$', examples: ['24/11/2026'], description: 'dd/mm/yyyy (UTC day, inclusive)' } as const;

export const listAccountsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    parentId: idRef,
    accountNumber: { type: 'string', maxLength: 32 },
    externalId: { type: 'string', maxLength: 128 },
    identityId: idRef,
    type: { type: 'string', enum: accountTypes },
    country: countrySchema,
    status: { type: 'string', enum: accountStatuses },
    startDate: dayMonthYearSchema,
    endDate: dayMonthYearSchema,
    ...pageQueryProperties,
  },
} as const;

export const accountPageSchema = pageOf(accountSchema);

const instant = (description: string) => ({ type: 'string', format: 'date-time', description, examples: ['2026-01-01T00:00:00Z'] }) as const;

export const statementQuerySchema = {
  title: 'StatementQuery',
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to'],
  properties: {
    from: instant('start of the range, inclusive (ISO 8601 instant)'),
    to: instant('end of the range, exclusive: the statement of [a, b) and that of [b, c) join exactly'),
  },
} as const;

const statementLineSchema = {
  title: 'StatementLine',
  type: 'object',
  additionalProperties: false,
  required: ['entryId', 'lineNo', 'occurredAt', 'description', 'amount', 'balanceAfter', 'paymentId', 'eventId'],
  properties: {
    entryId: { type: 'string', description: 'the journal entry (ledger_entries.entry_id)' },
    lineNo: { type: 'integer' },
    occurredAt: { type: 'string', format: 'date-time' },
    description: { type: 'string' },
    amount: { ...balanceText, description: 'signed: positive into the account' },
    balanceAfter: balanceText,
    paymentId: { ...nullableText, description: 'the payment the movement belongs to, if any' },
    eventId: { type: 'string', description: 'the stored event the entry was posted from' },
  },
} as const;

export const statementSchema = {
  title: 'AccountStatement',
  type: 'object',
  additionalProperties: false,
  required: ['accountId', 'currency', 'from', 'to', 'openingBalance', 'lines', 'closingBalance'],
  properties: {
    accountId: { type: 'string' },
    currency: { type: 'string' },
    from: { type: 'string', format: 'date-time' },
    to: { type: 'string', format: 'date-time' },
    openingBalance: { ...balanceText, description: 'every movement before `from`' },
    lines: { type: 'array', items: statementLineSchema },
    closingBalance: { ...balanceText, description: 'openingBalance plus the lines' },
  },
} as const;

export const balanceAsOfQuerySchema = {
  title: 'BalanceAsOfQuery',
  type: 'object',
  additionalProperties: false,
  required: ['asOf'],
  properties: { asOf: instant('the instant (ISO 8601); movements at it count') },
} as const;

export const balanceAsOfSchema = {
  title: 'AccountBalanceAsOf',
  type: 'object',
  additionalProperties: false,
  required: ['accountId', 'currency', 'asOf', 'balance'],
  properties: {
    accountId: { type: 'string' },
    currency: { type: 'string' },
    asOf: { type: 'string', format: 'date-time' },
    balance: { ...balanceText, description: 'the sum of the account’s ledger movements up to and including asOf' },
  },
} as const;
