/**
 * Commands on customers. Reads go through the tenant-scoped read model; writes through the deciders. A
 * document number is reserved in its own stream before a customer takes it, and released once it moves on.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { AddCustomerDocument, CreateCustomer, UpdateCustomer, UploadCustomerDocument } from '../../schemas/customers.ts';
import { deterministicId } from '../eventstore/deterministicId.ts';
import type { LastEvent } from '../eventstore/commandHandler.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { runCommand, streamState, streamStateAt } from '../eventstore/streams.ts';
import { domainConflict, domainNotFound } from '../domain/errors.ts';
import { setBounded } from '../domain/boundedMap.ts';
import type { Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import type { Storage } from '../storage.ts';
import { definedOnly } from '../../schemas/events/common.ts';
import {
  customerStreamType, documentNumberStreamType, type CustomerState, type DocumentNumberState,
} from './decider.ts';
import { customerStream, documentNumberStream, type CustomerChanges, type CustomerFields, type OperationLevel } from './events.ts';

/**
 * How long a lookup by document number waits for the customer its reservation names: that customer's creation
 * is recorded right after the reservation (one append later), so the wait is normally a few milliseconds; past
 * it, the creation is taken as stuck.
 */
const HOLDER_CREATION_WAIT_MS = 5_000;
/** Between two looks at a reserved number's customer while it is being created. */
const HOLDER_POLL_MS = 10;

/** The customer as its own stream tells (the truth, even before the read model has caught up); null unless it is the client's. */
export async function customerOfClient(platform: Platform, clientId: string, customerId: string): Promise<CustomerState | null> {
  return (await customerOfClientAt(platform, clientId, customerId))?.customer ?? null;
}

/** A customer of the client, and its stream's last event. */
async function customerOfClientAt(
  platform: Platform, clientId: string, customerId: string,
): Promise<{ customer: CustomerState; last: LastEvent | null } | null> {
  const { state, last } = await streamStateAt(platform, customerStreamType, customerStream(customerId));
  return state.exists && state.clientId === clientId ? { customer: state, last } : null;
}

/**
 * The customer holding a client's document number, found through the stream that owns the number: its
 * reservation names the customer. A customer reserves its number before its own stream records its creation,
 * so a holder whose stream is still empty is being created: this waits for it (HOLDER_CREATION_WAIT_MS), and
 * answers null if the number is given back meanwhile (that creation failed).
 */
export async function customerHoldingDocumentNumber(
  platform: Platform, clientId: string, documentNumber: string,
): Promise<CustomerState | null> {
  return (await holderOfDocumentNumber(platform, clientId, documentNumber))?.customer ?? null;
}

/**
 * `customerHoldingDocumentNumber`, once the read models include the customer as its stream was just read (its kept
 * state's last event: the stream is not read again to learn it). For a holder created a moment ago by another
 * request, which the caller's answer will show.
 */
export async function holderInReadModels(platform: Platform, clientId: string, documentNumber: string): Promise<CustomerState | null> {
  return onceInReadModels(platform, await holderOfDocumentNumber(platform, clientId, documentNumber));
}

/** The customer as its stream was just read, once the read models include that stream's last event. */
async function onceInReadModels(
  platform: Platform, found: { customer: CustomerState; last: LastEvent | null } | null,
): Promise<CustomerState | null> {
  if (found?.last) await platform.readYourWrites(found.last.position, [found.last.type]);
  return found?.customer ?? null;
}

/**
 * Customers of each store seen created and in its read models, by id: their client, at most KNOWN_CREATED (entries),
 * the oldest going first. A customer's creation is never undone and its client never changes, so an entry stays
 * true for good, whichever process wrote what since.
 */
const createdCustomers = new WeakMap<Storage, Map<string, string>>();
const KNOWN_CREATED = 10_000;

function createdCustomersOf(storage: Storage): Map<string, string> {
  let known = createdCustomers.get(storage);
  if (!known) createdCustomers.set(storage, known = new Map());
  return known;
}

/**
 * The id of the customer holding a client's document number, once the read models include it, as
 * `holderInReadModels` finds it; a holder seen so before is not read again: only the number's stream, which says
 * who holds it now, is.
 */
export async function holderIdInReadModels(platform: Platform, clientId: string, documentNumber: string): Promise<string | null> {
  const known = createdCustomersOf(platform.storage);
  const { holder } = await streamState(platform, documentNumberStreamType, documentNumberStream(clientId, documentNumber));
  if (holder === null) return null;
  if (known.get(holder) === clientId) return holder;
  // A holder whose creation is not recorded yet is waited for, as `holderInReadModels` waits for it.
  const customer = await onceInReadModels(platform, await customerOfClientAt(platform, clientId, holder))
    ?? await holderInReadModels(platform, clientId, documentNumber);
  if (!customer) return null;
  setBounded(known, KNOWN_CREATED, customer.customerId!, clientId);
  return customer.customerId!;
}

