/**
 * What a context is, to the rest of the service: its manifest. A context is a folder (`src/<context>/`) with its
 * events, pure decider, command handlers, routes and this manifest; its read model in `projections/`, its HTTP
 * contracts in `schemas/`. The service is assembled from the list of manifests in `src/contexts.ts`: the stored
 * event registry, the projectors, the webhook mapping table, the ledger's postings, the routes and the background
 * work are all derived from that list, so adding a context is its folder, its `schemas/` and `projections/` files,
 * and one line there (docs/architecture.md, "Adding a context").
 */
import type { Job, Worker } from './jobs/scheduler.ts';
import type { AnyRoute } from './http/route.ts';
import type { Services } from './http/services.ts';
import type { Platform } from './platform.ts';
import type { AnyStreamType } from './eventstore/streams.ts';
import type { Projector, Reactor } from './projection/projector.ts';
import type { ContextEvents } from './eventstore/upcasting.ts';
import type { WebhookMappings } from '../projections/webhookMappings.ts';
import type { LedgerPostings } from '../projections/ledgerPostings.ts';

/** What the service derives from every manifest together, for the read models that follow other contexts' events. */
export interface Registered {
  /** Every context's webhook mapping entries, in one table keyed by stored event type. */
  readonly webhookMappings: WebhookMappings;
  /** Every context's ledger postings (journal entries and changes of held funds), keyed by stored event type. */
  readonly postings: LedgerPostings;
}

export interface ContextModule {
  /** The context's folder name. */
  readonly name: string;
  /**
   * The stored events it owns: each type's data schema and the upcasters of its older versions (its `events.ts`).
   * The registry (`eventContractsOf` in src/contexts.ts) is the union of every context's.
   */
  readonly events?: readonly ContextEvents[];
  /**
   * The streams it writes, each with its one decider and read-model waits (src/eventstore/streams.ts). A stream
   * shared with another context's facts is listed once, by the context that owns it, with their deciders composed.
   */
  readonly streams?: readonly AnyStreamType[];
  /** Its endpoints, declared with their schemas (mounted and documented in the order of `src/contexts.ts`). */
  routes?(services: Services): AnyRoute[];
  /**
   * Its read models; the projection daemon runs one active instance of each across processes. A read model that
   * follows what every context registers (the webhook emitter, the ledger) is built from `Registered`.
   */
  readonly projectors?: readonly Projector[] | ((registered: Registered) => readonly Projector[]);
  /** What its events become as the interface's webhook events (projections/webhookMappings.ts). */
  readonly webhooks?: WebhookMappings;
  /** The journal entries and held-funds changes its money events post (projections/ledgerPostings.ts). */
  readonly postings?: LedgerPostings;
  /** Its process managers: effects on other streams, with deterministic ids so a re-run changes nothing. */
  reactors?(platform: Platform): Reactor[];
  /** Its time-driven work, each bounded per run and safe on several instances at once. */
  jobs?(platform: Platform): Job[];
  /** Its work that runs all the time (started with the jobs, stopped before the projections). */
  workers?(services: Services): Worker[];
}

/** The manifest, with its exact type kept (src/contexts.ts checks the stored event types the manifests carry). */
export function defineContext<const M extends ContextModule>(module: M): M {
  return module;
}
