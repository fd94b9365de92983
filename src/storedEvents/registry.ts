/**
 * Every stored event type of the service, as the consumers (projectors, reactors, ledger postings, webhook
 * mappings) are typed by it. The runtime registry (`storedEvents` in src/contexts.ts) is derived from the contexts'
 * manifests, each carrying the contracts of its events (its `events.ts`); this union stays written by hand, one
 * line per context's events, because the read models are typed by it and the manifests import the read models: a
 * union derived from the list of contexts would make the types go round in a circle. src/contexts.ts checks at
 * compile time that the two name the same types, no more, no less.
 */
import type { LinkEvent, SessionEvent } from '../checkout/events.ts';
import type { AccountEvent, AccountNumberEvent } from '../accounts/events.ts';
import type { AttemptEvent } from '../attempts/events.ts';
import type { ClientEvent } from '../clients/events.ts';
import type { DepositEvent } from '../deposits/events.ts';
import type { CustomerEvent, DocumentNumberEvent } from '../customers/events.ts';
import type { EventMapOf, Recorded } from '../eventstore/typedEvents.ts';
import type { IdentityEvent, IdentityGraphEvent } from '../identities/events.ts';
import type { PaymentEvent } from '../payments/events.ts';
import type { IntegrityEvent } from '../integrity/events.ts';
import type { WebhookEvent } from '../webhooks/events.ts';
import type { ParentRefundEvent, RefundEvent } from '../payments/refunds/events.ts';
import type { TestClockEvent, TestClockSlotEvent } from '../testClocks/events.ts';

/** Every event the contexts' types name: one line per context (see above). */
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
