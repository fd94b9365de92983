import type { AddCustomerDocument, UploadCustomerDocument } from '../../schemas/customers.ts';
import type { Decider } from '../domain/decider.ts';
import { DomainError, domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import { reservationDecider, type ReservationCommand, type ReservationState } from '../domain/reservation.ts';
import { streamType } from '../eventstore/streams.ts';
import type {
  CustomerChanges, CustomerDocument, CustomerEvent, CustomerFields, CustomerLevelChangedData, DocumentNumberEvent, LevelChangeReason,
  OperationLevel,
} from './events.ts';

/** Bounds a customer's stream and record. */
export const MAX_DOCUMENTS = 100;

/** Every command acts for a tenant (src/domain/tenancy.ts): another client's customer is not found. */
export type CustomerCommand = (
  /** `fields` and `changes` are already event data: the handler maps the request to them field by field. */
  /**
   * `reservationRevision`: where on its number's stream the reservation of `fields.documentNumber` this
   * creation holds was recorded (null without a document number).
   */
  | { type: 'CreateCustomer'; customerId: string; clientId: string; fields: CustomerFields; autoCreated: boolean; reservationRevision: number | null; now: Date }
  | { type: 'UpdateCustomer'; changes: CustomerChanges; now: Date }
  | { type: 'AddDocument'; documentId: string; document: AddCustomerDocument; now: Date }
  | { type: 'UploadDocument'; documentId: string; upload: UploadCustomerDocument; now: Date }
  | { type: 'DecideDocument'; documentId: string; decision: 'APPROVED' | 'REJECTED'; now: Date }
  | { type: 'ChangeOperationLevel'; operationLevel: OperationLevel; now: Date }
  /**
   * The reactor's, for the reservation of a document number for this customer (at `reservationRevision` of the
   * number's stream) that waited too long for its creation. `eventId`: deterministic, so that the same
   * reservation seen twice records the same event.
   */
  | { type: 'AbandonCreation'; customerId: string; clientId: string; documentNumber: string; reservationRevision: number; eventId: string; now: Date }
) & TenantScoped;

type PayerField = 'firstName' | 'lastName' | 'email' | 'phoneNumber' | 'phoneNumberPrefix' | 'documentType' | 'documentNumber';

export interface CustomerState {
  exists: boolean;
  /** The reservations (revisions of the document number's stream) whose creation of this customer was given up. */
  abandonedReservations: number[];
  customerId: string | null;
  clientId: string | null;
  payer: Partial<Record<PayerField, string>>;
  operationLevel: OperationLevel;
  autoCreated: boolean;
  isDocumented: boolean;
  documents: Array<Pick<CustomerDocument, 'documentId' | 'status'>>;
}

const payerFields: readonly PayerField[] = ['firstName', 'lastName', 'email', 'phoneNumber', 'phoneNumberPrefix', 'documentType', 'documentNumber'];

const NOT_FOUND = 'customer not found';

function live(state: CustomerState): { customerId: string; clientId: string } {
  if (!state.exists) throw domainNotFound(NOT_FOUND);
  return { customerId: state.customerId!, clientId: state.clientId! };
}

/** Emails are kept lower-case so that filters and the webhook agree on one spelling. */
function normalised<T extends { email?: string }>(fields: T): T {
  return fields.email === undefined ? fields : { ...fields, email: fields.email.toLowerCase() };
}

function levelChanged(
  state: CustomerState, reason: LevelChangeReason, operationLevel: OperationLevel, isDocumented: boolean, at: string,
): CustomerEvent {
  const data: CustomerLevelChangedData = {
    customerId: state.customerId!, clientId: state.clientId!,
    firstName: state.payer.firstName ?? null, lastName: state.payer.lastName ?? null, email: state.payer.email ?? null,
    documentNumber: state.payer.documentNumber ?? null, operationLevel, previousOperationLevel: state.operationLevel,
    autoCreated: state.autoCreated, documentsCount: state.documents.length, isDocumented, reason, changedAt: at,
  };
  return { type: 'CustomerLevelChanged', data };
}

export const customerDecider: Decider<CustomerCommand, CustomerEvent, CustomerState> = {
  initialState: {
    exists: false, abandonedReservations: [], customerId: null, clientId: null, payer: {}, operationLevel: 'BASIC', autoCreated: false,
    isDocumented: false, documents: [],
  },

  // Long as a switch with one case per command of the customer stream: the state machine reads whole in one place.
  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.clientId, NOT_FOUND);
    switch (command.type) {
      case 'CreateCustomer': {
        if (state.exists) throw domainConflict(`customer ${command.customerId} already exists`);
        if (command.reservationRevision !== null && state.abandonedReservations.includes(command.reservationRevision)) {
          // Nothing of it was applied: the same request sent again reserves the number anew, and goes through.
          throw new DomainError('contention', `the creation of customer ${command.customerId} took too long and was given up; send the request again`);
        }
        if (command.fields.documentNumber === undefined && command.fields.email === undefined) {
          throw domainInvalid('documentNumber or email is required');
        }
        return [{ type: 'CustomerCreated', data: {
          ...normalised(command.fields), customerId: command.customerId, clientId: command.clientId, operationLevel: 'BASIC',
          autoCreated: command.autoCreated, createdAt: at,
        } }];
      }
      case 'UpdateCustomer': {
        const { customerId } = live(state);
        const requested = normalised(command.changes);
        const changes: CustomerChanges = {};
        for (const field of payerFields) {
          const value = requested[field];
          if (value !== undefined && value !== state.payer[field]) Object.assign(changes, { [field]: value });
        }
        if (Object.keys(changes).length === 0) return [];
        return [{ type: 'CustomerUpdated', data: {
          customerId, changes,
          ...(changes.documentNumber !== undefined ? { previousDocumentNumber: state.payer.documentNumber ?? null } : {}),
          updatedAt: at,
        } }];
      }
      case 'AddDocument': {
        const { customerId } = live(state);
        if (state.documents.some((d) => d.documentId === command.documentId)) return [];
        if (state.documents.length >= MAX_DOCUMENTS) {
          throw domainPrecondition(`customer ${customerId} already has ${MAX_DOCUMENTS} documents`);
        }
        const { type, url, contentType } = command.document;
        return [{ type: 'CustomerDocumentAdded', data: { customerId, addedAt: at, document: {
          documentId: command.documentId, type, url: url ?? null, contentType: contentType ?? null,
          status: url ? 'UPLOADED' : 'PENDING_UPLOAD', uploadedAt: url ? at : null,
        } } }];
      }
      case 'UploadDocument': {
        const { customerId } = live(state);
        const document = state.documents.find((d) => d.documentId === command.documentId);
        if (!document) throw domainNotFound(`document ${command.documentId} of customer ${customerId} not found`);
        if (document.status !== 'PENDING_UPLOAD' && document.status !== 'UPLOADED') {
          throw domainPrecondition(`document ${command.documentId} is ${document.status}; only a PENDING_UPLOAD or UPLOADED document can be uploaded`);
        }
        return [{ type: 'CustomerDocumentUploaded', data: {
          customerId, documentId: command.documentId, url: command.upload.url, contentType: command.upload.contentType ?? null, uploadedAt: at,
        } }];
      }
      case 'DecideDocument': {
        const { customerId } = live(state);
        const document = state.documents.find((d) => d.documentId === command.documentId);
        if (!document) throw domainNotFound(`document ${command.documentId} of customer ${customerId} not found`);
        if (document.status !== 'UPLOADED') {
          throw domainPrecondition(`document ${command.documentId} is ${document.status}; only an UPLOADED document can be decided`);
        }
        const data = { customerId, documentId: command.documentId, decidedAt: at };
        if (command.decision === 'REJECTED') return [{ type: 'CustomerDocumentRejected', data }];
        const approved: CustomerEvent = { type: 'CustomerDocumentApproved', data };
        if (state.isDocumented) return [approved];
        return [approved, levelChanged(state, 'DOCUMENTED', state.operationLevel, true, at)];
      }
      case 'AbandonCreation':
        // A customer that was created keeps its number; a reservation given up already is given up once.
        if (state.exists || state.abandonedReservations.includes(command.reservationRevision)) return [];
        return [{ type: 'CustomerCreationAbandoned', id: command.eventId, data: {
          customerId: command.customerId, clientId: command.clientId, documentNumber: command.documentNumber,
          reservationRevision: command.reservationRevision, abandonedAt: at,
        } }];
      case 'ChangeOperationLevel': {
        live(state);
        if (state.operationLevel === command.operationLevel) return [];
        return [levelChanged(state, 'OPERATION_LEVEL', command.operationLevel, state.isDocumented, at)];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'CustomerCreated': {
        const payer: CustomerState['payer'] = {};
        for (const field of payerFields) if (event.data[field] !== undefined) payer[field] = event.data[field];
        return {
          ...state, exists: true, customerId: event.data.customerId, clientId: event.data.clientId, payer,
          operationLevel: event.data.operationLevel, autoCreated: event.data.autoCreated,
        };
      }
      case 'CustomerCreationAbandoned':
        return { ...state, abandonedReservations: [...state.abandonedReservations, event.data.reservationRevision] };
      case 'CustomerUpdated':
        return { ...state, payer: { ...state.payer, ...event.data.changes } };
      case 'CustomerDocumentAdded':
        return { ...state, documents: [...state.documents, { documentId: event.data.document.documentId, status: event.data.document.status }] };
      case 'CustomerDocumentUploaded':
        return { ...state, documents: state.documents.map((d) => d.documentId === event.data.documentId ? { ...d, status: 'UPLOADED' } : d) };
      case 'CustomerDocumentApproved':
      case 'CustomerDocumentRejected': {
        const status = event.type === 'CustomerDocumentApproved' ? 'APPROVED' : 'REJECTED';
        return { ...state, documents: state.documents.map((d) => d.documentId === event.data.documentId ? { ...d, status } : d) };
      }
      case 'CustomerLevelChanged':
        return { ...state, operationLevel: event.data.operationLevel, isDocumented: event.data.isDocumented };
    }
  },
};

