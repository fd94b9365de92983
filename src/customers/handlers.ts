/**
 * Commands on customers. Reads go through the tenant-scoped read model; writes through the deciders. A
 * document number is reserved in its own stream before a customer takes it, and released once it moves on.
 */
import type { Kysely } from 'kysely';
import type { AddCustomerDocument, CreateCustomer, UpdateCustomer, UploadCustomerDocument } from '../../schemas/customers.ts';
import type { CustomerRow } from '../../projections/customers.ts';
import { handleCommand } from '../eventstore/commandHandler.ts';
import { MAX_READ_LIMIT, type EventMetadata } from '../eventstore/port.ts';
import type { Decider } from '../domain/decider.ts';
import { domainConflict } from '../domain/errors.ts';
import { findOwned } from '../http/tenancy.ts';
import type { Services } from '../http/services.ts';
import { definedOnly } from '../../schemas/events/common.ts';
import { customerDecider, documentNumberDecider, type CustomerCommand, type CustomerState } from './decider.ts';
import { customerStream, documentNumberStream, type CustomerChanges, type CustomerFields, type OperationLevel } from './events.ts';

export function ownedCustomer(db: Kysely<any>, clientId: string, customerId: string): Promise<CustomerRow> {
  return findOwned<CustomerRow>(db, 'customers', clientId, 'customer_id', customerId, 'customer');
}

/**
 * How long a lookup by document number waits for the customer its reservation names: that customer's creation
 * is recorded right after the reservation (one append later), so the wait is normally a few milliseconds; past
 * it, the creation is taken as stuck.
 */
const HOLDER_CREATION_WAIT_MS = 5_000;
/** Between two looks at a reserved number's customer while it is being created. */
const HOLDER_POLL_MS = 10;

/** A stream folded whole, page by page, as its decider sees it. */
async function fold<Event extends { type: string; data: unknown }, State>(
  services: Services, stream: string, decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
): Promise<State> {
  let state = decider.initialState;
  for (let from = 0n; ;) {
    const page = await services.storage.store.readStream(stream, { fromRevision: from, limit: MAX_READ_LIMIT });
    for (const event of page) state = decider.evolve(state, { type: event.type, data: event.data } as Event);
    if (page.length < MAX_READ_LIMIT) return state;
    from = page[page.length - 1]!.revision + 1n;
  }
}

/** The customer as its own stream tells (the truth, even before the read model has caught up); null unless it is the client's. */
export async function customerOfClient(services: Services, clientId: string, customerId: string): Promise<CustomerState | null> {
  const state = await fold(services, customerStream(customerId), customerDecider);
  return state.exists && state.clientId === clientId ? state : null;
}

/**
 * The customer holding a client's document number, found through the stream that owns the number: its
 * reservation names the customer. A customer reserves its number before its own stream records its creation,
 * so a holder whose stream is still empty is being created: this waits for it (HOLDER_CREATION_WAIT_MS), and
 * answers null if the number is given back meanwhile (that creation failed).
 */
export async function customerHoldingDocumentNumber(
  services: Services, clientId: string, documentNumber: string,
): Promise<CustomerState | null> {
  const deadline = Date.now() + HOLDER_CREATION_WAIT_MS;
  for (;;) {
    const { holder } = await fold(services, documentNumberStream(clientId, documentNumber), documentNumberDecider);
    if (holder === null) return null;
    const customer = await customerOfClient(services, clientId, holder);
    if (customer) return customer;
    if (Date.now() >= deadline) {
      throw domainConflict(`documentNumber ${documentNumber} is reserved by customer ${holder}, whose creation has not completed`);
    }
    await new Promise((resolve) => setTimeout(resolve, HOLDER_POLL_MS));
  }
}

/** Waits (bounded, as after a command) until the read models include the customer as its stream has it now. */
export async function customerInReadModels(services: Services, customerId: string): Promise<void> {
  const [last] = await services.storage.store.readStream(customerStream(customerId), { direction: 'backwards', limit: 1 });
  if (last) await services.readYourWrites(last.position, [last.type]);
}

async function run(services: Services, customerId: string, command: CustomerCommand, metadata: EventMetadata) {
  return handleCommand(services.storage.store, customerStream(customerId), customerDecider, command, metadata);
}

async function reserveDocumentNumber(
  services: Services, clientId: string, documentNumber: string, customerId: string, metadata: EventMetadata,
): Promise<boolean> {
  const { events } = await handleCommand(services.storage.store, documentNumberStream(clientId, documentNumber), documentNumberDecider,
    { type: 'ReserveDocumentNumber', clientId, documentNumber, customerId, now: services.runtime.now() }, metadata);
  return events.length > 0;
}

