import type { FromSchema } from 'json-schema-to-ts';
import { countrySchema } from './countries.ts';
import { pageOf, pageQueryProperties } from './common.ts';
import { documentTypes, emailSchema } from './identities.ts';

export const operationLevels = ['INACTIVE', 'BASIC', 'STANDARD', 'FULL'] as const;
export const customerDocumentStatuses = ['PENDING_UPLOAD', 'UPLOADED', 'APPROVED', 'REJECTED'] as const;
export const documentDecisions = ['APPROVED', 'REJECTED'] as const;

const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;
const documentNumberSchema = {
  type: 'string', pattern: '^[A-Za-z0-9.-]{3,32}$', examples: ['12.345.678-5'], description: 'unique per client; letters, digits, dots and dashes',
} as const;
const payerFields = {
  firstName: text(100),
  lastName: text(100),
  email: emailSchema,
  phoneNumber: { type: 'string', pattern: '^\\d{4,15}$', examples: ['912345678'], description: 'digits only, without the prefix' },
  phoneNumberPrefix: { type: 'string', pattern: '^\\+[1-9]\\d{0,3}$', examples: ['+56'], description: 'a plus sign and the country calling code, e.g. +56' },
  documentType: { type: 'string', enum: documentTypes },
  documentNumber: documentNumberSchema,
} as const;

export const createCustomerSchema = {
  title: 'CreateCustomer',
  description: 'Needs documentNumber or email (or both).',
  type: 'object',
  additionalProperties: false,
  properties: { ...payerFields, country: countrySchema },
} as const;
export type CreateCustomer = FromSchema<typeof createCustomerSchema>;

export const updateCustomerSchema = {
  title: 'UpdateCustomer',
  description: 'The payer fields; a new documentNumber must not belong to another customer of the client.',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: payerFields,
} as const;
export type UpdateCustomer = FromSchema<typeof updateCustomerSchema>;

/** Where a document's file is and what it holds: the same rules on creation and on a later upload. */
const documentFileProperties = {
  url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 },
  contentType: { type: 'string', pattern: '^[A-Za-z0-9][\\w.+-]*/[A-Za-z0-9][\\w.+-]*$', maxLength: 128,
    description: 'media type, e.g. image/png or application/pdf' },
} as const;

export const addCustomerDocumentSchema = {
  title: 'AddCustomerDocument',
  description: 'Without url the document waits for its upload (PENDING_UPLOAD); with one it is UPLOADED.',
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{1,39}$', examples: ['ID_FRONT'], description: 'kind of document, e.g. ID_FRONT, ID_BACK, PASSPORT, PROOF_OF_ADDRESS' },
    ...documentFileProperties,
  },
} as const;
export type AddCustomerDocument = FromSchema<typeof addCustomerDocumentSchema>;

export const uploadCustomerDocumentSchema = {
  title: 'UploadCustomerDocument',
  description: 'The uploaded file of a document that is PENDING_UPLOAD, or UPLOADED and not yet decided (a re-upload).',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: documentFileProperties,
} as const;
export type UploadCustomerDocument = FromSchema<typeof uploadCustomerDocumentSchema>;

export const documentDecisionBodySchema = {
  title: 'CustomerDocumentDecision',
  type: 'object',
  additionalProperties: false,
  required: ['decision'],
  properties: { decision: { type: 'string', enum: documentDecisions } },
} as const;

export const operationLevelBodySchema = {
  title: 'CustomerOperationLevelChange',
  type: 'object',
  additionalProperties: false,
  required: ['operationLevel'],
  properties: { operationLevel: { type: 'string', enum: operationLevels } },
} as const;

export const customerDocumentParamsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'documentId'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' },
    documentId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' },
  },
} as const;

const nullableText = { type: ['string', 'null'] } as const;

export const customerDocumentSchema = {
  title: 'CustomerDocument',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'url', 'contentType', 'status', 'uploadedAt'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string' },
    url: nullableText,
    contentType: nullableText,
    status: { type: 'string', enum: customerDocumentStatuses },
    uploadedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const customerSchema = {
  title: 'Customer',
  type: 'object',
  additionalProperties: false,
  required: [
    'id', 'clientId', 'firstName', 'lastName', 'email', 'phoneNumber', 'phoneNumberPrefix', 'documentNumber', 'documentType',
    'country', 'operationLevel', 'autoCreated', 'isDocumented', 'documents', 'createdAt', 'updatedAt',
  ],
  properties: {
    id: { type: 'string' },
    clientId: { type: 'string' },
    firstName: nullableText,
    lastName: nullableText,
    email: nullableText,
    phoneNumber: nullableText,
    phoneNumberPrefix: nullableText,
    documentNumber: nullableText,
    documentType: nullableText,
    country: nullableText,
    operationLevel: { type: 'string', enum: operationLevels },
    autoCreated: { type: 'boolean', description: 'true when a deposit created the customer from its originator' },
    isDocumented: { type: 'boolean', description: 'true from the first approved document on' },
    documents: { type: 'array', items: customerDocumentSchema },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export type CustomerRecord = FromSchema<typeof customerSchema>;

export const listCustomersQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    documentNumber: { type: 'string', maxLength: 32 },
    email: { type: 'string', maxLength: 254, description: 'case-insensitive' },
    operationLevel: { type: 'string', enum: operationLevels },
    ...pageQueryProperties,
  },
} as const;

export const customerPageSchema = pageOf(customerSchema);
