import { expect } from 'chai';
import type { Position } from '../src/eventstore/position.ts';
import {
  SubscriptionSupervisor, type SubscriptionDrop, type SupervisedSubscription,
} from '../src/eventstore/esdb/subscriptionSupervisor.ts';
import { until } from './support/until.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** These fakes answer in microseconds: poll often, give up early. */
const soon = { timeoutMs: 2_000, intervalMs: 2 };

/** How one fake subscription behaves: the items it yields, then how it ends. */
type Script = { items: unknown[]; then: 'throw' | 'end' | 'hang' };

/**
 * A fake subscription factory. Each call opens the next scripted subscription (the last script repeats)
 * and records where it was asked to start. A 'hang' subscription waits until it is unsubscribed.
 */
function fakeSubscriptions(scripts: Script[]) {
  const opened: Array<{ from: Position | null; at: number }> = [];
  let unsubscribed = 0;
  let live = 0;
  const open = (from: Position | null): SupervisedSubscription => {
    const script = scripts[Math.min(opened.length, scripts.length - 1)]!;
    opened.push({ from, at: Date.now() });
    let cancel: () => void = () => undefined;
    const cancelled = new Promise<void>((resolve) => { cancel = resolve; });
    async function* run() {
      live++;
      try {
        for (const item of script.items) {
          await sleep(1);
          yield item;
        }
        if (script.then === 'throw') throw new Error('connection dropped');
        if (script.then === 'hang') await cancelled;
      } finally {
        live--;
      }
    }
    const iterable = run();
    return {
      [Symbol.asyncIterator]: () => iterable,
      async unsubscribe() {
        unsubscribed++;
        cancel();
      },
    };
  };
  return {
    open,
    opened,
    get unsubscribed() { return unsubscribed; },
    get live() { return live; },
  };
}

const position = (n: number): Position => ({ commit: BigInt(n), prepare: BigInt(n) });