async function releaseDocumentNumber(
  services: Services, clientId: string, documentNumber: string, customerId: string, metadata: EventMetadata,
): Promise<void> {
  await handleCommand(services.storage.store, documentNumberStream(clientId, documentNumber), documentNumberDecider,
    { type: 'ReleaseDocumentNumber', clientId, documentNumber, customerId, now: services.runtime.now() }, metadata);
}

/** Runs `work` holding a reservation of `documentNumber`; a reservation taken here is given back if it fails. */
async function withDocumentNumber<T>(
  services: Services, clientId: string, documentNumber: string | undefined, customerId: string, metadata: EventMetadata,
  work: () => Promise<T>,
): Promise<T> {
  const reserved = documentNumber !== undefined && await reserveDocumentNumber(services, clientId, documentNumber, customerId, metadata);
  try {
    return await work();
  } catch (error) {
    if (reserved) await releaseDocumentNumber(services, clientId, documentNumber, customerId, metadata).catch(() => undefined);
    throw error;
  }
}

/**
 * What the request's fields become in the stored event, field by field: a field added to the request schema
 * reaches no event until it is added to the event's contract (src/customers/events.ts) and here.
 */
function customerFieldsOf(input: CreateCustomer): CustomerFields {
  return definedOnly({ ...payerFieldsOf(input), country: input.country });
}

function payerFieldsOf(input: UpdateCustomer): CustomerChanges {
  return definedOnly({
    firstName: input.firstName, lastName: input.lastName, email: input.email, phoneNumber: input.phoneNumber,
    phoneNumberPrefix: input.phoneNumberPrefix, documentType: input.documentType, documentNumber: input.documentNumber,
  });
}

export async function createCustomer(
  services: Services, clientId: string, input: CreateCustomer, metadata: EventMetadata, autoCreated = false,
): Promise<string> {
  const customerId = services.runtime.newId();
  const fields = customerFieldsOf(input);
  const { position } = await withDocumentNumber(services, clientId, fields.documentNumber, customerId, metadata, () =>
    run(services, customerId, { type: 'CreateCustomer', customerId, clientId, fields, autoCreated, now: services.runtime.now() }, metadata));
  await services.readYourWrites(position);
  return customerId;
}

export async function updateCustomer(
  services: Services, clientId: string, customerId: string, input: UpdateCustomer, metadata: EventMetadata,
): Promise<void> {
  const changes = payerFieldsOf(input);
  const { events, position } = await withDocumentNumber(services, clientId, changes.documentNumber, customerId, metadata, () =>
    run(services, customerId, { type: 'UpdateCustomer', changes, now: services.runtime.now() }, metadata));
  for (const event of events) {
    const previous = event.type === 'CustomerUpdated' ? event.data.previousDocumentNumber : undefined;
    if (previous) await releaseDocumentNumber(services, clientId, previous, customerId, metadata);
  }
  await services.readYourWrites(position);
}

export async function addCustomerDocument(
  services: Services, customerId: string, document: AddCustomerDocument, metadata: EventMetadata,
): Promise<string> {
  const documentId = services.runtime.newId();
  const { position } = await run(services, customerId, { type: 'AddDocument', documentId, document, now: services.runtime.now() }, metadata);
  await services.readYourWrites(position);
  return documentId;
}

export async function uploadCustomerDocument(
  services: Services, customerId: string, documentId: string, upload: UploadCustomerDocument, metadata: EventMetadata,
): Promise<void> {
  const { position } = await run(services, customerId, { type: 'UploadDocument', documentId, upload, now: services.runtime.now() }, metadata);
  await services.readYourWrites(position);
}

export async function decideCustomerDocument(
  services: Services, customerId: string, documentId: string, decision: 'APPROVED' | 'REJECTED', metadata: EventMetadata,
): Promise<void> {
  const { position } = await run(services, customerId, { type: 'DecideDocument', documentId, decision, now: services.runtime.now() }, metadata);
  await services.readYourWrites(position);
}

export async function changeCustomerOperationLevel(
  services: Services, customerId: string, operationLevel: OperationLevel, metadata: EventMetadata,
): Promise<void> {
  const { position } = await run(services, customerId, { type: 'ChangeOperationLevel', operationLevel, now: services.runtime.now() }, metadata);
  await services.readYourWrites(position);
}
