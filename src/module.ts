/**
 * What a context is, to the rest of the service: its manifest. A context is a folder (`src/<context>/`) with its
 * events, pure decider, command handlers, routes and this manifest; its read model in `projections/`, its HTTP
 * contracts in `schemas/`. The service is assembled from the list of manifests in `src/contexts.ts`: adding a
 * context is its folder, its `schemas/` and `projections/` files, and one line there (README, "How it is built").
 */
import type { Job, Worker } from './jobs/scheduler.ts';
import type { AnyRoute } from './http/route.ts';
import type { Services } from './http/services.ts';
import type { Platform } from './platform.ts';
import type { AnyStreamType } from './eventstore/streams.ts';
import type { Projector, Reactor } from './projection/projector.ts';

export interface ContextModule {
  /** The context's folder name. */
  readonly name: string;
  /**
   * The streams it writes, each with its one decider and read-model waits (src/eventstore/streams.ts). A stream
   * shared with another context's facts is listed once, by the context that owns it, with their deciders composed.
   */
  readonly streams?: readonly AnyStreamType[];
  /** Its endpoints, declared with their schemas (mounted and documented in the order of `src/contexts.ts`). */
  routes?(services: Services): AnyRoute[];
  /** Its read models; the projection daemon runs one active instance of each across processes. */
  readonly projectors?: readonly Projector[];
  /** Its process managers: effects on other streams, with deterministic ids so a re-run changes nothing. */
  reactors?(platform: Platform): Reactor[];
  /** Its time-driven work, each bounded per run and safe on several instances at once. */
  jobs?(platform: Platform): Job[];
  /** Its work that runs all the time (started with the jobs, stopped before the projections). */
  workers?(services: Services): Worker[];
}

export function defineContext(module: ContextModule): ContextModule {
  return module;
}
