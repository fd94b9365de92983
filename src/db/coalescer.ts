/**
 * Group commit for small, independent statements (an API key lookup, an idempotency claim): calls made in the
 * same turn of the event loop, or while a batch is in flight, go together in one batch. At low load every call
 * runs alone, a turn of the event loop later (no timer); under load a batch takes everything that queued
 * meanwhile (up to `maxBatch`), so the round trips per request fall as the load rises. On this kind of machine
 * a round trip costs more than the rows it carries.
 *
 * A call may also wait without asking for a batch (`lazy`): it goes with the next batch someone else's call sets
 * off, or when its caller says it is needed now (`sendWaiting`), whichever comes first; its caller must say so
 * in the end, or it waits for good.
 */
export interface CoalescerOptions {
  /** Most calls in one batch. */
  maxBatch?: number;
  /** Batches in flight at once; more overlap round trips, fewer make larger batches. */
  maxInFlight?: number;
}

interface Waiting<In, Out> {
  input: In;
  /** Waits for a batch someone else sets off (until `sendWaiting`). */
  lazy: boolean;
  resolve(output: Out): void;
  reject(error: unknown): void;
}

export class Coalescer<In, Out> {
  private readonly waiting: Waiting<In, Out>[] = [];
  /** The calls waiting that ask for a batch (not lazy). */
  private asking = 0;
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  /** `run` answers one output per input, in order; when it throws, every call of the batch rejects with it. */
  constructor(private readonly run: (inputs: In[]) => Promise<Out[]>, options: CoalescerOptions = {}) {
    this.maxBatch = Math.min(Math.max(options.maxBatch ?? 100, 1), 1000);
    this.maxInFlight = Math.min(Math.max(options.maxInFlight ?? 1, 1), 16);
  }

  private flushScheduled = false;

  submit(input: In, options: { lazy?: boolean } = {}): Promise<Out> {
    const lazy = options.lazy ?? false;
    return new Promise<Out>((resolve, reject) => {
      this.waiting.push({ input, lazy, resolve, reject });
      if (lazy) return;
      this.asking++;
      this.scheduleFlush();
    });
  }

  /** Every lazy call waiting asks for its batch now. */
  sendWaiting(): void {
    let woken = 0;
    for (const call of this.waiting) {
      if (!call.lazy) continue;
      call.lazy = false;
      woken++;
    }
    if (woken === 0) return;
    this.asking += woken;
    this.scheduleFlush();
  }

  /** After the I/O callbacks of this turn of the event loop, so the calls they make join the same batch. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.asking > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      for (const call of batch) if (!call.lazy) this.asking--;
      this.inFlight++;
      this.runBatch(batch).finally(() => {
        this.inFlight--;
        this.scheduleFlush();
      });
    }
  }

  private async runBatch(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const outputs = await this.run(batch.map((call) => call.input));
      if (outputs.length !== batch.length) throw new Error(`coalesced batch answered ${outputs.length} of ${batch.length} calls`);
      batch.forEach((call, i) => call.resolve(outputs[i]!));
    } catch (error) {
      for (const call of batch) call.reject(error);
    }
  }
}