/** `customerHoldingDocumentNumber`, and the last event of the customer's stream as it was read. */
async function holderOfDocumentNumber(
  platform: Platform, clientId: string, documentNumber: string,
): Promise<{ customer: CustomerState; last: LastEvent | null } | null> {
  const deadline = Date.now() + HOLDER_CREATION_WAIT_MS;
  for (;;) {
    const { holder } = await streamState(platform, documentNumberStreamType, documentNumberStream(clientId, documentNumber));
    if (holder === null) return null;
    const customer = await customerOfClientAt(platform, clientId, holder);
    if (customer) return customer;
    if (Date.now() >= deadline) {
      throw domainConflict(`documentNumber ${documentNumber} is reserved by customer ${holder}, whose creation has not completed`);
    }
    await new Promise((resolve) => setTimeout(resolve, HOLDER_POLL_MS));
  }
}

/**
 * Reserves `documentNumber` for `customerId`; answers whether this call recorded the reservation (false: the
 * customer held it already) and the revision of the number's stream the reservation is at.
 */
async function reserveDocumentNumber(
  platform: Platform, clientId: string, documentNumber: string, customerId: string, metadata: EventMetadata,
): Promise<{ reserved: boolean; revision: number }> {
  // The reservation's id names the revision it takes: a request sent again with its key, after the number it
  // reserved was given back (releaseAbandonedReservation), records a new reservation instead of finding its
  // first one (which ids derived from the key alone would make it do) and going on without any.
  const { events, state } = await runCommand(platform, documentNumberStreamType, documentNumberStream(clientId, documentNumber),
    (current: DocumentNumberState) => ({
      type: 'ClaimKey', key: { clientId, documentNumber }, owner: customerId, now: platform.runtime.now(),
      eventId: deterministicId('customer-document-number-reserved', clientId, documentNumber, customerId, String(current.revision + 1)),
    }) as const, metadata);
  return { reserved: events.length > 0, revision: state.revision };
}

async function releaseDocumentNumber(
  platform: Platform, clientId: string, documentNumber: string, customerId: string, metadata: EventMetadata, reservationRevision?: number,
): Promise<void> {
  await runCommand(platform, documentNumberStreamType, documentNumberStream(clientId, documentNumber), {
    type: 'ReleaseKey', key: { clientId, documentNumber }, owner: customerId, now: platform.runtime.now(),
    ...(reservationRevision === undefined ? {} : { atRevision: reservationRevision }),
  }, metadata);
}

/**
 * Runs `work` holding a reservation of `documentNumber` (given the revision of the number's stream it is at;
 * null without a number). A reservation taken here is given back if `work` fails, unless something happened
 * on the number's stream since (the reactor gave it back, and the customer reserved it again).
 */
async function withDocumentNumber<T>(
  platform: Platform, clientId: string, documentNumber: string | undefined, customerId: string, metadata: EventMetadata,
  work: (reservationRevision: number | null) => Promise<T>,
): Promise<T> {
  const reservation = documentNumber === undefined ? null : await reserveDocumentNumber(platform, clientId, documentNumber, customerId, metadata);
  try {
    return await work(reservation?.revision ?? null);
  } catch (error) {
    if (reservation?.reserved) {
      await releaseDocumentNumber(platform, clientId, documentNumber!, customerId, metadata, reservation.revision).catch((releaseError: unknown) => {
        // The request answers with its own error (the one that matters to the caller). A number reserved for a
        // customer that was never created is given back later by the customers reactor (releaseAbandonedReservation);
        // one reserved for an existing customer's update stays with it until an update succeeds or an operator acts.
        platform.logger.error({ err: releaseError, clientId, customerId, cause: error instanceof Error ? error.message : String(error) },
          'could not release a document number after the change that reserved it failed');
      });
    }
    throw error;
  }
}

/** A reservation as the reactor reads it from its event. */
export interface DocumentNumberReservation {
  clientId: string;
  documentNumber: string;
  customerId: string;
  /** Where on the number's stream the reservation was recorded. */
  reservationRevision: number;
  /** The reservation event's id: the effects' deterministic ids derive from it. */
  reservationEventId: string;
}

