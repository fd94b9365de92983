/**
 * The work a process does besides answering requests: every context's reactors and scheduled jobs, and the
 * service's own housekeeping. Both the service and the test harness start it here.
 */
import { contexts } from './contexts.ts';
import type { Services } from './http/services.ts';
import type { Platform } from './platform.ts';
import { Scheduler } from './jobs/scheduler.ts';

export function startBackgroundWork(services: Services, options: { schedule?: boolean } = {}): Scheduler {
  // A reactor answers nobody: the commands it issues need not wait for the read models to show them (their
  // handlers' read-your-writes waits would hold up every event behind it, a reactor's lane at a time).
  const reacting: Platform = { ...services, readYourWrites: async () => undefined };
  for (const context of contexts) for (const reactor of context.reactors?.(reacting) ?? []) services.projections.addReactor(reactor);
  const scheduler = new Scheduler(services.logger);
  if (options.schedule === false) return scheduler;
  scheduler.add({ name: 'purge-idempotency-keys', schedule: '*/10 * * * *', run: () => services.idempotency.purgeExpired() });
  for (const context of contexts) for (const job of context.jobs?.(services) ?? []) scheduler.add(job);
  for (const context of contexts) for (const worker of context.workers?.(services) ?? []) scheduler.addWorker(worker);
  return scheduler;
}
