import { expect } from 'chai';
import {
  customerDecider, documentNumberDecider, type CustomerCommand as TenantCommand, type DocumentNumberCommand,
} from '../src/customers/decider.ts';
import type { CustomerEvent, CustomerLevelChangedData, DocumentNumberEvent } from '../src/customers/events.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

/** Commands of the customer's own client unless they name another tenant. */
type CustomerCommand = AsOwner<TenantCommand>;

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const created: CustomerEvent = { type: 'CustomerCreated', data: {
  firstName: 'Ana', lastName: 'Pérez', email: 'ana@example.com', documentNumber: '12345678-9', documentType: 'RUT',
  customerId: 'k1', clientId: 'c1', operationLevel: 'BASIC', autoCreated: false, createdAt: at,
} };
const uploaded = (documentId: string): CustomerEvent => ({ type: 'CustomerDocumentAdded', data: { customerId: 'k1', addedAt: at,
  document: { documentId, type: 'ID_FRONT', url: 'https://files.example.com/a.png', contentType: 'image/png', status: 'UPLOADED', uploadedAt: at } } });
const pending = (documentId: string): CustomerEvent => ({ type: 'CustomerDocumentAdded', data: { customerId: 'k1', addedAt: at,
  document: { documentId, type: 'ID_BACK', url: null, contentType: null, status: 'PENDING_UPLOAD', uploadedAt: null } } });
const approved = (documentId: string): CustomerEvent => ({ type: 'CustomerDocumentApproved', data: { customerId: 'k1', documentId, decidedAt: at } });
const snapshot = (overrides: Partial<CustomerLevelChangedData>): CustomerEvent => ({ type: 'CustomerLevelChanged', data: {
  customerId: 'k1', clientId: 'c1', firstName: 'Ana', lastName: 'Pérez', email: 'ana@example.com', documentNumber: '12345678-9',
  operationLevel: 'BASIC', previousOperationLevel: 'BASIC', autoCreated: false, documentsCount: 0, isDocumented: false,
  reason: 'OPERATION_LEVEL', changedAt: at, ...overrides,
} });

const { given } = DeciderSpecification.for(customerDecider, asOwner<TenantCommand>);
const { given: givenReservation } = DeciderSpecification.for(documentNumberDecider);

