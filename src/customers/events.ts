/**
 * Events of a customer (payer). Stream: `customer-<customerId>`. A client's document numbers are reserved in
 * streams of their own, `customer-doc-<clientId>-<documentNumber>`, so two customers can never share one.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

export const operationLevelValues = ['INACTIVE', 'BASIC', 'STANDARD', 'FULL'] as const;
export type OperationLevel = (typeof operationLevelValues)[number];
const operationLevelSchema = { type: 'string', enum: operationLevelValues } as const;

export const documentStatusValues = ['PENDING_UPLOAD', 'UPLOADED', 'APPROVED', 'REJECTED'] as const;
export type DocumentStatus = (typeof documentStatusValues)[number];
export type LevelChangeReason = 'DOCUMENTED' | 'OPERATION_LEVEL';

/** A payer's own fields, as recorded: each present only when known. */
const payerProperties = {
  firstName: textSchema,
  lastName: textSchema,
  /** Lower-case. */
  email: textSchema,
  phoneNumber: textSchema,
  phoneNumberPrefix: textSchema,
  documentType: textSchema,
  documentNumber: textSchema,
} as const;
const payerFieldNames = ['firstName', 'lastName', 'email', 'phoneNumber', 'phoneNumberPrefix', 'documentType', 'documentNumber'] as const;

const customerFieldsSchema = closed({ ...payerProperties, country: textSchema }, [...payerFieldNames, 'country']);
/** What a customer is created with (the handler maps the request to it field by field). */
export type CustomerFields = FromSchema<typeof customerFieldsSchema>;

const customerChangesSchema = closed(payerProperties, payerFieldNames);
/** The payer fields an update changes: only those that differ. */
export type CustomerChanges = FromSchema<typeof customerChangesSchema>;

const customerDocumentSchema = closed({
  documentId: textSchema,
  type: textSchema,
  url: nullableTextSchema,
  contentType: nullableTextSchema,
  status: { type: 'string', enum: documentStatusValues },
  uploadedAt: { type: ['string', 'null'], format: 'date-time' },
});
export type CustomerDocument = FromSchema<typeof customerDocumentSchema>;

const documentDecisionSchema = closed({ customerId: textSchema, documentId: textSchema, decidedAt: instantSchema });
const documentNumberSchema = closed({ clientId: textSchema, documentNumber: textSchema, customerId: textSchema, at: instantSchema });

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const customerEventSchemas = {
  CustomerCreated: closed({
    ...payerProperties, country: textSchema, customerId: textSchema, clientId: textSchema, operationLevel: operationLevelSchema,
    autoCreated: { type: 'boolean' }, createdAt: instantSchema,
  }, [...payerFieldNames, 'country']),
  CustomerUpdated: closed({
    customerId: textSchema, changes: customerChangesSchema, previousDocumentNumber: nullableTextSchema, updatedAt: instantSchema,
  }, ['previousDocumentNumber']),
  CustomerDocumentAdded: closed({ customerId: textSchema, document: customerDocumentSchema, addedAt: instantSchema }),
  CustomerDocumentUploaded: closed({
    customerId: textSchema, documentId: textSchema, url: textSchema, contentType: nullableTextSchema, uploadedAt: instantSchema,
  }),
  /**
   * A creation of the customer was given up: the document number reserved for it (the reservation at
   * `reservationRevision` of the number's stream) waited longer than ABANDONED_RESERVATION_MS for the customer
   * (its process died, or its release failed). Recorded on the customer's stream before the number is released,
   * so that the creation holding that reservation, should it arrive after all, is refused instead of recording a
   * customer whose number is no longer reserved for it. A creation that reserves the number again (the same
   * request sent again) holds another reservation, and goes through.
   */
  CustomerCreationAbandoned: closed({
    customerId: textSchema, clientId: textSchema, documentNumber: textSchema, reservationRevision: { type: 'integer', minimum: 0 },
    abandonedAt: instantSchema,
  }),
  CustomerDocumentApproved: documentDecisionSchema,
  CustomerDocumentRejected: documentDecisionSchema,
  /**
   * What becomes the `customer.levelChanged` webhook: a snapshot of the customer at the change. It carries the
   * number of documents, never their URLs.
   */
  CustomerLevelChanged: closed({
    customerId: textSchema,
    clientId: textSchema,
    firstName: nullableTextSchema,
    lastName: nullableTextSchema,
    email: nullableTextSchema,
    documentNumber: nullableTextSchema,
    operationLevel: operationLevelSchema,
    previousOperationLevel: operationLevelSchema,
    autoCreated: { type: 'boolean' },
    documentsCount: { type: 'integer', minimum: 0 },
    isDocumented: { type: 'boolean' },
    reason: { type: 'string', enum: ['DOCUMENTED', 'OPERATION_LEVEL'] },
    changedAt: instantSchema,
  }),
} as const;

export const documentNumberEventSchemas = {
  CustomerDocumentNumberReserved: documentNumberSchema,
  CustomerDocumentNumberReleased: documentNumberSchema,
} as const;

type Data<K extends keyof typeof customerEventSchemas> = FromSchema<(typeof customerEventSchemas)[K]>;
type NumberData<K extends keyof typeof documentNumberEventSchemas> = FromSchema<(typeof documentNumberEventSchemas)[K]>;

export type CustomerLevelChangedData = Data<'CustomerLevelChanged'>;

export type CustomerEvent =
  | { type: 'CustomerCreated'; data: Data<'CustomerCreated'> }
  /** Only the fields that differ; `previousDocumentNumber` is set when the document number changes. */
  | { type: 'CustomerUpdated'; data: Data<'CustomerUpdated'> }
  /** A creation given up before it was recorded (see its schema): that reservation's creation never happens. */
  | { type: 'CustomerCreationAbandoned'; data: Data<'CustomerCreationAbandoned'> }
  | { type: 'CustomerDocumentAdded'; data: Data<'CustomerDocumentAdded'> }
  /** A file for a document added without one, or a new file for an UPLOADED document not yet decided. */
  | { type: 'CustomerDocumentUploaded'; data: Data<'CustomerDocumentUploaded'> }
  | { type: 'CustomerDocumentApproved'; data: Data<'CustomerDocumentApproved'> }
  | { type: 'CustomerDocumentRejected'; data: Data<'CustomerDocumentRejected'> }
  /** The first approved document, or any change of operationLevel. */
  | { type: 'CustomerLevelChanged'; data: CustomerLevelChangedData };

export type DocumentNumberEvent =
  | { type: 'CustomerDocumentNumberReserved'; data: NumberData<'CustomerDocumentNumberReserved'> }
  | { type: 'CustomerDocumentNumberReleased'; data: NumberData<'CustomerDocumentNumberReleased'> };

export const customerEvents = { schemas: { ...customerEventSchemas, ...documentNumberEventSchemas } } satisfies ContextEvents;

export const customerStream = (customerId: string) => `customer-${customerId}`;
/** Reservation of a document number within a client: appended with `no_stream` first, released on change. */
export const documentNumberStream = (clientId: string, documentNumber: string) => `customer-doc-${clientId}-${documentNumber}`;