describe('esdb subscription supervisor', () => {
  const supervisors: SubscriptionSupervisor[] = [];
  afterEach(async () => {
    await Promise.all(supervisors.splice(0).map((s) => s.stop()));
  });

  function supervise(...args: ConstructorParameters<typeof SubscriptionSupervisor>): SubscriptionSupervisor {
    const supervisor = new SubscriptionSupervisor(...args);
    supervisors.push(supervisor);
    return supervisor;
  }

  it('resubscribes after a drop from the position the checkpoint source returns then', async () => {
    const fake = fakeSubscriptions([
      { items: ['a', 'b'], then: 'throw' },
      { items: ['c'], then: 'end' },
      { items: ['d'], then: 'hang' },
    ]);
    const checkpoints = [null, position(10), position(20)];
    let asked = 0;
    const received: unknown[] = [];
    const drops: SubscriptionDrop[] = [];
    const supervisor = supervise(
      fake.open,
      async () => checkpoints[Math.min(asked++, checkpoints.length - 1)]!,
      (item) => received.push(item),
      { initialDelayMs: 2, maxDelayMs: 20, onDrop: (drop) => drops.push(drop) },
    );
    supervisor.start();
    supervisor.start(); // a second start is harmless

    await until(() => received.length === 4, soon);
    expect(received).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(fake.opened.map((o) => o.from)).to.deep.equal([null, position(10), position(20)]);
    expect(asked).to.equal(3);
    expect(drops).to.have.length(2);
    expect((drops[0]!.error as Error).message).to.equal('connection dropped');
    expect(drops[1]!.error).to.equal(null); // an ordinary end is a drop too

    await supervisor.stop();
    expect(fake.unsubscribed).to.be.at.least(1);
    // stop() resolves once the loop has ended: nothing can open a subscription after it.
    await until(() => fake.live === 0, soon);
    expect(fake.opened).to.have.length(3);
    expect(received).to.have.length(4);
    expect(supervisor.isRunning).to.equal(false);
  });

  it('backs off exponentially up to the cap while subscriptions keep failing', async () => {
    const fake = fakeSubscriptions([{ items: [], then: 'throw' }]);
    const drops: SubscriptionDrop[] = [];
    const supervisor = supervise(fake.open, async () => position(1), () => undefined,
      { initialDelayMs: 2, maxDelayMs: 16, onDrop: (drop) => drops.push(drop) });
    supervisor.start();

    await until(() => fake.opened.length >= 7, soon);
    await supervisor.stop();
    expect(drops.slice(0, 6).map((d) => d.delayMs)).to.deep.equal([2, 4, 8, 16, 16, 16]);
    expect(drops.slice(0, 6).map((d) => d.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    // It really waited: each reopen comes at least the announced delay after the previous one.
    for (let i = 1; i < 7; i++) {
      const gap = fake.opened[i]!.at - fake.opened[i - 1]!.at;
      expect(gap, `gap before reopen ${i}`).to.be.at.least(drops[i - 1]!.delayMs - 1);
    }
    // Every reopen asked the checkpoint source again.
    expect(fake.opened.every((o) => o.from?.commit === 1n)).to.equal(true);
  });

  it('starts the backoff over once a subscription delivered something', async () => {
    const fake = fakeSubscriptions([
      { items: [], then: 'throw' },
      { items: [], then: 'throw' },
      { items: ['x'], then: 'throw' },
      { items: [], then: 'throw' },
      { items: [], then: 'hang' },
    ]);
    const drops: SubscriptionDrop[] = [];
    const supervisor = supervise(fake.open, async () => null, () => undefined,
      { initialDelayMs: 3, maxDelayMs: 100, onDrop: (drop) => drops.push(drop) });
    supervisor.start();
    await until(() => fake.opened.length === 5, soon);
    await supervisor.stop();
    expect(drops.map((d) => d.delayMs)).to.deep.equal([3, 6, 3, 6]);
  });

  it('treats a failing checkpoint source like a drop and retries', async () => {
    const fake = fakeSubscriptions([{ items: ['only'], then: 'hang' }]);
    let calls = 0;
    const drops: SubscriptionDrop[] = [];
    const received: unknown[] = [];
    const supervisor = supervise(fake.open, async () => {
      if (++calls < 3) throw new Error('database unavailable');
      return position(7);
    }, (item) => received.push(item), { initialDelayMs: 2, maxDelayMs: 10, onDrop: (d) => drops.push(d) });
    supervisor.start();
    await until(() => received.length === 1, soon);
    expect(drops.map((d) => (d.error as Error).message)).to.deep.equal(['database unavailable', 'database unavailable']);
    expect(fake.opened.map((o) => o.from)).to.deep.equal([position(7)]);
  });

  it('keeps the subscription when the event handler throws', async () => {
    const fake = fakeSubscriptions([{ items: [1, 2, 3], then: 'hang' }]);
    const errors: unknown[] = [];
    const received: unknown[] = [];
    const supervisor = supervise(fake.open, async () => null, (item) => {
      received.push(item);
      if (item === 2) throw new Error('listener failed');
    }, { initialDelayMs: 2, maxDelayMs: 10, onError: (e) => errors.push(e) });
    supervisor.start();
    await until(() => received.length === 3, soon);
    expect(errors).to.have.length(1);
    expect(fake.opened).to.have.length(1);
  });

  it('stops promptly during a long backoff and never resubscribes afterwards', async () => {
    const fake = fakeSubscriptions([{ items: [], then: 'throw' }]);
    let asked = 0;
    const supervisor = supervise(fake.open, async () => { asked++; return null; }, () => undefined,
      { initialDelayMs: 60_000, maxDelayMs: 60_000 });
    supervisor.start();
    await until(() => fake.opened.length === 1, soon);
    await sleep(5); // now waiting out the backoff
    const started = Date.now();
    await supervisor.stop();
    expect(Date.now() - started).to.be.below(500);
    expect(fake.opened).to.have.length(1);
    expect(asked).to.equal(1);
    supervisor.start(); // no restart after stop
    expect(supervisor.isRunning).to.equal(false);
    expect(fake.opened).to.have.length(1);
  });

  it('stops while a subscription is open by unsubscribing it', async () => {
    const fake = fakeSubscriptions([{ items: ['a'], then: 'hang' }]);
    const received: unknown[] = [];
    const supervisor = supervise(fake.open, async () => null, (item) => received.push(item),
      { initialDelayMs: 2, maxDelayMs: 10 });
    supervisor.start();
    await until(() => received.length === 1, soon);
    const started = Date.now();
    await supervisor.stop();
    expect(Date.now() - started).to.be.below(500);
    expect(fake.unsubscribed).to.equal(1);
    await until(() => fake.live === 0, soon);
    expect(fake.opened).to.have.length(1);
  });

  it('refuses a maximum delay below the initial one', () => {
    expect(() => new SubscriptionSupervisor(() => ({ async *[Symbol.asyncIterator]() {} }), async () => null,
      () => undefined, { initialDelayMs: 50, maxDelayMs: 10 })).to.throw(RangeError);
  });
});
