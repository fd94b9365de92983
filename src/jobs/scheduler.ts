/**
 * Time-driven work (node-cron). Each job is idempotent and bounded per run, so running it on several
 * instances at once, or twice, is harmless; a run still going when the next is due is skipped (node-cron's
 * `noOverlap`).
 */
import cron, { type ScheduledTask, type TaskContext } from 'node-cron';
import type { Logger } from '../logging.ts';

export interface Job {
  name: string;
  /** cron expression, seconds field optional */
  schedule: string;
  run(): Promise<unknown>;
}

/**
 * Work that runs all the time rather than on a schedule (the webhook dispatcher): started once, stopped with the
 * scheduler, which waits for what it has in progress.
 */
export interface Worker {
  name: string;
  start(): void;
  stop(): Promise<void>;
}

export class Scheduler {
  private readonly tasks: ScheduledTask[] = [];
  private readonly workers: Worker[] = [];
  /** Runs started and not yet finished, by node-cron's execution id, each settled when its run ends. */
  private readonly running = new Map<string, { settled: Promise<void>; settle(): void }>();

  constructor(private readonly logger: Logger) {}

  add(job: Job): this {
    if (!cron.validate(job.schedule)) throw new Error(`job ${job.name}: invalid cron expression ${job.schedule}`);
    const log = this.logger.child({ job: job.name });
    const task = cron.schedule(job.schedule, () => job.run(), {
      name: job.name,
      noOverlap: true,
      // node-cron's own messages go to the service's log: a skipped run (a warning), a missed one, a failure.
      logger: {
        info: (message) => log.info(message),
        warn: (message) => log.warn(message),
        error: (message, err) => log.error({ err: err ?? message }, 'job failed; it runs again on schedule'),
        debug: (message) => log.debug(message),
      },
    });
    task.on('execution:started', (context) => this.started(context));
    task.on('execution:finished', (context) => {
      log.debug({ result: context.execution?.result }, 'job ran');
      this.ended(context);
    });
    task.on('execution:failed', (context) => this.ended(context));
    this.tasks.push(task);
    return this;
  }

  /** Starts a worker; `stop` stops it. */
  addWorker(worker: Worker): this {
    worker.start();
    this.workers.push(worker);
    return this;
  }

  /** Stops scheduling and the workers, and waits for runs in progress. */
  async stop(): Promise<void> {
    await Promise.all([...this.tasks.map((task) => task.stop()), ...this.workers.map((worker) => worker.stop())]);
    await Promise.all([...this.running.values()].map((run) => run.settled));
  }

  private started(context: TaskContext): void {
    const id = context.execution?.id;
    if (id === undefined) return;
    let settle = () => {};
    const settled = new Promise<void>((resolve) => { settle = resolve; });
    this.running.set(id, { settled, settle });
  }

  private ended(context: TaskContext): void {
    const id = context.execution?.id;
    if (id === undefined) return;
    this.running.get(id)?.settle();
    this.running.delete(id);
  }
}
