/**
 * The service's parts wired the one way every host of it needs (the process, the tests, the benchmarks): appends
 * measured into the metrics, every projector and reactor in one projection daemon, the services over them, and
 * the background work. Serving HTTP and the stop order (src/shutdown.ts) stay with the host.
 */
import { contexts as serviceContexts, projectorsOf } from './contexts.ts';
import { startBackgroundWork } from './background.ts';
import type { Config } from './config.ts';
import type { Runtime } from './domain/runtime.ts';
import { measureAppends } from './eventstore/measured.ts';
import { Metrics } from './http/metrics.ts';
import { ReadModelFreshness } from './http/readModelFreshness.ts';
import { createServices, type Services } from './http/services.ts';
import { createPlatform } from './platform.ts';
import type { Scheduler } from './jobs/scheduler.ts';
import type { Logger } from './logging.ts';
import type { ContextModule } from './module.ts';
import { ProjectionDaemon, type DaemonOptions } from './projection/daemon.ts';
import type { Storage } from './storage.ts';

export interface AssembledService {
  services: Services;
  projections: ProjectionDaemon;
  scheduler: Scheduler;
  /** The storage as the services use it: its store's appends are measured. */
  storage: Storage;
}

export async function assembleService(deps: {
  config: Config;
  logger: Logger;
  runtime: Runtime;
  storage: Storage;
  daemon?: Omit<DaemonOptions, 'logger' | 'batchSize'>;
  /** Run the scheduled jobs on their cron schedules (default); tests and benchmarks run them themselves. */
  schedule?: boolean;
  /** Called with the daemon and its runners before they start, to watch them from the first batch. */
  beforeProjecting?(projections: ProjectionDaemon): void;
  /** The contexts to run (src/contexts.ts unless a test adds one of its own); the HTTP edge is given the same. */
  contexts?: readonly ContextModule[];
}): Promise<AssembledService> {
  const { config, logger, runtime } = deps;
  const contexts: readonly ContextModule[] = deps.contexts ?? serviceContexts;
  const metrics = new Metrics();
  const freshness = new ReadModelFreshness();
  const storage: Storage = {
    ...deps.storage,
    store: measureAppends(deps.storage.store, (seconds) => metrics.observeAppend(seconds), (result, events) => freshness.appended(result, events)),
  };
  const projections = new ProjectionDaemon(storage.database, storage.store, {
    leaseTtlMs: config.projectionLeaseMs,
    heartbeatMs: config.projectionHeartbeatMs,
    onLeaseChange: (projection, change) => metrics.countLeaseChange(projection, change),
    ...deps.daemon, logger, batchSize: config.projectionBatchSize,
  });
  for (const projector of projectorsOf(contexts)) projections.addProjector(projector);
  deps.beforeProjecting?.(projections);
  projections.start();
  const platform = createPlatform({ config, logger, runtime, storage, projections, onStale: (position) => freshness.timedOut(position) });
  const services = await createServices(platform, { metrics, freshness });
  const scheduler = startBackgroundWork(services, { schedule: deps.schedule ?? true, contexts });
  return { services, projections, scheduler, storage };
}
