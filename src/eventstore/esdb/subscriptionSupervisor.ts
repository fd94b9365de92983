/**
 * Keeps one catch-up subscription alive. A subscription can end or fail at any time (server restart,
 * network blip, leader change, or a silent drop the client only notices later); the supervisor then waits
 * with capped exponential backoff, asks the checkpoint source again where to resume from, and opens a new
 * subscription there. It knows nothing about the EventStoreDB client: the subscription comes from a factory,
 * so the resubscribe logic can be tested with a fake one.
 */
import type { Position } from '../position.ts';

/** What the supervisor needs of a subscription: items to iterate, and optionally a way to cancel it. */
export type SupervisedSubscription = AsyncIterable<unknown> & { unsubscribe?(): Promise<void> };

export type OpenSubscription = (from: Position | null) => SupervisedSubscription;

export type CheckpointSource = () => Promise<Position | null>;

export interface SubscriptionDrop {
  /** Why the subscription ended: the error it failed with, or null when it simply ended. */
  error: unknown;
  /** How long the supervisor waits before it resubscribes. */
  delayMs: number;
  /** Consecutive drops without an item received in between (1 for the first). */
  attempt: number;
}

export interface SubscriptionSupervisorOptions {
  /** First wait after a drop. Default 100 ms. */
  initialDelayMs?: number;
  /** The wait doubles after each consecutive drop up to this. Default 10 s. */
  maxDelayMs?: number;
  /** Called on each drop, before the wait (for logging). */
  onDrop?: (drop: SubscriptionDrop) => void;
  /** Called when onEvent throws; the subscription carries on. */
  onError?: (error: unknown) => void;
}

/** How long stop() waits for a subscription that does not end promptly when cancelled. */
const STOP_GRACE_MS = 1_000;

export class SubscriptionSupervisor {
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private running: Promise<void> | null = null;
  private stopped = false;
  private current: SupervisedSubscription | null = null;
  private currentIterator: AsyncIterator<unknown> | null = null;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | null = null;
  private readonly released = new WeakSet<object>();

  constructor(
    private readonly openSubscription: OpenSubscription,
    private readonly checkpointSource: CheckpointSource,
    private readonly onEvent: (item: unknown) => void,
    private readonly options: SubscriptionSupervisorOptions = {},
  ) {
    this.initialDelayMs = options.initialDelayMs ?? 100;
    this.maxDelayMs = options.maxDelayMs ?? 10_000;
    if (!(this.initialDelayMs >= 0) || !(this.maxDelayMs >= this.initialDelayMs)) {
      throw new RangeError('need 0 ≤ initialDelayMs ≤ maxDelayMs');
    }
  }

  get isRunning(): boolean {
    return this.running !== null && !this.stopped;
  }

  /** Starts supervising; a second call does nothing, and so does a call after stop(). */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.run();
  }

  /** Cancels the current subscription and any pending resubscribe; no item is delivered after it resolves. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.wake();
    }
    await this.release(this.current, this.currentIterator);
    if (!this.running) return;
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([
      this.running,
      new Promise<void>((resolve) => { grace = setTimeout(resolve, STOP_GRACE_MS); }),
    ]);
    clearTimeout(grace);
  }

  private async run(): Promise<void> {
    let delay = this.initialDelayMs;
    let attempt = 0;
    while (!this.stopped) {
      let error: unknown = null;
      let received = false;
      const openedAt = Date.now();
      let subscription: SupervisedSubscription | null = null;
      let iterator: AsyncIterator<unknown> | null = null;
      try {
        // Ask again on every (re)subscribe: the checkpoint has moved on since the last time.
        const from = await this.checkpointSource();
        if (this.stopped) break;
        subscription = this.openSubscription(from);
        iterator = subscription[Symbol.asyncIterator]();
        this.current = subscription;
        this.currentIterator = iterator;
        if (this.stopped) break; // stop() ran while the factory was opening it
        for (;;) {
          const next = await iterator.next();
          if (next.done || this.stopped) break;
          received = true;
          this.deliver(next.value);
        }
      } catch (caught) {
        error = caught;
      } finally {
        this.current = null;
        this.currentIterator = null;
        await this.release(subscription, iterator);
      }
      if (this.stopped) break;

      // A subscription that delivered something, or that stayed up a while, was healthy: start over small.
      if (received || Date.now() - openedAt >= this.maxDelayMs) {
        delay = this.initialDelayMs;
        attempt = 0;
      }
      attempt++;
      try {
        this.options.onDrop?.({ error, delayMs: delay, attempt });
      } catch {
        // a logging hook must not stop the supervisor
      }
      await this.sleep(delay);
      delay = Math.min(delay * 2, this.maxDelayMs);
    }
  }

  private deliver(item: unknown): void {
    try {
      this.onEvent(item);
    } catch (error) {
      try {
        this.options.onError?.(error);
      } catch {
        // ignore
      }
    }
  }

  /** Cancels a subscription; never throws and never waits on an iterator that is stuck. */
  private async release(subscription: SupervisedSubscription | null, iterator: AsyncIterator<unknown> | null): Promise<void> {
    if (!subscription || this.released.has(subscription)) return;
    this.released.add(subscription);
    if (iterator?.return) {
      try {
        // An async generator that is busy queues return() until its next yield: do not wait for it.
        void Promise.resolve(iterator.return()).catch(() => undefined);
      } catch {
        // ignore
      }
    }
    if (subscription.unsubscribe) {
      try {
        await subscription.unsubscribe();
      } catch {
        // already gone
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.sleeping = null;
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleeping = { timer, wake };
    });
  }
}
