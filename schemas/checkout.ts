/**
 * Checkout sessions and payment links: the create body both share (DESIGN section 13), the pay body, the
 * records, the list queries, and the hosted pages' own calls (the checkout token is their only credential).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountPattern, freeFormBounds, pageOf, pageQueryProperties } from './common.ts';
import { currencySchema } from './currencies.ts';
import { countrySchema } from './countries.ts';
import { nodeTypeSchema } from './catalog.ts';
import { accountTypes, dayMonthYearSchema } from './accounts.ts';
import { documentTypes, emailSchema } from './identities.ts';
import { paymentNodesInputSchema } from './paymentNodes.ts';
import { detailedPaymentSchema } from './payments.ts';

export const checkoutSessionStatuses = ['ATTEMPT', 'ACTIVE', 'PROCESSING_PAYMENT', 'FINISHED', 'FAILED', 'EXPIRED'] as const;
export const customerRequirementValues = [
  'firstName', 'email', 'lastName', 'phoneNumber', 'phoneNumberPrefix', 'address', 'documentNumber', 'documentType',
] as const;
export const taxTypes = ['FIXED', 'PERCENTAGE'] as const;
export const checkoutSortFields = ['createdAt', 'expiresAt', 'totalAmount', 'status'] as const;

/** Items of one session or link. */
export const MAX_CHECKOUT_ITEMS = 100;
/** Destinations of one session or link. */
export const MAX_CHECKOUT_DESTINATIONS = 10;
/** A session's or link's lifetime, in seconds: at least 30 s, at most 30 days. */
export const MIN_DURATION_SECONDS = 30;
export const MAX_DURATION_SECONDS = 30 * 24 * 3600;
/** Length of a redirect URL, in characters. */
const MAX_URL_LENGTH = 2_000;
/** Values in one comma-separated link filter. */
export const MAX_FILTER_VALUES = 100;

const amount = { type: 'string', pattern: amountPattern, examples: ['1000'], description: 'decimal string at the currency’s scale' } as const;
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;
const idRef = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', examples: ['0b9d3c1e-6f0a-4a57-9a4b-2f4f0f0b6f10'] } as const;
const urlSchema = {
  type: 'string', maxLength: MAX_URL_LENGTH, pattern: '^https?://[^\\s<>"]+$', examples: ['https://shop.example.com/thanks'],
  description: 'an http(s) URL',
} as const;
const nullableText = { type: ['string', 'null'] } as const;
const time = { type: 'string', format: 'date-time' } as const;

export const taxInputSchema = {
  type: 'object', additionalProperties: false, required: ['name', 'type', 'value'],
  properties: {
    name: text(100),
    type: { type: 'string', enum: taxTypes },
    value: { ...amount, examples: ['19'], description: 'the percentage (PERCENTAGE) or the amount (FIXED, at the currency’s scale)' },
    amount: { ...amount, description: 'optional: the tax you computed; it must equal the service’s (half-up at the currency’s scale)' },
  },
} as const;

export const itemInputSchema = {
  type: 'object', additionalProperties: false, required: ['description', 'preTaxAmount'],
  properties: {
    description: text(200),
    preTaxAmount: amount,
    tax: { oneOf: [taxInputSchema, { type: 'null' }] },
    totalAmount: { ...amount, description: 'optional: preTaxAmount plus the tax; a value that disagrees is a 400' },
  },
} as const;

export const destinationAccountSchema = {
  type: 'object', additionalProperties: false, required: ['type', 'currency', 'accountNumber', 'accountHolder'],
  properties: {
    type: { type: 'string', enum: accountTypes },
    currency: currencySchema,
    accountNumber: { ...text(32), examples: ['1000000001'] },
    accountHolder: text(200),
  },
} as const;

const destinationMetadataSchema = {
  type: 'object', additionalProperties: false, required: ['image', 'description', 'category'],
  properties: { image: text(500), description: text(500), category: text(100) },
} as const;

export const checkoutDestinationSchema = {
  title: 'PaymentLinkDestination',
  type: 'object', additionalProperties: false, required: ['type', 'amount'],
  description: 'A part of what the payer pays: the destinations’ amounts add up to the session’s totalAmount. Each is an ACCOUNT '
    + 'destination naming the one account the payment credits (one of yours, ACTIVE, in the session’s currency); several split the '
    + 'total into labelled parts.',
  properties: {
    name: text(200),
    type: { ...nodeTypeSchema, examples: ['ACCOUNT'] },
    externalId: text(128),
    amount,
    metadata: destinationMetadataSchema,
    account: destinationAccountSchema,
  },
} as const;

export const nodeIdentitySchema = {
  title: 'NodeIdentity',
  type: 'object', additionalProperties: false, required: ['identityId'],
  properties: {
    identityId: { ...idRef, description: 'one of your identities' },
    name: text(200), lastname: text(200), nickname: text(200), documentNumber: text(32), entityType: text(50),
  },
} as const;