describe('customer decider', () => {
  it('creates once, BASIC and not auto-created, with the email in lower case', () => {
    given([]).when({ type: 'CreateCustomer', customerId: 'k1', clientId: 'c1', autoCreated: false, reservationRevision: 0, now,
      fields: { firstName: 'Ana', lastName: 'Pérez', email: 'Ana@Example.COM', documentNumber: '12345678-9', documentType: 'RUT' } })
      .then([created]);
    given([created]).when({ type: 'CreateCustomer', customerId: 'k1', clientId: 'c1', autoCreated: false, reservationRevision: null, now, fields: { email: 'x@example.com' } })
      .thenThrows('alreadyExists', /already exists/);
  });

  it('needs a documentNumber or an email', () => {
    given([]).when({ type: 'CreateCustomer', customerId: 'k1', clientId: 'c1', autoCreated: false, reservationRevision: null, now, fields: { firstName: 'Ana' } })
      .thenThrows('invalid', /documentNumber or email/);
    given([]).when({ type: 'CreateCustomer', customerId: 'k1', clientId: 'c1', autoCreated: true, reservationRevision: 0, now, fields: { documentNumber: '123' } })
      .then([{ type: 'CustomerCreated', data: { documentNumber: '123', customerId: 'k1', clientId: 'c1', operationLevel: 'BASIC', autoCreated: true, createdAt: at } }]);
  });

  it('refuses every change to a customer that does not exist', () => {
    given([]).when({ type: 'UpdateCustomer', changes: { firstName: 'B' }, now }).thenThrows('notFound', /not found/);
    given([]).when({ type: 'AddDocument', documentId: 'd1', document: { type: 'ID_FRONT' }, now }).thenThrows('notFound', /not found/);
    given([]).when({ type: 'DecideDocument', documentId: 'd1', decision: 'APPROVED', now }).thenThrows('notFound', /not found/);
    given([]).when({ type: 'ChangeOperationLevel', operationLevel: 'FULL', now }).thenThrows('notFound', /not found/);
  });

  it('answers another client\'s customer as not found, exactly as a missing one, and lets an operator (any tenant) act on it', () => {
    const changes: CustomerCommand[] = [
      { type: 'UpdateCustomer', changes: { firstName: 'B' }, now }, { type: 'AddDocument', documentId: 'd2', document: { type: 'ID_FRONT' }, now },
      { type: 'UploadDocument', documentId: 'd1', upload: { url: 'https://files.example.com/b.png' }, now },
      { type: 'DecideDocument', documentId: 'd1', decision: 'APPROVED', now }, { type: 'ChangeOperationLevel', operationLevel: 'FULL', now },
    ];
    for (const command of changes) {
      given([created, uploaded('d1')]).when({ ...command, tenant: OTHER_CLIENT }).thenThrows('notFound', /^customer not found$/);
      given([]).when(command).thenThrows('notFound', /^customer not found$/);
    }
    given([created]).when({ type: 'ChangeOperationLevel', tenant: 'any', operationLevel: 'FULL', now })
      .then([snapshot({ operationLevel: 'FULL' })]);
  });

  it('records only the fields that change, and the previous document number when it changes', () => {
    given([created]).when({ type: 'UpdateCustomer', changes: { firstName: 'Ana', lastName: 'Soto', email: 'ANA@example.com' }, now })
      .then([{ type: 'CustomerUpdated', data: { customerId: 'k1', changes: { lastName: 'Soto' }, updatedAt: at } }]);
    given([created]).when({ type: 'UpdateCustomer', changes: { documentNumber: '999' }, now })
      .then([{ type: 'CustomerUpdated', data: { customerId: 'k1', changes: { documentNumber: '999' }, previousDocumentNumber: '12345678-9', updatedAt: at } }]);
    given([created]).when({ type: 'UpdateCustomer', changes: { firstName: 'Ana', documentNumber: '12345678-9' }, now }).then([]);
  });

  it('adds documents: PENDING_UPLOAD without a url, UPLOADED (with uploadedAt) with one', () => {
    given([created]).when({ type: 'AddDocument', documentId: 'd1', document: { type: 'ID_BACK' }, now }).then([pending('d1')]);
    given([created]).when({ type: 'AddDocument', documentId: 'd1', now,
      document: { type: 'ID_FRONT', url: 'https://files.example.com/a.png', contentType: 'image/png' } }).then([uploaded('d1')]);
  });

  it('the first approval documents the customer and records one level change; later approvals do not', () => {
    given([created, uploaded('d1')]).when({ type: 'DecideDocument', documentId: 'd1', decision: 'APPROVED', now })
      .then([approved('d1'), snapshot({ reason: 'DOCUMENTED', isDocumented: true, documentsCount: 1 })]);
    const documented = [created, uploaded('d1'), approved('d1'), snapshot({ reason: 'DOCUMENTED', isDocumented: true, documentsCount: 1 }), uploaded('d2')];
    given(documented).when({ type: 'DecideDocument', documentId: 'd2', decision: 'APPROVED', now }).then([approved('d2')]);
  });

  it('a rejection records only the rejection', () => {
    given([created, uploaded('d1')]).when({ type: 'DecideDocument', documentId: 'd1', decision: 'REJECTED', now })
      .then([{ type: 'CustomerDocumentRejected', data: { customerId: 'k1', documentId: 'd1', decidedAt: at } }]);
  });

  it('decides only UPLOADED documents that exist', () => {
    given([created, pending('d1')]).when({ type: 'DecideDocument', documentId: 'd1', decision: 'APPROVED', now })
      .thenThrows('failedPrecondition', /PENDING_UPLOAD/);
    given([created, uploaded('d1'), approved('d1')]).when({ type: 'DecideDocument', documentId: 'd1', decision: 'REJECTED', now })
      .thenThrows('failedPrecondition', /APPROVED/);
    given([created]).when({ type: 'DecideDocument', documentId: 'nope', decision: 'APPROVED', now }).thenThrows('notFound', /document nope/);
  });

  describe('uploading a document', () => {
    const upload = (documentId: string, url: string, contentType?: string): CustomerCommand =>
      ({ type: 'UploadDocument', documentId, upload: { url, ...(contentType ? { contentType } : {}) }, now });
    const uploadedLater = (documentId: string, url: string, contentType: string | null): CustomerEvent =>
      ({ type: 'CustomerDocumentUploaded', data: { customerId: 'k1', documentId, url, contentType, uploadedAt: at } });

    it('a PENDING_UPLOAD document becomes UPLOADED, and can then be decided', () => {
      given([created, pending('d1')]).when(upload('d1', 'https://files.example.com/back.pdf', 'application/pdf'))
        .then([uploadedLater('d1', 'https://files.example.com/back.pdf', 'application/pdf')]);
      given([created, pending('d1')]).when(upload('d1', 'https://files.example.com/back.png'))
        .then([uploadedLater('d1', 'https://files.example.com/back.png', null)]);
      given([created, pending('d1'), uploadedLater('d1', 'https://files.example.com/back.png', null)])
        .when({ type: 'DecideDocument', documentId: 'd1', decision: 'APPROVED', now })
        .then([approved('d1'), snapshot({ reason: 'DOCUMENTED', isDocumented: true, documentsCount: 1 })]);
    });

    it('an UPLOADED document not yet decided can be uploaded again', () => {
      given([created, uploaded('d1')]).when(upload('d1', 'https://files.example.com/b.png', 'image/png'))
        .then([uploadedLater('d1', 'https://files.example.com/b.png', 'image/png')]);
      given([created, pending('d1'), uploadedLater('d1', 'https://files.example.com/1.png', null)])
        .when(upload('d1', 'https://files.example.com/2.png')).then([uploadedLater('d1', 'https://files.example.com/2.png', null)]);
    });

    it('is refused once the document is decided, naming its status', () => {
      given([created, uploaded('d1'), approved('d1')]).when(upload('d1', 'https://files.example.com/b.png'))
        .thenThrows('failedPrecondition', /APPROVED/);
      given([created, uploaded('d1'), { type: 'CustomerDocumentRejected', data: { customerId: 'k1', documentId: 'd1', decidedAt: at } }])
        .when(upload('d1', 'https://files.example.com/b.png')).thenThrows('failedPrecondition', /REJECTED/);
    });

    it('is refused for an unknown document or customer', () => {
      given([created, pending('d1')]).when(upload('nope', 'https://files.example.com/b.png')).thenThrows('notFound', /document nope/);
      given([]).when(upload('d1', 'https://files.example.com/b.png')).thenThrows('notFound', /customer not found/);
    });
  });

  it('every operation-level change records a level change; the same level records nothing', () => {
    given([created, uploaded('d1')]).when({ type: 'ChangeOperationLevel', operationLevel: 'FULL', now })
      .then([snapshot({ operationLevel: 'FULL', documentsCount: 1 })]);
    const full = snapshot({ operationLevel: 'FULL' });
    given([created, full]).when({ type: 'ChangeOperationLevel', operationLevel: 'FULL', now }).then([]);
    given([created, full]).when({ type: 'ChangeOperationLevel', operationLevel: 'INACTIVE', now })
      .then([snapshot({ operationLevel: 'INACTIVE', previousOperationLevel: 'FULL' })]);
  });

  it('level changes never carry document URLs', () => {
    given([created, uploaded('d1')]).when({ type: 'DecideDocument', tenant: 'any', documentId: 'd1', decision: 'APPROVED', now })
      .then((events) => expect(JSON.stringify(events[1])).not.to.include('https://'));
  });
});

