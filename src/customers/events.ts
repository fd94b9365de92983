/**
 * Events of a customer (payer). Stream: `customer-<customerId>`. A client's document numbers are reserved in
 * streams of their own, `customer-doc-<clientId>-<documentNumber>`, so two customers can never share one.
 */
import type { CreateCustomer, UpdateCustomer, operationLevels } from '../../schemas/customers.ts';

export type OperationLevel = (typeof operationLevels)[number];
export type DocumentStatus = 'PENDING_UPLOAD' | 'UPLOADED' | 'APPROVED' | 'REJECTED';
export type LevelChangeReason = 'DOCUMENTED' | 'OPERATION_LEVEL';

export interface CustomerDocument {
  documentId: string;
  type: string;
  url: string | null;
  contentType: string | null;
  status: DocumentStatus;
  uploadedAt: string | null;
}

/**
 * What becomes the `customer.levelChanged` webhook: a snapshot of the customer at the change. It carries the
 * number of documents, never their URLs.
 */
export interface CustomerLevelChangedData {
  customerId: string;
  clientId: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  documentNumber: string | null;
  operationLevel: OperationLevel;
  previousOperationLevel: OperationLevel;
  autoCreated: boolean;
  documentsCount: number;
  isDocumented: boolean;
  reason: LevelChangeReason;
  changedAt: string;
}

export type CustomerEvent =
  | { type: 'CustomerCreated'; data: CreateCustomer & {
    customerId: string; clientId: string; operationLevel: OperationLevel; autoCreated: boolean; createdAt: string;
  } }
  /** Only the fields that differ; `previousDocumentNumber` is set when the document number changes. */
  | { type: 'CustomerUpdated'; data: {
    customerId: string; changes: UpdateCustomer; previousDocumentNumber?: string | null; updatedAt: string;
  } }
  | { type: 'CustomerDocumentAdded'; data: { customerId: string; document: CustomerDocument; addedAt: string } }
  /** A file for a document added without one, or a new file for an UPLOADED document not yet decided. */
  | { type: 'CustomerDocumentUploaded'; data: {
    customerId: string; documentId: string; url: string; contentType: string | null; uploadedAt: string;
  } }
  | { type: 'CustomerDocumentApproved'; data: { customerId: string; documentId: string; decidedAt: string } }
  | { type: 'CustomerDocumentRejected'; data: { customerId: string; documentId: string; decidedAt: string } }
  /** The first approved document, or any change of operationLevel. */
  | { type: 'CustomerLevelChanged'; data: CustomerLevelChangedData };

export type DocumentNumberEvent =
  | { type: 'CustomerDocumentNumberReserved'; data: { clientId: string; documentNumber: string; customerId: string; at: string } }
  | { type: 'CustomerDocumentNumberReleased'; data: { clientId: string; documentNumber: string; customerId: string; at: string } };

export const customerStream = (customerId: string) => `customer-${customerId}`;
/** Reservation of a document number within a client: appended with `no_stream` first, released on change. */
export const documentNumberStream = (clientId: string, documentNumber: string) => `customer-doc-${clientId}-${documentNumber}`;
