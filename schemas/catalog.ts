/**
 * The payment catalog: the shape of its data files (src/catalog/data/*.json, validated at startup) and the
 * discovery endpoints that read it.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { countryCodes, countrySchema } from './countries.ts';
import { currencyCodes, currencySchema } from './currencies.ts';

/** The 27 node types of the interface, in its order. */
export const nodeTypes = [
  'CARD', 'CRYPTO', 'ACCOUNT', 'BANK_ACCOUNT', 'PIX', 'PCT', 'CVU', 'ETPAY', 'FINTOC', 'WEBPAY', 'SPEI', 'PSE',
  'BANCOLOMBIA', 'DAVIVIENDA', 'DAVIPLATA', 'NEQUI', 'BREB', 'WOMPI', 'LIGO', 'SIP', 'ACH', 'WIRE', 'FEDNOW', 'RTP',
  'SEPA', 'FPE', 'SWIFT',
] as const;
export type NodeTypeName = (typeof nodeTypes)[number];
export const nodeTypeSchema = { type: 'string', enum: nodeTypes, description: 'a payment node type' } as const;

export const directions = ['PAY_IN', 'PAY_OUT'] as const;
export type Direction = (typeof directions)[number];
export const settlementPeriods = ['INSTANT', 'T+1', 'T+2'] as const;
export const feeTypes = ['FIXED', 'PERCENTAGE'] as const;

/** A non-negative decimal string (the currency's scale is checked by the catalog loader). */
const decimalText = { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,18})?$' } as const;
const amountText = { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,8})?$', description: 'decimal string at the currency’s scale' } as const;
const perCurrencyAmounts = {
  type: 'object', minProperties: 1,
  propertyNames: { enum: currencyCodes },
  additionalProperties: decimalText,
} as const;

export const methodDescriptionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'icon', 'color'],
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 100 },
    icon: { type: 'string', minLength: 1, maxLength: 50 },
    color: { type: 'string', pattern: '^#[0-9A-Fa-f]{6}$' },
  },
} as const;

export const catalogFeeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'value'],
  properties: {
    type: { type: 'string', enum: feeTypes },
    value: decimalText,
    currency: currencySchema,
  },
  if: { properties: { type: { const: 'FIXED' } } },
  then: { required: ['currency'] },
} as const;

/** One entry of nodeTypes.json. */
export const catalogNodeTypeSchema = {
  title: 'CatalogNodeType',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'nodeKey', 'countries', 'directions', 'currencies', 'minAmount', 'maxAmount', 'fee', 'settlement',
    'requiredFields', 'description'],
  properties: {
    type: nodeTypeSchema,
    nodeKey: { type: 'string', pattern: '^[a-z][A-Za-z]{1,30}$' },
    countries: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: [...countryCodes, '*'] } },
    directions: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: directions } },
    currencies: { type: 'array', minItems: 1, uniqueItems: true, items: currencySchema },
    minAmount: perCurrencyAmounts,
    maxAmount: perCurrencyAmounts,
    fee: catalogFeeSchema,
    settlement: { type: 'string', enum: settlementPeriods },
    requiredFields: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[a-z][A-Za-z0-9]{0,40}$' } },
    description: methodDescriptionSchema,
  },
} as const;
export type CatalogNodeType = FromSchema<typeof catalogNodeTypeSchema>;

export const nodeTypesFileSchema = {
  type: 'array', minItems: nodeTypes.length, maxItems: nodeTypes.length, items: catalogNodeTypeSchema,
} as const;

export const bankSchema = {
  title: 'Bank',
  type: 'object',
  additionalProperties: false,
  required: ['code', 'name', 'countryCode'],
  properties: {
    code: { type: 'string', minLength: 1, maxLength: 20, description: 'the bank’s code in its country (or its BIC)' },
    name: { type: 'string', minLength: 1, maxLength: 120 },
    countryCode: countrySchema,
  },
} as const;
export type Bank = FromSchema<typeof bankSchema>;