describe('a customer whose creation was given up', () => {
  const abandon = (reservationRevision: number, eventId: string) =>
    ({ type: 'AbandonCreation', tenant: 'any', customerId: 'k1', clientId: 'c1', documentNumber: '12345678-9', reservationRevision, eventId, now }) as const;
  const abandoned = (reservationRevision: number): CustomerEvent => ({ type: 'CustomerCreationAbandoned', data: {
    customerId: 'k1', clientId: 'c1', documentNumber: '12345678-9', reservationRevision, abandonedAt: at } });
  const create = (reservationRevision: number) =>
    ({ type: 'CreateCustomer', customerId: 'k1', clientId: 'c1', fields: { documentNumber: '12345678-9' }, autoCreated: false, reservationRevision, now }) as const;

  it('is given up once per reservation, only when it was never created, with the id the reactor derived', () => {
    given([]).when(abandon(0, 'e1'))
      .then((events) => expect(events).to.deep.equal([{ ...abandoned(0), id: 'e1' }]));
    given([abandoned(0)]).when(abandon(0, 'e1')).thenNothingHappened();
    given([abandoned(0)]).when(abandon(2, 'e2'))
      .then((events) => expect(events).to.deep.equal([{ ...abandoned(2), id: 'e2' }]));
    given([created]).when(abandon(0, 'e1')).thenNothingHappened();
  });

  it('refuses the creation holding a reservation given up (retryable), and takes one holding a reservation made again', () => {
    given([abandoned(0)]).when(create(0)).thenThrows('contention', /creation of customer k1 took too long and was given up; send the request again/);
    given([abandoned(0), abandoned(2)]).when(create(2)).thenThrows('contention', /given up/);
    given([abandoned(0)]).when(create(2)).then([{ type: 'CustomerCreated', data: {
      documentNumber: '12345678-9', customerId: 'k1', clientId: 'c1', operationLevel: 'BASIC', autoCreated: false, createdAt: at } }]);
    given([abandoned(0)]).when({ type: 'ChangeOperationLevel', operationLevel: 'FULL', now }).thenThrows('notFound', /customer not found/);
  });
});