export const addressSchema = {
  type: 'object', additionalProperties: false,
  properties: {
    administrativeAreaLevel1: text(200), administrativeAreaLevel2: text(200), administrativeAreaLevel3: text(200),
    street: text(200), streetNumber: text(50), optionalAddress: text(200), zipcode: text(20), country: countrySchema,
  },
} as const;

export const checkoutCustomerInputSchema = {
  title: 'CheckoutCustomer',
  type: 'object', additionalProperties: false,
  properties: {
    id: { ...idRef, description: 'one of your customers' },
    firstName: text(100),
    email: emailSchema,
    lastName: text(100),
    phoneNumber: { type: 'string', pattern: '^\\d{4,15}$', examples: ['912345678'], description: 'digits only, without the prefix' },
    phoneNumberPrefix: { type: 'string', pattern: '^\\+[1-9]\\d{0,3}$', examples: ['+56'] },
    documentType: { type: 'string', enum: documentTypes },
    documentNumber: { type: 'string', pattern: '^[A-Za-z0-9.-]{3,32}$', examples: ['12.345.678-5'] },
    address: addressSchema,
  },
} as const;

/** What creates a session and a link alike (DESIGN section 13). */
const checkoutProperties = {
  items: { type: 'array', minItems: 1, maxItems: MAX_CHECKOUT_ITEMS, items: itemInputSchema },
  currency: { ...currencySchema, examples: ['CLP'] },
  preTaxAmount: { ...amount, description: 'optional: the sum of the items’ preTaxAmount; a value that disagrees is a 400' },
  totalAmount: { ...amount, description: 'optional: the sum of the items’ totalAmount; a value that disagrees is a 400' },
  paymentMethodsAllowed: {
    type: 'array', minItems: 1, maxItems: 27, uniqueItems: true, items: { ...nodeTypeSchema, examples: ['CARD'] },
    description: 'pay-in node types the payer may choose from',
  },
  destinations: { type: 'array', minItems: 1, maxItems: MAX_CHECKOUT_DESTINATIONS, items: checkoutDestinationSchema },
  duration: {
    type: 'integer', minimum: MIN_DURATION_SECONDS, maximum: MAX_DURATION_SECONDS, examples: [1800],
    description: 'seconds: a session expires this long after creation (or its last refresh); a link turns inactive this long after creation or activation',
  },
  owner: nodeIdentitySchema,
  customer: checkoutCustomerInputSchema,
  customerRequirements: { type: 'array', uniqueItems: true, maxItems: 8, items: { type: 'string', enum: customerRequirementValues } },
  successUrl: { ...urlSchema, description: 'where the payer lands once the payment settled' },
  failedUrl: { ...urlSchema, examples: ['https://shop.example.com/sorry'], description: 'where the payer lands when the payment failed' },
  redirectUrl: { ...urlSchema, description: 'where the payer is sent after paying, when there is no successUrl' },
} as const;
const checkoutRequired = ['items', 'currency', 'paymentMethodsAllowed', 'destinations', 'duration', 'owner'] as const;

