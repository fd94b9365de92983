/**
 * Payment nodes: the origins (pay-in) and destinations (pay-out) of a payment. A node names its `type` (one of
 * the catalog's 27) and carries exactly one node object, under that type's node key (PIX → `pix`, CRYPTO →
 * `wallet`, ...). The schema bounds the shape; src/payments/nodes.ts checks the node against the catalog
 * (direction, required fields, country, currency, limits) and sanitizes card data before anything is stored.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { catalogFeeSchema, limitsSchema, nodeTypeSchema, settlementPeriods, type NodeTypeName } from './catalog.ts';
import { countrySchema } from './countries.ts';
import { currencySchema } from './currencies.ts';

/** Type → node key, as in src/catalog/data/nodeTypes.json (a test keeps the two in step). */
export const nodeKeyOf = {
  CARD: 'card', CRYPTO: 'wallet', ACCOUNT: 'account', BANK_ACCOUNT: 'bank', PIX: 'pix', PCT: 'pct', CVU: 'cvu',
  ETPAY: 'etpay', FINTOC: 'fintoc', WEBPAY: 'webpay', SPEI: 'spei', PSE: 'pse', BANCOLOMBIA: 'bancolombia',
  DAVIVIENDA: 'davivienda', DAVIPLATA: 'daviplata', NEQUI: 'nequi', BREB: 'breb', WOMPI: 'wompi', LIGO: 'ligo',
  SIP: 'sip', ACH: 'ach', WIRE: 'wire', FEDNOW: 'fedNow', RTP: 'rtp', SEPA: 'sepa', FPE: 'fpe', SWIFT: 'swift',
} as const satisfies Record<NodeTypeName, string>;
export type NodeKey = (typeof nodeKeyOf)[NodeTypeName];
export const nodeKeys: readonly NodeKey[] = Object.values(nodeKeyOf);

/** Origins or destinations a payment may name. */
export const MAX_PAYMENT_NODES = 10;
/** Bound on every field of a node object. */
export const MAX_NODE_FIELD_LENGTH = 200;

const field = { type: 'string', maxLength: MAX_NODE_FIELD_LENGTH } as const;
const emailField = { type: 'string', format: 'email', maxLength: MAX_NODE_FIELD_LENGTH } as const;
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;

/**
 * A node object: its known fields are declared for the documentation, and further string fields are accepted
 * (bounded) so rails with fields of their own work; the type's required fields are enforced in code, which
 * answers with the field's name. `country` is alpha-3 wherever it appears.
 */
function nodeObject<const Fields extends Record<string, object>>(description: string, fields: Fields) {
  return {
    type: 'object',
    description,
    maxProperties: 20,
    properties: { ...fields, country: countrySchema },
    additionalProperties: field,
  } as const;
}

const bankTransfer = { accountNumber: field, accountHolder: field, bank: field } as const;

/** The node objects, by node key, as a client sends them. */
const nodeObjectSchemas = {
  // The card is the one closed object: anything beyond its known fields could carry card data into the store.
  card: {
    type: 'object',
    description: 'a card; `number` and `cvv` are never stored (see the stored card)',
    additionalProperties: false,
    properties: {
      number: { type: 'string', pattern: '^\\d{12,19}$', description: 'the full card number (PAN)' },
      holder: field,
      expiryMonth: { type: 'string', pattern: '^(0?[1-9]|1[0-2])$' },
      expiryYear: { type: 'string', pattern: '^(\\d{2}|\\d{4})$' },
      brand: field,
      cardType: field,
      last4: { type: 'string', pattern: '^\\d{4}$' },
      country: countrySchema,
      cvv: { type: 'string', pattern: '^\\d{3,4}$', description: 'checked by the provider, never stored' },
    },
  },
  wallet: nodeObject('a stablecoin wallet', {
    accountId: field, provider: field, referenceId: field, address: field, network: field, token: field,
  }),
  account: nodeObject('an account on this platform', { id: field, accountNumber: field, name: field }),
  bank: nodeObject('a bank account', {
    ...bankTransfer, currency: currencySchema, typeAccount: field, accountHolderDni: field,
  }),
  pix: nodeObject('a Pix key', { key: field, keyType: field, documentNumber: field }),
  pct: nodeObject('Pago con transferencia', { documentNumber: field, documentType: field, bank: field, email: emailField }),
  cvu: nodeObject('an Argentine CVU', { cvu: field, alias: field, documentNumber: field }),
  etpay: nodeObject('ETpay', { bank: field, documentNumber: field, email: emailField }),
  fintoc: nodeObject('Fintoc', { bank: field, documentNumber: field, email: emailField }),
  webpay: nodeObject('Webpay', { email: emailField, documentNumber: field }),
  spei: nodeObject('a SPEI CLABE', { clabe: field, bank: field, accountHolder: field }),
  pse: nodeObject('PSE', { bank: field, documentType: field, documentNumber: field, personType: field, email: emailField }),
  bancolombia: nodeObject('Botón Bancolombia', { documentNumber: field, documentType: field, email: emailField }),
  davivienda: nodeObject('Davivienda', { documentNumber: field, documentType: field, email: emailField }),
  daviplata: nodeObject('Daviplata', { phoneNumber: field, documentNumber: field, documentType: field }),
  nequi: nodeObject('Nequi', { phoneNumber: field, documentNumber: field }),
  breb: nodeObject('a Bre-B key', { key: field, keyType: field, documentNumber: field }),
  wompi: nodeObject('Wompi', { email: emailField, documentNumber: field, phoneNumber: field }),
  ligo: nodeObject('Ligo', { phoneNumber: field, documentNumber: field }),
  sip: nodeObject('SIP', { documentNumber: field, documentType: field, bank: field, phoneNumber: field }),
  ach: nodeObject('a US account by ACH', { ...bankTransfer, routingNumber: field, accountType: field }),
  wire: nodeObject('a US account by wire', { ...bankTransfer, routingNumber: field, address: field }),
  fedNow: nodeObject('a US account by FedNow', { ...bankTransfer, routingNumber: field }),
  rtp: nodeObject('a US account by RTP', { ...bankTransfer, routingNumber: field }),
  sepa: nodeObject('a SEPA account', { iban: field, accountHolder: field, bic: field }),
  fpe: nodeObject('a UK account by Faster Payments', { ...bankTransfer, sortCode: field }),
  swift: nodeObject('an account abroad by SWIFT', { ...bankTransfer, bic: field, iban: field, address: field }),
} as const satisfies Record<NodeKey, object>;

