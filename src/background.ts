/**
 * The work a process does besides answering requests: every context's reactors and scheduled jobs, and the
 * service's own housekeeping. Both the service and the test harness start it here.
 */
import { contexts as serviceContexts } from './contexts.ts';
import type { ContextModule } from './module.ts';
import type { Services } from './http/services.ts';
import type { Platform } from './platform.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { dropOrphanSchemas } from './projection/schemaKeeper.ts';

/** Expired idempotency keys deleted per statement, and statements per run (at most 1,000,000 keys every 10 minutes). */
const IDEMPOTENCY_PURGE_BATCH = 10_000;
const IDEMPOTENCY_PURGE_MAX_BATCHES = 100;

/** Runs `purge` (one bounded batch, answering how many rows it deleted) until a batch is not full, at most `maxBatches` times. */
async function inBatches(purge: (limit: number) => Promise<number>, batch: number, maxBatches: number): Promise<number> {
  let total = 0;
  for (let n = 0; n < maxBatches; n++) {
    const deleted = await purge(batch);
    total += deleted;
    if (deleted < batch) break;
  }
  return total;
}

/** `contexts`: whose reactors, jobs and workers to start (src/contexts.ts unless a test adds one of its own). */
export function startBackgroundWork(
  services: Services, options: { schedule?: boolean; contexts?: readonly ContextModule[] } = {},
): Scheduler {
  const contexts: readonly ContextModule[] = options.contexts ?? serviceContexts;
  // A reactor answers nobody: the commands it issues need not wait for the read models to show them (their
  // handlers' read-your-writes waits would hold up every event behind it, a reactor's lane at a time).
  const reacting: Platform = { ...services, readYourWrites: async () => undefined };
  for (const context of contexts) for (const reactor of context.reactors?.(reacting) ?? []) services.projections.addReactor(reactor);
  const scheduler = new Scheduler(services.logger);
  if (options.schedule === false) return scheduler;
  scheduler.add({
    name: 'purge-idempotency-keys', schedule: '*/10 * * * *',
    run: () => inBatches((limit) => services.idempotency.purgeExpired(limit), IDEMPOTENCY_PURGE_BATCH, IDEMPOTENCY_PURGE_MAX_BATCHES),
  });
  scheduler.add({ name: 'drop-orphan-schemas', schedule: services.config.retentionCron, run: () => dropOrphanSchemas(services.storage.database) });
  for (const context of contexts) for (const job of context.jobs?.(services) ?? []) scheduler.add(job);
  for (const context of contexts) for (const worker of context.workers?.(services) ?? []) scheduler.addWorker(worker);
  return scheduler;
}