describe('document number reservation decider', () => {
  const reserve = (customerId: string): DocumentNumberCommand =>
    ({ type: 'ClaimKey', key: { clientId: 'c1', documentNumber: '123' }, owner: customerId, now });
  const release = (customerId: string): DocumentNumberCommand =>
    ({ type: 'ReleaseKey', key: { clientId: 'c1', documentNumber: '123' }, owner: customerId, now });
  const reserved = (customerId: string): DocumentNumberEvent =>
    ({ type: 'CustomerDocumentNumberReserved', data: { clientId: 'c1', documentNumber: '123', customerId, at } });
  const released = (customerId: string): DocumentNumberEvent =>
    ({ type: 'CustomerDocumentNumberReleased', data: { clientId: 'c1', documentNumber: '123', customerId, at } });

  it('one holder at a time; the holder reserving again changes nothing', () => {
    givenReservation([]).when(reserve('k1')).then([reserved('k1')]);
    givenReservation([reserved('k1')]).when(reserve('k1')).then([]);
    givenReservation([reserved('k1')]).when(reserve('k2')).thenThrows('alreadyExists', /already belongs to customer k1/);
  });

  it('a release naming the reservation’s revision releases only that reservation, while it is the last event', () => {
    const releaseAt = (customerId: string, reservationRevision: number): DocumentNumberCommand => ({ type: 'ReleaseKey', key: { clientId: 'c1', documentNumber: '123' }, owner: customerId, now, atRevision: reservationRevision, eventId: 'r1' });
    givenReservation([reserved('k1')]).when(releaseAt('k1', 0)).then([{ ...released('k1'), id: 'r1' } as unknown as DocumentNumberEvent]);
    givenReservation([reserved('k1'), released('k1'), reserved('k1')]).when(releaseAt('k1', 0)).then([]);
    givenReservation([reserved('k1'), released('k1'), reserved('k1')]).when(releaseAt('k1', 2)).then([{ ...released('k1'), id: 'r1' } as unknown as DocumentNumberEvent]);
    givenReservation([reserved('k1')]).when(releaseAt('k2', 0)).then([]);
  });

  it('only the holder releases; a released number can be taken again', () => {
    givenReservation([reserved('k1')]).when(release('k2')).then([]);
    givenReservation([reserved('k1')]).when(release('k1')).then([released('k1')]);
    givenReservation([reserved('k1'), released('k1')]).when(reserve('k2')).then([reserved('k2')]);
  });
});
