/**
 * Every stored event type of the service, with its data schema and current version, gathered from the contexts
 * that own them (each context's `events.ts`). The event stores write each type at its current version and upcast
 * older ones on read; test/events.contracts.test.ts holds the registry to the committed snapshot.
 */
import { checkoutEvents, type LinkEvent, type SessionEvent } from '../checkout/events.ts';
import { accountEvents, type AccountEvent, type AccountNumberEvent } from '../accounts/events.ts';
import { attemptEvents, type AttemptEvent } from '../attempts/events.ts';
import { clientEvents, type ClientEvent } from '../clients/events.ts';
import { depositEvents, type DepositEvent } from '../deposits/events.ts';
import { customerEvents, type CustomerEvent, type DocumentNumberEvent } from '../customers/events.ts';
import { EventContracts } from '../eventstore/upcasting.ts';
import type { EventMapOf, Recorded } from '../eventstore/typedEvents.ts';
import { identityEvents, type IdentityEvent, type IdentityGraphEvent } from '../identities/events.ts';
import { paymentEvents, type PaymentEvent } from '../payments/events.ts';
import { integrityEvents, type IntegrityEvent } from '../integrity/events.ts';
import { webhookEvents, type WebhookEvent } from '../webhooks/events.ts';
import { refundEvents, type ParentRefundEvent, type RefundEvent } from '../payments/refunds/events.ts';
import { testClockEvents, type TestClockEvent, type TestClockSlotEvent } from '../testClocks/events.ts';

export const storedEvents = new EventContracts([
  clientEvents, identityEvents, customerEvents, accountEvents, paymentEvents, refundEvents, depositEvents, attemptEvents, webhookEvents,
  integrityEvents, checkoutEvents, testClockEvents,
]);

/** Every event the contexts' types name. */
export type StoredEvent =
  | ClientEvent | IdentityEvent | IdentityGraphEvent | CustomerEvent | DocumentNumberEvent | AccountEvent | AccountNumberEvent
  | PaymentEvent | ParentRefundEvent | RefundEvent | DepositEvent | AttemptEvent | WebhookEvent | IntegrityEvent | SessionEvent | LinkEvent
  | TestClockEvent | TestClockSlotEvent;

export type StoredEventType = StoredEvent['type'];

/**
 * Every stored event type → the type of its data: the one map every consumer (projector, reactor, ledger posting,
 * webhook mapping) is typed with (src/eventstore/typedEvents.ts).
 */
export type StoredEventData = EventMapOf<StoredEvent>;

/** A recorded event of one of the types `K`, with its data typed (a union over `K`: testing `type` narrows `data`). */
export type RecordedStoredEvent<K extends StoredEventType = StoredEventType> = Recorded<StoredEventData, K>;

/** Compile-time: the contexts' event unions and their registered schemas name the same types, no more, no less. */
type RegisteredType =
  | keyof typeof import('../clients/events.ts')['clientEventSchemas']
  | keyof typeof import('../identities/events.ts')['identityEventSchemas']
  | keyof typeof import('../identities/events.ts')['identityGraphEventSchemas']
  | keyof typeof import('../customers/events.ts')['customerEventSchemas']
  | keyof typeof import('../customers/events.ts')['documentNumberEventSchemas']
  | keyof typeof import('../accounts/events.ts')['accountEventSchemas']
  | keyof typeof import('../accounts/events.ts')['accountNumberEventSchemas']
  | keyof typeof import('../payments/events.ts')['paymentEventSchemas']
  | keyof typeof import('../payments/refunds/events.ts')['refundEventSchemas']
  | keyof typeof import('../deposits/events.ts')['depositEventSchemas']
  | keyof typeof import('../attempts/events.ts')['attemptEventSchemas']
  | keyof typeof import('../webhooks/events.ts')['webhookEventSchemas']
  | keyof typeof import('../integrity/events.ts')['integrityEventSchemas']
  | keyof typeof import('../checkout/events.ts')['sessionEventSchemas']
  | keyof typeof import('../checkout/events.ts')['linkEventSchemas']
  | keyof typeof import('../testClocks/events.ts')['testClockEventSchemas']
  | keyof typeof import('../testClocks/events.ts')['testClockSlotEventSchemas'];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const everyTypeRegistered: Same<StoredEvent['type'], RegisteredType> = true;
void everyTypeRegistered;
