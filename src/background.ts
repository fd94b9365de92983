/**
 * The work a process does besides answering requests: the sandbox autopilot (a reactor, when
 * SANDBOX_AUTOPILOT is on) and the scheduled jobs. Both the service and the test harness start it here.
 */
import type { Services } from './http/services.ts';
import { Scheduler } from './jobs/scheduler.ts';
import { expireDuePayments, runSettlementBatch } from './payments/jobs.ts';
import { sandboxAutopilot } from './payments/sandbox/autopilot.ts';
import { settlementReactor } from './payments/settlementReactor.ts';

export function startBackgroundWork(services: Services, options: { schedule?: boolean } = {}): Scheduler {
  services.projections.addReactor(settlementReactor(services));
  if (services.config.sandboxAutopilot) services.projections.addReactor(sandboxAutopilot(services));
  const scheduler = new Scheduler(services.logger);
  if (options.schedule === false) return scheduler;
  return scheduler
    .add({ name: 'purge-idempotency-keys', schedule: '*/10 * * * *', run: () => services.idempotency.purgeExpired() })
    .add({ name: 'settlement-batch', schedule: services.config.settlementCron, run: () => runSettlementBatch(services) })
    .add({ name: 'expire-payments', schedule: services.config.expiryCron, run: () => expireDuePayments(services) });
}
