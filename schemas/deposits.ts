/**
 * Deposits without a destination: the provider's signed deposit notification, the assignment, the list of
 * deposits awaiting assignment and the unassigned balance widget (the interface's field names, spelling
 * included: `originanteName`).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountPattern, pageOf, pageQueryProperties } from './common.ts';
import { currencySchema } from './currencies.ts';
import { documentTypes } from './identities.ts';

const amount = { type: 'string', pattern: amountPattern, examples: ['1500.00'], description: 'decimal string at the currency’s scale' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;

export const depositNotificationSchema = {
  title: 'DepositNotification',
  type: 'object',
  additionalProperties: false,
  required: ['clientId', 'depositId', 'reference', 'amount', 'currency', 'originator', 'signature'],
  properties: {
    clientId: { ...idRef, description: 'the client whose collection rail received the funds' },
    depositId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$', examples: ['dep-0001'], description: 'the provider’s id of the deposit; externalId becomes `<provider>:<depositId>`' },
    reference: { type: 'string', minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9._-]+$', examples: ['0000003100012345678901'], description: 'the account number or CVU the payer sent the funds to' },
    amount,
    currency: currencySchema,
    originator: {
      title: 'DepositOriginator',
      type: 'object',
      additionalProperties: false,
      required: ['firstName', 'documentNumber'],
      description: 'who sent the funds; matched to a customer of the client by documentNumber, else created (autoCreated)',
      properties: {
        firstName: { type: 'string', minLength: 1, maxLength: 100 },
        lastName: { type: 'string', minLength: 1, maxLength: 100 },
        documentType: { type: 'string', enum: documentTypes },
        documentNumber: { type: 'string', pattern: '^[A-Za-z0-9.-]{3,32}$', examples: ['20-12345678-9'] },
      },
    },
    signature: {
      type: 'string', pattern: '^[0-9a-fA-F]{64}$', examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
      description: 'hex HMAC-SHA256 under PROVIDER_SECRET of `<depositId>:<clientId>:<reference>:<amount>:<currency>`',
    },
  },
} as const;
export type DepositNotification = FromSchema<typeof depositNotificationSchema>;

export const assignDepositSchema = {
  title: 'AssignDeposit',
  type: 'object',
  additionalProperties: false,
  required: ['accountId'],
  properties: {
    accountId: { ...idRef, description: 'one of your accounts, ACTIVE, in the deposit’s currency' },
    expectedAmount: {
      ...amount,
      description: 'what the payer owed; the deposit reconciles PAID, UNDERPAID or OVERPAID against it (PAID when omitted; with ' +
        'companionId, the amount still due when omitted)',
    },
    companionId: {
      ...idRef,
      description: 'the companion of an earlier underpaid deposit (UNDERPAID, CREATED: the amount still due) that this deposit pays: ' +
        'it becomes SETTLED once the deposit is; accountId must be the account the amount is owed to',
    },
  },
} as const;

export const expiresWithinValues = ['6h', '24h', '48h', ''] as const;

/** `clientId` is the tenant scope of the interface: the caller's own (another client's answers 404). */
const clientScope = { ...idRef, description: 'the caller’s clientId (the default); another client’s answers 404' } as const;

export const listUnassignedQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    clientId: clientScope,
    expiresWithin: {
      type: 'string', enum: expiresWithinValues,
      description: 'only deposits whose expiresAt is at most this far ahead (inclusive: one expiring in exactly 6 h is within 6h); empty or absent: all',
    },
    amountMin: { ...amount, description: 'inclusive lower bound on totalAmount' },
    amountMax: { ...amount, description: 'inclusive upper bound on totalAmount' },
    search: { type: 'string', minLength: 1, maxLength: 100, description: 'case-insensitive text in the originator’s first name, last name or document number' },
    ...pageQueryProperties,
  },
} as const;

export const unassignedDepositSchema = {
  title: 'UnassignedDeposit',
  description: 'A LOCAL_DEPOSIT payment awaiting assignment (status CREATED, no accountNumber).',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'externalId', 'type', 'status', 'totalAmount', 'currency', 'reference', 'originator', 'originanteName', 'customerId',
    'createdAt', 'expiresAt', 'hoursRemaining'],
  properties: {
    id: { type: 'string' },
    externalId: { type: 'string', description: '`<provider>:<provider deposit id>`' },
    type: { type: 'string', enum: ['LOCAL_DEPOSIT'] },
    status: { type: 'string', enum: ['CREATED'] },
    totalAmount: { type: 'string' },
    currency: { type: 'string' },
    reference: { type: 'string', description: 'the account number or CVU it was sent to' },
    originator: {
      type: 'object', additionalProperties: false, required: ['firstName', 'lastName', 'documentType', 'documentNumber'],
      properties: { firstName: { type: 'string' }, lastName: { type: ['string', 'null'] }, documentType: { type: ['string', 'null'] }, documentNumber: { type: 'string' } },
    },
    originanteName: { type: 'string', description: 'the originator’s first and last name' },
    customerId: { type: ['string', 'null'] },
    createdAt: time,
    expiresAt: time,
    hoursRemaining: { type: 'number', minimum: 0, description: 'hours until expiresAt (two decimals; 0 once past, until the expiry job runs)' },
  },
} as const;
export const unassignedDepositPageSchema = pageOf(unassignedDepositSchema);

export const widgetQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    clientId: clientScope,
    currency: { ...currencySchema, description: 'the currency of the widget; see the operation’s description for the default' },
  },
} as const;

const urgentItemSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['paymentId', 'originanteName', 'amount', 'currency', 'expiresAt', 'hoursRemaining'],
  properties: {
    paymentId: { type: 'string' },
    originanteName: { type: 'string' },
    amount: { type: 'string' },
    currency: { type: 'string' },
    expiresAt: time,
    hoursRemaining: { type: 'number', minimum: 0 },
  },
} as const;

const widgetProperties = {
  clientId: { type: 'string' },
  totalAmount: { type: 'string', description: 'sum of the deposits awaiting assignment in `currency`' },
  currency: { type: ['string', 'null'], description: 'null only when nothing awaits assignment and no currency was asked for' },
  count: { type: 'integer', minimum: 0 },
  urgent: { type: 'array', items: urgentItemSchema, description: 'deposits expiring within 6 hours (inclusive), soonest first' },
} as const;

const currencyWidgetSchema = {
  title: 'UnassignedBalanceWidget',
  type: 'object', additionalProperties: false, required: Object.keys(widgetProperties) as Array<keyof typeof widgetProperties>,
  properties: widgetProperties,
} as const;

export const widgetSchema = {
  title: 'UnassignedBalance',
  description: 'The widget of one currency (top-level fields), and `currencies`: one widget per currency the client has deposits awaiting assignment in.',
  type: 'object',
  additionalProperties: false,
  required: [...Object.keys(widgetProperties) as Array<keyof typeof widgetProperties>, 'currencies'],
  properties: { ...widgetProperties, currencies: { type: 'array', items: currencyWidgetSchema } },
} as const;
