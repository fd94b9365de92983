import type { FromSchema } from 'json-schema-to-ts';
import { countrySchema } from './countries.ts';
import { freeFormBounds, MAX_FREE_FORM_DEPTH, MAX_FREE_FORM_KEYS, pageOf, pageQueryProperties } from './common.ts';

export const identityTypes = ['ORGANIZATION', 'USER'] as const;
export const identityStatuses = ['PENDING', 'PENDING_EMAIL_VALIDATION', 'PENDING_PHONE_VALIDATION', 'SCREENING', 'ACTIVE'] as const;
export const documentTypes = [
  'DNI', 'CUIT', 'CUIL', 'RUT', 'CPF', 'CNPJ', 'CURP', 'RFC', 'CC', 'CE', 'NIT', 'TI', 'RUC', 'CI',
  'PASSPORT', 'SSN', 'EIN', 'TIN', 'NIE', 'NIF', 'OTHER',
] as const;

export const emailSchema = { type: 'string', format: 'email', maxLength: 254 } as const;
/** E.164: a plus sign, the country code and the number. */
export const phoneSchema = { type: 'string', pattern: '^\\+[1-9]\\d{6,14}$', examples: ['+56912345678'], description: 'E.164, e.g. +56912345678' } as const;
const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;
/**
 * The interface leaves the structure of rules open: any JSON object, with at most 100 top-level keys and the
 * free-form bounds (nesting depth and keys in all).
 */
const rulesSchema = {
  type: 'object', maxProperties: 100, ...freeFormBounds(),
  description: `free-form rules object: at most 100 top-level keys, ${MAX_FREE_FORM_KEYS} keys in all, ` +
    `nested at most ${MAX_FREE_FORM_DEPTH} levels deep (the object itself is level 1)`,
} as const;

export const accessScopeSchema = {
  title: 'AccessScope',
  type: 'object',
  additionalProperties: false,
  required: ['resource', 'reference', 'permissions'],
  properties: {
    resource: { type: 'string', pattern: '^[A-Z][A-Z_]{1,39}$', examples: ['ACCOUNT'], description: 'kind of resource, e.g. IDENTITY, ACCOUNT' },
    reference: text(128),
    permissions: { type: 'array', minItems: 1, maxItems: 20, uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z_:.-]{1,40}$' } },
  },
} as const;
export type AccessScope = FromSchema<typeof accessScopeSchema>;

export const removeAccessScopeSchema = {
  title: 'AccessScopeToRemove',
  type: 'object',
  additionalProperties: false,
  required: ['resource', 'reference'],
  properties: {
    resource: accessScopeSchema.properties.resource,
    reference: accessScopeSchema.properties.reference,
    permissions: { ...accessScopeSchema.properties.permissions, description: 'omitted: the whole scope' },
  },
} as const;
export type AccessScopeToRemove = FromSchema<typeof removeAccessScopeSchema>;

export const createIdentitySchema = {
  title: 'CreateIdentity',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name'],
  properties: {
    type: { type: 'string', enum: identityTypes },
    name: text(200),
    nickname: text(100),
    email: emailSchema,
    phone: phoneSchema,
    documentNumber: { type: 'string', pattern: '^[A-Za-z0-9.-]{3,32}$' },
    documentType: { type: 'string', enum: documentTypes },
    idv: text(128),
    country: countrySchema,
    externalId: text(128),
    lastname: text(200),
    rules: rulesSchema,
  },
} as const;
export type CreateIdentity = FromSchema<typeof createIdentitySchema>;

export const updateIdentitySchema = {
  title: 'UpdateIdentity',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: text(200),
    nickname: text(100),
    country: countrySchema,
    externalId: text(128),
    lastname: text(200),
    rules: rulesSchema,
    gender: { type: 'string', enum: ['FEMALE', 'MALE', 'NON_BINARY', 'OTHER', 'UNDISCLOSED'] },
  },
} as const;
export type UpdateIdentity = FromSchema<typeof updateIdentitySchema>;

const childIdsSchema = {
  type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
} as const;

/** The identities to link or unlink: the interface's bare array of ids, or `{children: [ids]}`. */
export const childrenBodySchema = {
  title: 'IdentityChildren',
  description: 'identity ids: a bare array (`["id-1", "id-2"]`), or `{"children": [...]}`',
  examples: [['3f0c6a52-0b8e-4a8e-9d4e-1c1f7c1d2e3f']],
  oneOf: [
    childIdsSchema,
    {
      type: 'object',
      additionalProperties: false,
      required: ['children'],
      properties: { children: childIdsSchema },
    },
  ],
} as const;

export type ChildrenBody = FromSchema<typeof childrenBodySchema>;

export const identityStatusBodySchema = {
  title: 'IdentityStatusChange',
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: { status: { type: 'string', enum: identityStatuses } },
} as const;

const nullableText = { type: ['string', 'null'] } as const;

export const identitySchema = {
  title: 'Identity',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'name', 'status', 'securityOptions', 'children', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: identityTypes },
    name: { type: 'string' },
    nickname: nullableText,
    email: nullableText,
    phone: nullableText,
    documentNumber: nullableText,
    documentType: nullableText,
    idv: nullableText,
    securityOptions: {
      type: 'object',
      additionalProperties: false,
      required: ['twoFactorAuth', 'signTrx', 'signAccountsOperations', 'accessControl'],
      properties: {
        twoFactorAuth: { type: 'boolean' },
        signTrx: { type: 'boolean' },
        signAccountsOperations: { type: 'boolean' },
        accessControl: {
          type: 'object', additionalProperties: false, required: ['scopes'],
          properties: { scopes: { type: 'array', items: accessScopeSchema } },
        },
      },
    },
    country: nullableText,
    children: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['id', 'name', 'email'],
        properties: { id: { type: 'string' }, name: { type: 'string' }, email: nullableText },
      },
    },
    parentId: nullableText,
    status: { type: 'string', enum: identityStatuses },
    externalId: nullableText,
    lastname: nullableText,
    bankAccount: { type: ['object', 'null'] },
    rules: { type: ['object', 'null'] },
    gender: nullableText,
    kyc: { type: ['object', 'null'] },
    watchList: { type: ['object', 'null'] },
    extendedData: { type: 'array' },
    address: { type: ['object', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export type IdentityRecord = FromSchema<typeof identitySchema>;

export const listIdentitiesQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: identityTypes },
    email: { type: 'string', maxLength: 254 },
    documentNumber: { type: 'string', maxLength: 32 },
    phone: { type: 'string', maxLength: 16 },
    country: countrySchema,
    status: { type: 'string', enum: identityStatuses },
    ...pageQueryProperties,
  },
} as const;

export const identityPageSchema = pageOf(identitySchema);