/**
 * A document number reserved for a customer whose creation never came (the creating process died between the
 * two appends, or its release failed) is given back, in three steps that each stream decides:
 * 1. the reservation must still be the number's last event (otherwise it was released, or taken again since);
 * 2. the customer's stream records that the creation holding that reservation is given up, unless the customer
 *    exists: appended at the revision it was read at, so this and that creation cannot both succeed (whichever
 *    appends first wins; the creation that loses is refused, and the same request sent again reserves anew);
 * 3. the number's stream releases that reservation, if it is still the last event.
 * Called by the reactor once the reservation is older than ABANDONED_RESERVATION_MS. Answers whether it released.
 */
export async function releaseAbandonedReservation(
  platform: Platform, reservation: DocumentNumberReservation, metadata: EventMetadata,
): Promise<boolean> {
  const { clientId, documentNumber, customerId, reservationRevision, reservationEventId } = reservation;
  const numberStream = documentNumberStream(clientId, documentNumber);
  const number = await streamState(platform, documentNumberStreamType, numberStream);
  if (number.holder !== customerId || number.revision !== reservationRevision) return false;
  const { state } = await runCommand(platform, customerStreamType, customerStream(customerId), {
    type: 'AbandonCreation', tenant: 'any', customerId, clientId, documentNumber, reservationRevision,
    eventId: deterministicId('customer-creation-abandoned', reservationEventId), now: platform.runtime.now(),
  }, metadata);
  if (state.exists) return false;
  const { events } = await runCommand(platform, documentNumberStreamType, numberStream, {
    type: 'ReleaseKey', key: { clientId, documentNumber }, owner: customerId, atRevision: reservationRevision, now: platform.runtime.now(),
    eventId: deterministicId('customer-document-number-released', reservationEventId),
  }, metadata);
  if (events.length > 0) {
    platform.logger.warn({ clientId, customerId }, 'released a document number whose customer was never created');
  }
  return events.length > 0;
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
  platform: Platform, clientId: string, input: CreateCustomer, metadata: EventMetadata, autoCreated = false,
): Promise<string> {
  const customerId = createdId(platform.runtime, metadata, 'customer');
  const fields = customerFieldsOf(input);
  await withDocumentNumber(platform, clientId, fields.documentNumber, customerId, metadata, (reservationRevision) =>
    runCommand(platform, customerStreamType, customerStream(customerId), {
      type: 'CreateCustomer', tenant: { clientId }, customerId, clientId, fields, autoCreated, reservationRevision, now: platform.runtime.now(),
    }, metadata));
  return customerId;
}

export async function updateCustomer(
  platform: Platform, clientId: string, customerId: string, input: UpdateCustomer, metadata: EventMetadata,
): Promise<void> {
  const changes = payerFieldsOf(input);
  // The new number is reserved before the customer's stream decides: another client's customer (or none) must
  // reserve nothing, so its stream is asked first, and answers as the decider would.
  if (changes.documentNumber !== undefined && !(await customerOfClient(platform, clientId, customerId))) throw domainNotFound('customer not found');
  const { events } = await withDocumentNumber(platform, clientId, changes.documentNumber, customerId, metadata, () =>
    runCommand(platform, customerStreamType, customerStream(customerId), { type: 'UpdateCustomer', tenant: { clientId }, changes, now: platform.runtime.now() }, metadata));
  for (const event of events) {
    const previous = event.type === 'CustomerUpdated' ? event.data.previousDocumentNumber : undefined;
    if (previous) await releaseDocumentNumber(platform, clientId, previous, customerId, metadata);
  }
}

export async function addCustomerDocument(
  platform: Platform, tenant: Tenant, customerId: string, document: AddCustomerDocument, metadata: EventMetadata,
): Promise<string> {
  const documentId = createdId(platform.runtime, metadata, 'customer document');
  await runCommand(platform, customerStreamType, customerStream(customerId), { type: 'AddDocument', tenant, documentId, document, now: platform.runtime.now() }, metadata);
  return documentId;
}

export async function uploadCustomerDocument(
  platform: Platform, tenant: Tenant, customerId: string, documentId: string, upload: UploadCustomerDocument, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, customerStreamType, customerStream(customerId), { type: 'UploadDocument', tenant, documentId, upload, now: platform.runtime.now() }, metadata);
}

export async function decideCustomerDocument(
  platform: Platform, tenant: Tenant, customerId: string, documentId: string, decision: 'APPROVED' | 'REJECTED', metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, customerStreamType, customerStream(customerId), { type: 'DecideDocument', tenant, documentId, decision, now: platform.runtime.now() }, metadata);
}

export async function changeCustomerOperationLevel(
  platform: Platform, tenant: Tenant, customerId: string, operationLevel: OperationLevel, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, customerStreamType, customerStream(customerId), { type: 'ChangeOperationLevel', tenant, operationLevel, now: platform.runtime.now() }, metadata);
}
