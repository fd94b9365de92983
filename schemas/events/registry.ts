/**
 * Every stored event type of the service, with its data schema and current version, gathered from the contexts
 * that own them (each context's `events.ts`). The event stores write each type at its current version and upcast
 * older ones on read; test/events.contracts.test.ts holds the registry to the committed snapshot.
 */
import { accountEvents, type AccountEvent, type AccountNumberEvent } from '../../src/accounts/events.ts';
import { clientEvents, type ClientEvent } from '../../src/clients/events.ts';
import { customerEvents, type CustomerEvent, type DocumentNumberEvent } from '../../src/customers/events.ts';
import { EventContracts } from '../../src/eventstore/upcasting.ts';
import { identityEvents, type IdentityEvent, type IdentityGraphEvent } from '../../src/identities/events.ts';
import { paymentEvents, type PaymentEvent } from '../../src/payments/events.ts';

export const storedEvents = new EventContracts([clientEvents, identityEvents, customerEvents, accountEvents, paymentEvents]);

/** Every event the contexts' types name. */
export type StoredEvent =
  | ClientEvent | IdentityEvent | IdentityGraphEvent | CustomerEvent | DocumentNumberEvent | AccountEvent | AccountNumberEvent
  | PaymentEvent;

/** Compile-time: the contexts' event unions and their registered schemas name the same types, no more, no less. */
type RegisteredType =
  | keyof typeof import('../../src/clients/events.ts')['clientEventSchemas']
  | keyof typeof import('../../src/identities/events.ts')['identityEventSchemas']
  | keyof typeof import('../../src/identities/events.ts')['identityGraphEventSchemas']
  | keyof typeof import('../../src/customers/events.ts')['customerEventSchemas']
  | keyof typeof import('../../src/customers/events.ts')['documentNumberEventSchemas']
  | keyof typeof import('../../src/accounts/events.ts')['accountEventSchemas']
  | keyof typeof import('../../src/accounts/events.ts')['accountNumberEventSchemas']
  | keyof typeof import('../../src/payments/events.ts')['paymentEventSchemas'];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const everyTypeRegistered: Same<StoredEvent['type'], RegisteredType> = true;
void everyTypeRegistered;