/** A client's document number: held by one customer at a time, on its own stream (`customer-doc-<clientId>-<number>`). */
export interface DocumentNumber {
  clientId: string;
  documentNumber: string;
}

export type DocumentNumberCommand = ReservationCommand<DocumentNumber>;
/** The customer holding a client's document number, if any, and the revision of the stream's last event (-1: none). */
export type DocumentNumberState = ReservationState;

const numberData = (key: DocumentNumber, customerId: string, at: Date) =>
  ({ clientId: key.clientId, documentNumber: key.documentNumber, customerId, at: at.toISOString() });

export const documentNumberDecider = reservationDecider<DocumentNumber, DocumentNumberEvent>({
  claimed: (key, customerId, at) => ({ type: 'CustomerDocumentNumberReserved', data: numberData(key, customerId, at) }),
  released: (key, customerId, at) => ({ type: 'CustomerDocumentNumberReleased', data: numberData(key, customerId, at) }),
  read: (event) => event.type === 'CustomerDocumentNumberReserved' ? { claimedBy: event.data.customerId } : { releasedBy: event.data.customerId },
  taken: (key, holder) => `documentNumber ${key.documentNumber} already belongs to customer ${holder}`,
});

/** `customer-<customerId>`; a request waits for every read model after its change (the reactor's step: for none). */
export const customerStreamType = streamType('customer-', { decider: customerDecider, readModels: {
  CreateCustomer: 'all', UpdateCustomer: 'all', AddDocument: 'all', UploadDocument: 'all', DecideDocument: 'all', ChangeOperationLevel: 'all',
  AbandonCreation: 'none',
} });

/** `customer-doc-<clientId>-<number>`: a step before (or after) the customer's own change, which is what a request waits for. */
export const documentNumberStreamType = streamType('customer-doc-', { decider: documentNumberDecider, readModels: {
  ClaimKey: 'none', ReleaseKey: 'none',
} });
