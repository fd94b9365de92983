/**
 * Every context of the service, in one list: the only place a new context is registered (docs/architecture.md,
 * "Adding a context"). Everything else is derived from it: the stored event registry (`eventContractsOf`), the
 * projectors and the tables they follow (`registeredOf`, `projectorsOf`), the routes (src/http/app.ts), the reactors,
 * jobs and workers (src/background.ts), and the layering rules (.dependency-cruiser.cjs reads src/'s folders).
 *
 * Routes are mounted in this order (the catalog's `GET /payments/banks/:country` and `/payments/available-products`
 * must come before the payments' `GET /payments/:id`; the deposits' `/payments/unassigned` and
 * `/accounts/unassigned` before `/payments/:id` and `/accounts/:id`).
 */
import type { ContextModule, Registered } from './module.ts';
import type { Projector } from './projection/projector.ts';
import { EventContracts } from './eventstore/upcasting.ts';
import { unionOfHandlers } from './eventstore/typedEvents.ts';
import type { StoredEventType } from './storedEvents/registry.ts';
import { postingsOf } from '../projections/ledgerPostings.ts';
import { clientsContext } from './clients/module.ts';
import { identitiesContext } from './identities/module.ts';
import { customersContext } from './customers/module.ts';
import { accountsContext } from './accounts/module.ts';
import { depositsContext } from './deposits/module.ts';
import { catalogContext } from './catalog/module.ts';
import { paymentsContext } from './payments/module.ts';
import { attemptsContext } from './attempts/module.ts';
import { ledgerContext } from './ledger/module.ts';
import { integrityContext } from './integrity/module.ts';
import { webhooksContext } from './webhooks/module.ts';
import { checkoutContext } from './checkout/module.ts';
import { testClocksContext } from './testClocks/module.ts';

const manifests = [
  clientsContext, identitiesContext, customersContext, depositsContext, accountsContext, catalogContext, paymentsContext, attemptsContext,
  ledgerContext, webhooksContext, integrityContext, checkoutContext, testClocksContext,
] as const satisfies readonly ContextModule[];

export const contexts: readonly ContextModule[] = manifests;

/** Every stored event type the contexts own, with its schema and current version (each manifest's `events`). */
export function eventContractsOf(list: readonly ContextModule[]): EventContracts {
  return new EventContracts(list.flatMap((context) => context.events ?? []));
}

/** The webhook mapping and posting tables of every context of `list`, as one each (a type in two is refused). */
export function registeredOf(list: readonly ContextModule[]): Registered {
  return {
    webhookMappings: unionOfHandlers(list.map((context) => context.webhooks), 'webhook mappings'),
    postings: postingsOf(list.flatMap((context) => context.postings ?? [])),
  };
}

/** Every read model's projector of `list`. */
export function projectorsOf(list: readonly ContextModule[]): Projector[] {
  const registered = registeredOf(list);
  return list.flatMap((context) => {
    const { projectors } = context;
    return [...(typeof projectors === 'function' ? projectors(registered) : projectors ?? [])];
  });
}

/** The service's stored events: what its event stores write and upcast (and the committed snapshot records). */
export const storedEvents = eventContractsOf(contexts);

/** What the service's contexts register together: the webhook emitter's and the ledger's tables. */
export const registered = registeredOf(contexts);

/** Every read model's projector of the service. */
export function allProjectors(): Projector[] {
  return projectorsOf(contexts);
}

/**
 * Compile-time: the stored event types the manifests carry are exactly those of `StoredEvent`, the union every
 * consumer is typed by (src/storedEvents/registry.ts). That union stays written by hand there, one line per
 * context's events, rather than derived from this list: the read models (projections/) are typed by it and the
 * manifests import the read models, so deriving it here would make the types go round in a circle (the layering
 * rules forbid that, type-only imports included). Forget that line, or a manifest's `events`, and this fails.
 */
type EventsOf<C> = C extends { readonly events: readonly (infer E)[] } ? (E extends { readonly schemas: infer S } ? keyof S : never) : never;
type CarriedType = EventsOf<(typeof manifests)[number]>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const everyTypeCarried: Same<StoredEventType, CarriedType> = true;
void everyTypeCarried;
