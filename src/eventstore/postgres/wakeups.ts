/**
 * Cross-process wake-ups on real Postgres. Appends do not NOTIFY inside their own statement: NOTIFY takes
 * a cluster-wide lock at commit and would serialise concurrent appends. Instead each process sends at most
 * one NOTIFY per short window after it appended, from outside the append, and LISTENs on a dedicated
 * connection that reconnects with backoff when it drops. Consumers also poll, so a lost notice only delays.
 *
 * A process that is alone on the channel sends nothing: each NOTIFY is a round trip that nobody hears (one
 * process, the embedded default and many deployments). Each listener says `hello` on the channel once it listens,
 * and whoever hears it answers `here`, both on the listening connection (a failure there is a broken connection: a
 * new one says hello again); hearing any notice from another process (a hello, an answer, an append's) means
 * another process listens, and from then on this one notifies as before, for good. The answer is itself a notice,
 * so what was appended before the newcomer was heard still wakes it; the newcomer notifies for a while after its
 * hello whatever it heard (ANSWER_WAIT_MS), so what it appends before the answers arrive wakes the others. A process
 * whose own listener is not connected (starting, reconnecting, or a store that never listens) cannot know, and
 * notifies. A listener of an older release says no hello: it is heard of at its first append, and polls until then.
 */
import pg from 'pg';

const NOTIFY_WINDOW_MS = 5;
const MAX_RECONNECT_DELAY_MS = 10_000;
/** After saying hello, how long (ms) this process notifies before it takes silence to mean it is alone. */
const ANSWER_WAIT_MS = 2_000;

export class PostgresWakeups {
  private listener: pg.Client | null = null;
  private notifier: pg.Client | null = null;
  private notifyTimer: NodeJS.Timeout | null = null;
  /** One NOTIFY at a time on the notifier connection; appends while it is in flight ask for one more after it. */
  private sending: Promise<void> | null = null;
  private notifyAgain = false;
  private reconnectDelay = 100;
  /** Whether this process's LISTEN is established (it then hears other processes' hellos). */
  private listening = false;
  /** Whether another process was heard on the channel: then appends notify. */
  private othersListen = false;
  /** Until when (ms since the epoch) after this process's hello its appends notify, answered or not. */
  private aloneUnlessHeardBy = 0;
  private started = false;
  private stopped = false;

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    private readonly onWake: () => void,
  ) {}

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.listen();
  }

  notifySoon(): void {
    if (this.listening && !this.othersListen && Date.now() >= this.aloneUnlessHeardBy) return;
    if (this.sending) {
      this.notifyAgain = true;
      return;
    }
    if (this.notifyTimer || this.stopped) return;
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      this.sending = this.sendNotify().finally(() => {
        this.sending = null;
        if (this.notifyAgain) {
          this.notifyAgain = false;
          this.notifySoon();
        }
      });
    }, NOTIFY_WINDOW_MS);
    this.notifyTimer.unref();
  }

  private async sendNotify(): Promise<void> {
    if (this.stopped) return;
    try {
      if (!this.notifier) {
        const client = new pg.Client({ connectionString: this.connectionString });
        client.on('error', () => {
          if (this.notifier === client) this.notifier = null;
          client.end().catch(() => undefined);
        });
        await client.connect();
        if (this.stopped) {
          await client.end();
          return;
        }
        this.notifier = client;
      }
      await this.notifier.query('SELECT pg_notify($1, \'\')', [this.channel]);
    } catch {
      this.notifier?.end().catch(() => undefined);
      this.notifier = null;
    }
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    // Keepalive: a connection dead without a word (a half-open socket) would leave this process deaf, and, alone
    // as far as it knows, silent too.
    const client = new pg.Client({ connectionString: this.connectionString, keepAlive: true });
    const pid = () => (client as unknown as { processID: number | null }).processID;
    let retried = false;
    // Once per connection, whoever sees it fail first (its error event, a query of it).
    const retry = () => {
      if (retried) return;
      retried = true;
      if (this.listener === client) {
        this.listener = null;
        this.listening = false;
      }
      client.end().catch(() => undefined);
      if (this.stopped) return;
      const delay = this.reconnectDelay;
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, MAX_RECONNECT_DELAY_MS);
      setTimeout(() => void this.listen(), delay).unref();
    };
    client.on('error', retry);
    client.on('notification', (message) => {
      // Our own NOTIFYs come back too (the notifier's, and this connection's hello and answers); this process
      // already woke its consumers, with the event types.
      if (message.processId === pid()) return;
      if (this.notifier && message.processId === (this.notifier as unknown as { processID: number }).processID) return;
      this.othersListen = true;
      // The answer goes on this connection: if it cannot be sent, the connection is broken and a new one says hello.
      if (message.payload === 'hello') client.query('SELECT pg_notify($1, $2)', [this.channel, 'here']).catch(retry);
      this.onWake();
    });
    try {
      await client.connect();
      if (this.stopped) {
        await client.end();
        return;
      }
      await client.query(`LISTEN "${this.channel.replace(/"/g, '""')}"`);
      this.listener = client;
      this.reconnectDelay = 100;
      await client.query('SELECT pg_notify($1, $2)', [this.channel, 'hello']);
      // Answers take a moment: until then this process may not be alone, and its appends notify.
      this.aloneUnlessHeardBy = Date.now() + ANSWER_WAIT_MS;
      this.listening = true;
      this.onWake(); // anything appended while we were not listening
    } catch {
      retry();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    await this.sending;
    await Promise.all([this.listener?.end(), this.notifier?.end()].map((p) => p?.catch(() => undefined)));
    this.listener = null;
    this.notifier = null;
  }
}
