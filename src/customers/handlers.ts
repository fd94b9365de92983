/**
 * Commands on customers. Reads go through the tenant-scoped read model; writes through the deciders. A
 * document number is reserved in its own stream before a customer takes it, and released once it moves on.
 */
import type { Kysely } from 'kysely';
import type { AddCustomerDocument, CreateCustomer, UpdateCustomer, UploadCustomerDocument } from '../../schemas/customers.ts';
import type { CustomerRow } from '../../projections/customers.ts';
import { handleCommand } from '../eventstore/commandHandler.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { findOwned } from '../http/tenancy.ts';
import type { Services } from '../http/services.ts';
import { customerDecider, documentNumberDecider, type CustomerCommand } from './decider.ts';
import { customerStream, documentNumberStream, type OperationLevel } from './events.ts';

export function ownedCustomer(db: Kysely<any>, clientId: string, customerId: string): Promise<CustomerRow> {
  return findOwned<CustomerRow>(db, 'customers', clientId, 'customer_id', customerId, 'customer');
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

export async function createCustomer(
  services: Services, clientId: string, fields: CreateCustomer, metadata: EventMetadata, autoCreated = false,
): Promise<string> {
  const customerId = services.runtime.newId();
  const { position } = await withDocumentNumber(services, clientId, fields.documentNumber, customerId, metadata, () =>
    run(services, customerId, { type: 'CreateCustomer', customerId, clientId, fields, autoCreated, now: services.runtime.now() }, metadata));
  await services.readYourWrites(position);
  return customerId;
}

export async function updateCustomer(
  services: Services, clientId: string, customerId: string, changes: UpdateCustomer, metadata: EventMetadata,
): Promise<void> {
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
