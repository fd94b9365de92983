import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger } from '../src/logging.ts';
import { Scheduler } from '../src/jobs/scheduler.ts';
import { until } from './support/until.ts';

/** A logger whose JSON lines land in `lines`. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('debug', destination) };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => { open = resolve; });
  return { opened, open };
}

const EVERY_SECOND = '* * * * * *';

describe('Scheduler', () => {
  let scheduler: Scheduler | undefined;
  afterEach(async () => {
    await scheduler?.stop();
    scheduler = undefined;
  });

  it('skips a run that falls due while the previous one is still going, and runs again once it has ended', async () => {
    const { lines, logger } = capturingLogger();
    const first = gate();
    let runs = 0;
    scheduler = new Scheduler(logger).add({
      name: 'slow', schedule: EVERY_SECOND,
      async run() {
        runs += 1;
        if (runs === 1) await first.opened;
      },
    });
    await until(() => lines.some((l) => l.job === 'slow' && l.level === 40), { what: 'a skipped run logged as a warning' });
    expect(runs, 'the skipped run did not start').to.equal(1);
    first.open();
    await until(() => runs >= 2, { what: 'the next due run after the first ended' });
  });

  it('stop() stops scheduling and waits for the run in progress', async () => {
    const { logger } = capturingLogger();
    const release = gate();
    let started = 0;
    let finished = false;
    scheduler = new Scheduler(logger).add({
      name: 'long', schedule: EVERY_SECOND,
      async run() {
        started += 1;
        await release.opened;
        // Still busy for a while after the release, so that a stop() not waiting for the run returns first.
        for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
        finished = true;
      },
    });
    await until(() => started === 1, { what: 'a run started' });
    const stopping = scheduler.stop();
    release.open();
    await stopping;
    expect(finished, 'stop() returned only after the run had finished').to.equal(true);
    expect(started).to.equal(1);
  });

  it('logs a failed run with the job\'s name and keeps the schedule', async () => {
    const { lines, logger } = capturingLogger();
    let runs = 0;
    scheduler = new Scheduler(logger).add({
      name: 'failing', schedule: EVERY_SECOND,
      async run() {
        runs += 1;
        throw new Error(`failure ${runs}`);
      },
    });
    await until(() => lines.filter((l) => l.job === 'failing' && l.level === 50).length >= 2, { what: 'two failed runs logged' });
    const failure = lines.find((l) => l.job === 'failing' && l.level === 50)!;
    expect(failure.msg).to.equal('job failed; it runs again on schedule');
    expect(failure.err).to.include({ message: 'failure 1' });
  });

  it('refuses an invalid cron expression', () => {
    expect(() => new Scheduler(capturingLogger().logger).add({ name: 'bad', schedule: 'every minute', run: async () => 0 }))
      .to.throw(/job bad: invalid cron expression/);
  });
});