/** What is stored of a card: masked number, BIN and last four; never the full number nor the cvv. */
export const storedCardSchema = {
  type: 'object',
  description: 'a card as stored: `number` masked (the last four digits, and the first six only for a number of 16 digits or more), no cvv',
  additionalProperties: false,
  required: ['number', 'holder', 'expiryMonth', 'expiryYear', 'brand', 'last4'],
  properties: {
    number: { type: 'string', pattern: '^(\\d{6}\\*{6,9}|\\*{8,11})\\d{4}$', description: 'masked, e.g. 400000******0002, or ********1117 for 12 digits' },
    holder: field,
    expiryMonth: { type: 'string', pattern: '^(0[1-9]|1[0-2])$', description: 'two digits' },
    expiryYear: { type: 'string', pattern: '^\\d{4}$', description: 'four digits' },
    brand: { ...field, description: 'as sent, or inferred: VISA, MASTERCARD, AMEX, UNKNOWN' },
    cardType: field,
    last4: { type: 'string', pattern: '^\\d{4}$' },
    bin: { type: 'string', pattern: '^\\d{6}$', description: 'the first six digits; only for a number of 16 digits or more' },
    country: countrySchema,
  },
} as const;

const metadataSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    image: { type: 'string', maxLength: 500 },
    description: { type: 'string', maxLength: 500 },
    category: { type: 'string', maxLength: 100 },
  },
} as const;

const identitySchema = {
  type: 'object',
  additionalProperties: false,
  description: 'who holds the node',
  properties: {
    name: { type: 'string', maxLength: 120 },
    documentNumber: { type: 'string', maxLength: 120 },
    externalId: { type: 'string', maxLength: 120 },
    lastname: { type: 'string', maxLength: 120 },
  },
} as const;

/**
 * A node's holder as the detailed shape shows it: the payment node's fields, and the nickname an attempt's
 * destination may name.
 */
export const nodeIdentitySchema = {
  ...identitySchema,
  properties: { ...identitySchema.properties, nickname: { type: 'string', maxLength: 120 } },
} as const;

/**
 * The origin type of a payment attempt that starts a pay-in method from the payer's bank (open banking), spelled
 * as the interface spells it.
 */
export const paymentInitiationType = 'PAYMENT_INITATION';

/** One origin or destination as a client sends it. */
export const paymentNodeInputSchema = {
  title: 'PaymentNodeInput',
  type: 'object',
  description: 'a payment origin or destination: its `type` and exactly the one node object its type names',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: nodeTypeSchema,
    name: text(120),
    externalId: text(64),
    amount: { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,18})?$', description: 'defaults to the payment’s amount; an origin’s is what the payer pays through it: a single origin’s must equal what the payment charges (purchaseAmount in purchaseCurrency, else totalAmount), several origins each name theirs and they add up to it (400 otherwise)' },
    currency: { ...currencySchema, description: 'defaults to the payment’s currency' },
    metadata: metadataSchema,
    identity: identitySchema,
    ...nodeObjectSchemas,
  },
} as const;
export type PaymentNodeInput = FromSchema<typeof paymentNodeInputSchema>;

export const paymentNodesInputSchema = { type: 'array', maxItems: MAX_PAYMENT_NODES, items: paymentNodeInputSchema } as const;

/**
 * A node as stored and answered: the checked input, its currency and amount filled in, and what the catalog
 * says of its type. Exactly one node object is present, under the type's node key.
 */
export const paymentNodeSchema = {
  title: 'PaymentNode',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name', 'externalId', 'amount', 'currency', 'settlement', 'fee', 'limits', 'metadata', 'identity',
    'metaData'],
  properties: {
    type: nodeTypeSchema,
    name: { type: ['string', 'null'], maxLength: 120 },
    externalId: { type: ['string', 'null'], maxLength: 64 },
    amount: { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,8})?$', description: 'at the currency’s scale' },
    currency: currencySchema,
    settlement: { type: 'string', enum: settlementPeriods },
    fee: { ...catalogFeeSchema, description: 'the catalog fee of the type: a percentage, or a fixed amount in `currency`' },
    limits: { ...limitsSchema, description: 'the type’s limits in the node’s currency' },
    metadata: { oneOf: [metadataSchema, { type: 'null' }] },
    identity: { oneOf: [identitySchema, { type: 'null' }] },
    metaData: {
      type: 'object',
      additionalProperties: false,
      required: ['image', 'title', 'description'],
      description: 'how to show the method (from the catalog)',
      properties: { image: { type: 'string' }, title: { type: 'string' }, description: { type: 'string' } },
    },
    ...nodeObjectSchemas,
    card: storedCardSchema,
  },
} as const;
export type PaymentNode = FromSchema<typeof paymentNodeSchema>;