export const banksFileSchema = { type: 'array', minItems: 1, items: bankSchema } as const;

/** `FROM:TO` → how many TO one FROM buys. */
export const productPattern = '^[A-Z]{3,4}:[A-Z]{3,4}$';
export const fxRatesFileSchema = {
  type: 'object', minProperties: 1,
  propertyNames: { pattern: productPattern },
  additionalProperties: decimalText,
} as const;

// ---- Discovery endpoints ----

const accountNumberQuery = { type: 'string', minLength: 1, maxLength: 32, description: 'an account of the caller; narrows to its currency' } as const;

export const paymentOriginsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    accountNumber: accountNumberQuery,
    currency: { ...currencySchema, description: 'the currency the payer pays in' },
    purchaseCurrency: { ...currencySchema, description: 'the currency the purchase is priced in; needs a product currency:purchaseCurrency' },
  },
} as const;

export const originItemSchema = {
  title: 'OriginListItem',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'origin', 'description', 'minimumAmount', 'maximumAmount', 'currency'],
  properties: {
    type: nodeTypeSchema,
    origin: { type: 'string', description: 'the node object a payment origin of this type carries' },
    description: methodDescriptionSchema,
    minimumAmount: amountText,
    maximumAmount: amountText,
    currency: currencySchema,
  },
} as const;
export type OriginItem = FromSchema<typeof originItemSchema>;
export const originListSchema = { type: 'array', items: originItemSchema } as const;

export const paymentDestinationsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    accountNumber: accountNumberQuery,
    type: nodeTypeSchema,
  },
} as const;

export const methodFeeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'value'],
  properties: {
    name: { type: 'string', enum: ['TRANSACTION'] },
    type: { type: 'string', enum: feeTypes },
    value: { type: 'string', description: 'percent, or the fixed amount' },
    currency: currencySchema,
  },
} as const;

export const limitsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['minAmount', 'maxAmount'],
  properties: { minAmount: amountText, maxAmount: amountText },
} as const;

export const destinationItemSchema = {
  title: 'DestinationListItem',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'amountOut', 'currency', 'settlement', 'fee', 'limits'],
  properties: {
    name: { type: 'string' },
    type: nodeTypeSchema,
    amountOut: { ...amountText, description: 'the most this destination can receive in one payment' },
    currency: currencySchema,
    settlement: { type: 'string', enum: settlementPeriods },
    fee: methodFeeSchema,
    limits: limitsSchema,
  },
} as const;
export type DestinationItem = FromSchema<typeof destinationItemSchema>;
export const destinationListSchema = { type: 'array', items: destinationItemSchema } as const;

export const countryParamSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['country'],
  properties: { country: { type: 'string', pattern: '^[A-Z]{3}$', examples: ['CHL'], description: 'ISO 3166-1 alpha-3' } },
} as const;

export const bankListSchema = { type: 'array', items: bankSchema } as const;

export const emptyQuerySchema = { type: 'object', additionalProperties: false, properties: {} } as const;

export const availableProductsSchema = {
  type: 'array',
  items: {
    title: 'AvailableProducts',
    type: 'object',
    additionalProperties: false,
    required: ['currency', 'payIn', 'payOut', 'products', 'limits', 'fees'],
    properties: {
      currency: currencySchema,
      payIn: { type: 'array', items: nodeTypeSchema },
      payOut: { type: 'array', items: nodeTypeSchema },
      products: {
        type: 'array',
        items: {
          type: 'object', additionalProperties: false, required: ['product', 'exchangeRate'],
          properties: { product: { type: 'string', pattern: productPattern }, exchangeRate: { type: 'string' } },
        },
      },
      limits: { type: 'object', description: 'per node type', additionalProperties: limitsSchema },
      fees: { type: 'object', description: 'per node type', additionalProperties: methodFeeSchema },
    },
  },
} as const;
