/**
 * Time-driven work (node-cron). Each job is idempotent and bounded per run, so running it on several
 * instances at once, or twice, is harmless; a run still going when the next is due is skipped.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../logging.ts';

export interface Job {
  name: string;
  /** cron expression, seconds field optional */
  schedule: string;
  run(): Promise<unknown>;
}

export class Scheduler {
  private readonly tasks: ScheduledTask[] = [];
  private readonly running = new Set<Promise<unknown>>();

  constructor(private readonly logger: Logger) {}

  add(job: Job): this {
    if (!cron.validate(job.schedule)) throw new Error(`job ${job.name}: invalid cron expression ${job.schedule}`);
    let busy = false;
    const task = cron.schedule(job.schedule, async () => {
      if (busy) return;
      busy = true;
      const run = job.run()
        .then((result) => this.logger.debug({ job: job.name, result }, 'job ran'))
        .catch((error: unknown) => this.logger.error({ err: error, job: job.name }, 'job failed; it runs again on schedule'))
        .finally(() => { busy = false; this.running.delete(run); });
      this.running.add(run);
      await run;
    }, { name: job.name });
    this.tasks.push(task);
    return this;
  }

  /** Stops scheduling and waits for runs in progress. */
  async stop(): Promise<void> {
    await Promise.all(this.tasks.map((task) => task.stop()));
    await Promise.all([...this.running]);
  }
}
