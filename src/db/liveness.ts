/**
 * This process's liveness, as other processes on the same Postgres can see it: a session-level advisory lock held
 * on a connection of its own. The lock goes the moment the process dies (its connection closes with it, kill -9
 * included), so another process can tell at once that work this one had claimed was abandoned (an Idempotency-Key
 * in flight), without waiting for a lease to run out. A lost connection is opened again and the lock taken again.
 */
import pg from 'pg';

/** The first key of every liveness lock (ASCII "LGLV"): the second is each process's own. */
export const LIVENESS_LOCK_CLASS = 0x4c474c56 & 0x7fffffff;
const MAX_RECONNECT_DELAY_MS = 5_000;
/** Keys tried before giving up on one connection (another process may hold a key drawn at random). */
const MAX_KEY_DRAWS = 8;

export class ProcessLiveness {
  /** The lock this process holds now: null before it is taken, and while its connection is lost. */
  key: number | null = null;
  private client: pg.Client | null = null;
  private first: Promise<void> | null = null;
  private stopped = false;
  private reconnectDelay = 100;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly connectionString: string) {}

  /** Takes the lock; resolves once the first try has ended, held or not (it is tried again in the background). */
  start(): Promise<void> {
    this.first ??= this.stopped ? Promise.resolve() : this.connect();
    return this.first;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    const retry = () => {
      if (this.client === client) {
        this.client = null;
        this.key = null;
      }
      client.end().catch(() => undefined); // the connection is gone already
      if (this.stopped || this.timer) return;
      const delay = this.reconnectDelay;
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, MAX_RECONNECT_DELAY_MS);
      this.timer = setTimeout(() => { this.timer = null; void this.connect(); }, delay);
      this.timer.unref();
    };
    client.on('error', retry);
    try {
      await client.connect();
      for (let draw = 0; draw < MAX_KEY_DRAWS && !this.stopped; draw++) {
        const key = 1 + Math.floor(Math.random() * 0x7ffffffe);
        const { rows } = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS taken', [LIVENESS_LOCK_CLASS, key]);
        if (rows[0]?.taken) {
          this.client = client;
          this.key = key;
          this.reconnectDelay = 100;
          if (this.stopped) await this.stop();
          return;
        }
      }
      throw new Error('no free liveness lock key');
    } catch {
      retry();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    this.key = null;
    await client?.end().catch(() => undefined); // ending it releases the lock, which is what stopping means
  }
}
