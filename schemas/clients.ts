import type { FromSchema } from 'json-schema-to-ts';

export const createClientBodySchema = {
  title: 'CreateClient',
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S', description: 'the merchant’s name' },
  },
} as const;

export const clientCredentialsSchema = {
  title: 'ClientCredentials',
  type: 'object',
  additionalProperties: false,
  required: ['clientId', 'name'],
  properties: {
    clientId: { type: 'string' },
    clientSecret: { type: 'string', description: 'shown only in this response (absent on an idempotent replay); stored hashed' },
    apiKey: { type: 'string', description: 'shown only in this response (absent on an idempotent replay); stored hashed' },
    name: { type: 'string' },
  },
} as const;
export type ClientCredentials = FromSchema<typeof clientCredentialsSchema>;

export const authBodySchema = {
  title: 'AuthRequest',
  type: 'object',
  additionalProperties: false,
  required: ['clientId', 'clientSecret'],
  properties: {
    clientId: { type: 'string', minLength: 1, maxLength: 64 },
    clientSecret: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

export const authResponseSchema = {
  title: 'AuthResponse',
  type: 'object',
  additionalProperties: false,
  required: ['tokenType', 'expiresIn'],
  properties: {
    accessToken: { type: 'string', description: 'always present, except on an idempotent replay (tokens are not kept)' },
    tokenType: { type: 'string', enum: ['Bearer'] },
    expiresIn: { type: 'integer', description: 'seconds until the token expires' },
  },
} as const;

export const currentClientSchema = {
  title: 'CurrentClient',
  type: 'object',
  additionalProperties: false,
  required: ['clientId', 'name'],
  properties: { clientId: { type: 'string' }, name: { type: 'string' } },
} as const;

/** A USD-equivalent amount: whole dollars and cents. */
const usdAmount = { type: 'string', pattern: '^\\d{1,15}(\\.\\d{1,2})?$', examples: ['1000.00'] } as const;

export const reviewThresholdsBodySchema = {
  title: 'ReviewThresholdsChange',
  type: 'object',
  additionalProperties: false,
  required: ['basicUsd', 'standardUsd'],
  properties: {
    basicUsd: { ...usdAmount, description: 'a BASIC payer’s payment (or one without a payer) is reviewed from this USD-equivalent amount' },
    standardUsd: { ...usdAmount, examples: ['10000.00'], description: 'a STANDARD payer’s payment is reviewed from this amount; at least basicUsd' },
  },
} as const;

export const reviewThresholdsSchema = {
  title: 'ReviewThresholds',
  type: 'object',
  additionalProperties: false,
  required: ['clientId', 'basicUsd', 'standardUsd', 'source'],
  properties: {
    clientId: { type: 'string' },
    basicUsd: { type: 'string' },
    standardUsd: { type: 'string' },
    source: { type: 'string', enum: ['CLIENT', 'DEFAULT'], description: 'set for this client, or the environment’s defaults' },
  },
} as const;
