/**
 * Work this process is doing, or did a moment ago, by key, so that a reactor seeing the same work's event waits for
 * it, or skips it, instead of doing it a second time.
 *
 * A process manager's steps run twice by design: once by the request that started them, once by the reactor that
 * sees the request's first event in the feed and finishes whatever a stopped process left undone (for a refund:
 * the account's hold, the parent's record of it, the child). Both are safe, since every step answers a repeat with
 * nothing, but the repeat is not free: it reads the streams again to find nothing to do (a refund: three round
 * trips more). When the request ran in this process and ended well, every step is recorded and the reactor has
 * nothing to finish; while it runs, the reactor waits for it. A request that failed, ran in another process, or
 * ended longer ago than this memory holds is finished by the reactor as before.
 */
import { setBounded } from '../domain/boundedMap.ts';

export class InFlight {
  private readonly running = new Map<string, Promise<unknown>>();
  /** Keys whose work ended well, oldest first, with when (ms since the epoch). */
  private readonly done = new Map<string, number>();

  constructor(private readonly memory: { entries: number; ms: number } = { entries: MAX_DONE_ENTRIES, ms: DONE_TTL_MS }) {}

  /** Runs `work` under `key`, and remembers (bounded) that it ended well. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const running = work();
    this.running.set(key, running);
    try {
      const result = await running;
      setBounded(this.done, this.memory.entries, key, Date.now());
      return result;
    } finally {
      if (this.running.get(key) === running) this.running.delete(key);
    }
  }

  /**
   * Whether work under `key` ended well in this process, lately (waiting for it first if it runs). False when it
   * did not run here, failed, or is forgotten: the caller does the work itself.
   */
  async doneByAnother(key: string): Promise<boolean> {
    const running = this.running.get(key);
    if (running) {
      try {
        await running;
        return true;
      } catch {
        return false;
      }
    }
    const at = this.done.get(key);
    return at !== undefined && Date.now() - at <= this.memory.ms;
  }
}

/**
 * Finished work remembered at most (entries; 100 to 150 bytes each, so a few megabytes), and how long a finished run
 * stands in for the reactor's (ms): past either, a reactor that reaches the work's event repeats it, which is safe,
 * and a reactor keeping up reaches it within seconds. An entry past its time is dropped when newer ones push it out.
 */
const MAX_DONE_ENTRIES = 20_000;
const DONE_TTL_MS = 10 * 60_000;