const exampleCheckout = {
  items: [{ description: 'Coffee beans 1 kg', preTaxAmount: '10000', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19' } }],
  currency: 'CLP',
  paymentMethodsAllowed: ['CARD'],
  destinations: [{ type: 'ACCOUNT', amount: '11900', account: { type: 'CHECKING', currency: 'CLP', accountNumber: '1000000001', accountHolder: 'Tostaduría Sur' } }],
  duration: 1800,
  owner: { identityId: '0b9d3c1e-6f0a-4a57-9a4b-2f4f0f0b6f10' },
  customerRequirements: ['email'],
  successUrl: 'https://shop.example.com/thanks',
  failedUrl: 'https://shop.example.com/sorry',
};

export const createCheckoutSessionSchema = {
  title: 'CreateCheckoutSession', type: 'object', additionalProperties: false, required: checkoutRequired,
  properties: checkoutProperties, examples: [exampleCheckout],
} as const;
export type CreateCheckoutSession = FromSchema<typeof createCheckoutSessionSchema>;

export const createPaymentLinkSchema = {
  title: 'CreatePaymentLink', type: 'object', additionalProperties: false, required: checkoutRequired,
  properties: checkoutProperties, examples: [exampleCheckout],
} as const;

export const payCheckoutSessionSchema = {
  title: 'PayCheckoutSession', type: 'object', additionalProperties: false,
  properties: {
    description: text(500),
    origins: { ...paymentNodesInputSchema, maxItems: 1, description: 'the payer’s method, one of paymentMethodsAllowed, with its fields; required (a 400 naming origins without it)' },
    customer: { ...checkoutCustomerInputSchema, description: 'the payer’s fields, over the session’s customer; customerRequirements must be met' },
  },
  examples: [{
    origins: [{ type: 'CARD', card: { number: '4111111111111111', holder: 'Ana Pérez', expiryMonth: '12', expiryYear: '2099', cvv: '123' } }],
    customer: { email: 'ana@example.com', firstName: 'Ana' },
  }],
} as const;
export type PayCheckoutSession = FromSchema<typeof payCheckoutSessionSchema>;

const taxSchema = {
  type: 'object', additionalProperties: false, required: ['name', 'type', 'value', 'amount'],
  properties: { name: { type: 'string' }, type: { type: 'string', enum: taxTypes }, value: { type: 'string' }, amount: { type: 'string' } },
} as const;

export const itemSchema = {
  title: 'CheckoutItem', type: 'object', additionalProperties: false, required: ['description', 'preTaxAmount', 'totalAmount', 'tax'],
  properties: {
    description: { type: 'string' }, preTaxAmount: { type: 'string' },
    totalAmount: { type: 'string', description: 'preTaxAmount plus the tax amount' },
    tax: { oneOf: [taxSchema, { type: 'null' }] },
  },
} as const;

export const paymentMethodConfigSchema = {
  title: 'PaymentMethodConfig', type: 'object', additionalProperties: false,
  required: ['id', 'type', 'enabled', 'requiredFields', 'purchaseAmount'],
  properties: {
    id: { type: 'string', description: 'the method in this currency, e.g. card-clp' },
    type: { type: 'string' },
    enabled: { type: 'boolean', description: 'the catalog moves this currency with this method, and the amount is within its limits' },
    requiredFields: { type: 'array', items: { type: 'string' } },
    purchaseAmount: { type: 'string', description: 'what the payer pays in this currency' },
  },
} as const;

export const currencyConfigSchema = {
  title: 'CurrencyConfig', type: 'object', additionalProperties: false, required: ['currency', 'product', 'exchangeRate', 'paymentMethods'],
  properties: {
    currency: { type: 'string' },
    product: { type: 'string', description: 'SESSION_CURRENCY:PAYER_CURRENCY, e.g. CLP:USDC' },
    exchangeRate: { type: 'string', description: 'how many of this currency one unit of the session’s buys (the catalog’s rate)' },
    paymentMethods: { type: 'array', items: paymentMethodConfigSchema },
  },
} as const;

const outputCustomerSchema = {
  type: 'object', additionalProperties: false,
  properties: { ...checkoutCustomerInputSchema.properties, id: { type: 'string' }, email: { type: 'string' }, address: { type: 'object' } },
} as const;

const checkoutRecordProperties = {
  id: { type: 'string' },
  checkoutToken: { type: 'string', description: 'the credential of the hosted page; part of url' },
  url: { type: 'string', description: 'the hosted page that opens the checkout flow' },
  currency: { type: 'string' },
  preTaxAmount: { type: 'string' },
  totalAmount: { type: 'string' },
  items: { type: 'array', items: itemSchema },
  paymentMethodsAllowed: { type: 'array', items: { type: 'string' } },
  destinations: { type: 'array', items: { type: 'object' } },
  owner: { type: 'object' },
  customer: { oneOf: [outputCustomerSchema, { type: 'null' }] },
  customerRequirements: { type: 'array', items: { type: 'string' } },
  successUrl: nullableText,
  failedUrl: nullableText,
  expiresAt: time,
  createdAt: time,
  updatedAt: time,
} as const;

export const checkoutSessionSchema = {
  title: 'CheckoutSession', type: 'object', additionalProperties: false,
  required: [...Object.keys(checkoutRecordProperties) as Array<keyof typeof checkoutRecordProperties>,
    'paymentLinkId', 'status', 'paymentConfigs', 'redirectUrl', 'paymentId'],
  properties: {
    ...checkoutRecordProperties,
    paymentLinkId: nullableText,
    status: { type: 'string', enum: checkoutSessionStatuses, description: 'EXPIRED as soon as expiresAt passes on an ATTEMPT or ACTIVE session' },
    paymentConfigs: { type: 'array', items: currencyConfigSchema },
    redirectUrl: nullableText,
    paymentId: { ...nullableText, description: 'the session’s payment, once the payer paid' },
    payments: { type: 'array', items: detailedPaymentSchema, description: 'v2 (service-api-version 24-04-2025) only: the session’s payments' },
  },
} as const;

export const paymentLinkSchema = {
  title: 'PaymentLink', type: 'object', additionalProperties: false,
  required: [...Object.keys(checkoutRecordProperties) as Array<keyof typeof checkoutRecordProperties>, 'status', 'duration'],
  properties: {
    ...checkoutRecordProperties,
    status: { type: 'boolean', description: 'true while the link opens sessions: until `duration` seconds after creation or the last activation' },
    duration: { type: 'integer', description: 'seconds the link stays active after creation or activation' },
    expiresAt: { ...time, description: 'when the link turns inactive (unless activated again)' },
  },
} as const;

export const checkoutSessionPageSchema = pageOf(checkoutSessionSchema);
export const paymentLinkPageSchema = pageOf(paymentLinkSchema);

export const listCheckoutSessionsQuerySchema = {
  type: 'object', additionalProperties: false,
  properties: {
    identityId: { ...idRef, description: 'the owner identity' },
    accountNumber: { ...text(32), examples: ['1000000001'], description: 'an ACCOUNT destination' },
    status: { type: 'string', enum: checkoutSessionStatuses },
    startDate: dayMonthYearSchema,
    endDate: dayMonthYearSchema,
    sort: { type: 'string', pattern: `^(${checkoutSortFields.join('|')}):(asc|desc)$`, default: 'createdAt:desc', description: 'field:asc or field:desc' },
    limit: pageQueryProperties.limit,
    offset: pageQueryProperties.offset,
  },
} as const;

const commaList = (description: string, example: string) => ({
  type: 'string', minLength: 1, maxLength: 5_000, pattern: '^[^,]+(,[^,]+)*$', examples: [example],
  description: `${description}, comma-separated (at most ${MAX_FILTER_VALUES})`,
}) as const;

export const listPaymentLinksQuerySchema = {
  type: 'object', additionalProperties: false,
  properties: {
    ids: commaList('link ids', 'a1,b2'),
    statuses: { ...commaList('true / ACTIVE or false / INACTIVE', 'true'), pattern: '^(true|false|ACTIVE|INACTIVE)(,(true|false|ACTIVE|INACTIVE))*$' },
    accountNumbers: commaList('ACCOUNT destination account numbers', '1000000001'),
    customerEmails: commaList('customer emails', 'ana@example.com'),
    identityIds: commaList('owner identity ids', 'id-1'),
    ...pageQueryProperties,
  },
} as const;

/** The longest checkout token a path may carry, in characters (the service makes 32). */
export const MAX_CHECKOUT_TOKEN_LENGTH = 64;

export const checkoutTokenParamSchema = {
  type: 'object', additionalProperties: false, required: ['token'],
  properties: { token: { type: 'string', pattern: `^[A-Za-z0-9_-]{16,${MAX_CHECKOUT_TOKEN_LENGTH}}$`, examples: ['k3J9x0aQ2mN5pL8rT1vW4yZ7'] } },
} as const;

/** The hosted page's pay call: the method and its node, and the payer's fields. */
const { id: _merchantOnly, ...hostedPayerProperties } = checkoutCustomerInputSchema.properties;

export const hostedPaySchema = {
  title: 'HostedPay', type: 'object', additionalProperties: false, required: ['method'],
  properties: {
    method: { ...nodeTypeSchema, examples: ['CARD'] },
    currency: {
      ...currencySchema, examples: ['USD'],
      description: 'the currency the payer pays in: one of the session’s paymentConfigs in which the method is enabled (default: the session’s)',
    },
    fields: {
      type: 'object', maxProperties: 20, propertyNames: { pattern: '^[A-Za-z]{1,40}$' },
      additionalProperties: { type: 'string', minLength: 1, maxLength: 200 }, ...freeFormBounds(1, 20),
      examples: [{ number: '4111111111111111', holder: 'Ana Pérez', expiryMonth: '12', expiryYear: '2099' }],
      description: 'the method’s node object (its catalog requiredFields), checked as POST /checkout-sessions/{id}/payments checks ' +
        'origins[0]: a field the node does not have is refused; a card’s cvv is checked for shape and never kept',
    },
    customer: {
      ...checkoutCustomerInputSchema, title: 'HostedPayer', properties: hostedPayerProperties,
      description: 'the payer’s fields as typed: never matched to an existing customer unless they keep the document number of ' +
        'the customer the merchant set on the session (no `id`: only the merchant names a customer)',
    },
  },
} as const;

export type HostedPay = FromSchema<typeof hostedPaySchema>;

export const hostedMethodSchema = {
  title: 'HostedMethod', type: 'object', additionalProperties: false, required: ['method'],
  properties: { method: { ...nodeTypeSchema, examples: ['CARD'] } },
} as const;

export const hostedStatusSchema = {
  title: 'HostedCheckoutStatus', type: 'object', additionalProperties: false, required: ['status', 'redirectTo'],
  properties: {
    status: { type: 'string', enum: checkoutSessionStatuses },
    paymentStatus: nullableText,
    redirectTo: { ...nullableText, description: 'where the page sends the payer now (successUrl or failedUrl), if anywhere' },
  },
} as const;

export const hostedSessionOpenedSchema = {
  type: 'object', additionalProperties: false, required: ['url'], properties: { url: { type: 'string' } },
} as const;
