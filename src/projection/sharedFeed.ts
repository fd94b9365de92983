/**
 * The feed as the runners of one process read it.
 *
 * Behind the head (a rebuild, a runner catching up): a page read by one runner is handed to the others that ask
 * for the same page (same position, same size) while it is being read or soon after, so a rebuild of every
 * projector reads and decodes the log about once instead of once per runner. Safe because a page of the feed
 * never changes once it is full: the feed shows an event only when every transaction older than its own has
 * ended, so nothing can later appear before an event already shown. A page that came back short (the feed's
 * current end) is never kept, and a reader that joined someone else's read of it reads again itself: that read
 * may have started before the append that woke this reader.
 *
 * At the head: one reader for the whole process (`next`). The events after the last position read are read
 * once, whoever asks, into a window of the latest events (at most TAIL_EVENTS) that every runner at the head
 * takes its batches from; a runner that is done with the window is caught up once a read that started after its
 * question has come back. A read starts when an append of this process (or, on Postgres, a notification from
 * another) says there is something new, when a runner asks at the end of the window, and otherwise at most
 * every idle poll (a notification lost between processes only delays); reads never overlap, and a read asked for
 * while one is in flight follows it. The subscribers (the runners) hear when the window grows.
 *
 * An event committed while an older transaction still runs (another append, a projector's batch) is held back
 * from the feed until that transaction ends. The store tells (`readTail`), and the reader reads again as soon as
 * a connection of this process is released (most such transactions are this process's own), or after a short
 * wait that doubles while the hold lasts (a transaction of another process): a request waiting for its write to
 * show in the read models never waits for an idle poll.
 *
 * Runners share the event objects: projectors and reactors treat events as read-only.
 */
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.ts';
import { comparePositions, formatPosition, type Position } from '../eventstore/position.ts';

/** Full pages kept for runners behind the fastest (each at most a batch of events: 1,000 by default). */
export const MAX_SHARED_PAGES = 16;
/** Events of the window at the head of the feed (the oldest leave first). */
const TAIL_EVENTS = 20_000;
/** Events per read of the head. */
const TAIL_READ_EVENTS = 5_000;
/** Waits before reading again while events are held behind an older transaction: the first, and the longest. */
const HELD_FIRST_WAIT_MS = 1;
const HELD_MAX_WAIT_MS = 50;

export type FeedSource = Pick<EventStore, 'readAll' | 'onAppended'> & Partial<Pick<EventStore, 'readTail'>>;

/** Where the feed learns that a connection was given back (pg.Pool's 'release'): a transaction may have ended. */
export interface ReleaseSignal {
  on(event: 'release', listener: () => void): unknown;
  off(event: 'release', listener: () => void): unknown;
}

export interface SharedFeedOptions {
  maxPages?: number;
  /** How often the head is read when nothing says there is something new (ms). */
  idlePollMs?: number;
  releases?: ReleaseSignal;
}

/** A batch for a runner at the head: events after its position, and whether it has seen all there is. */
export interface FeedBatch {
  events: RecordedEvent[];
  caughtUp: boolean;
}

export class SharedFeed {
  /** By key, in insertion order: the oldest first, so eviction drops the page read longest ago. */
  private readonly pages = new Map<string, Promise<RecordedEvent[]>>();
  /** The pages of `pages` that are full and read. */
  private readonly settled = new Set<Promise<RecordedEvent[]>>();
  private readonly maxPages: number;
  private readonly idlePollMs: number;

  /** The window: every event after `windowFrom` up to the last one read, in feed order. Undefined: not started. */
  private window: RecordedEvent[] = [];
  private windowFrom: Position | null | undefined = undefined;
  /** Bumped by every sign of something new; a read started at generation g has seen everything before it. */
  private generation = 0;
  /** The generation at which the latest read of the head that reached its end started. */
  private freshAt = -1;
  /** Whether the latest read of the head reached the feed's end (a full page says there may be more). */
  private atEnd = false;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  /** Runners waiting for a read that started after their question. */
  private waiting: Array<{ generation: number; done(error?: unknown): void }> = [];
  private readonly listeners = new Set<() => void>();
  private unsubscribe: (() => void) | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private lastReadAt = 0;
  private heldWait = 0;
  private heldTimer: NodeJS.Timeout | null = null;
  private heldListener: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly store: FeedSource, options: SharedFeedOptions | number = {}) {
    const settings = typeof options === 'number' ? { maxPages: options } : options;
    this.maxPages = settings.maxPages ?? MAX_SHARED_PAGES;
    this.idlePollMs = settings.idlePollMs ?? 500;
    this.releases = settings.releases ?? null;
  }

  private readonly releases: ReleaseSignal | null;

  onAppended(listener: () => void): () => void {
    return this.store.onAppended(listener);
  }

  // ------------------------------------------------------------------------------------------ behind the head

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const key = `${options.after ? formatPosition(options.after) : 'start'}/${options.limit}`;
    const shared = this.pages.get(key);
    if (shared) {
      const events = await shared;
      return events.length < options.limit ? this.store.readAll(options) : events;
    }
    const reading = this.store.readAll(options);
    this.pages.set(key, reading);
    let events: RecordedEvent[];
    try {
      events = await reading;
    } catch (error) {
      if (this.pages.get(key) === reading) this.pages.delete(key);
      throw error;
    }
    if (events.length < options.limit) {
      if (this.pages.get(key) === reading) this.pages.delete(key);
    } else {
      this.settled.add(reading);
      this.evict();
    }
    return events;
  }

  /** Drops the oldest full pages beyond the bound; reads still in flight stay (their readers are waiting). */
  private evict(): void {
    let excess = this.settled.size - this.maxPages;
    for (const [key, page] of this.pages) {
      if (excess <= 0) break;
      if (!this.settled.has(page)) continue;
      this.pages.delete(key);
      this.settled.delete(page);
      excess--;
    }
  }

  // ------------------------------------------------------------------------------------------ at the head

  /** Hears when the window grows (and when it was read without growing after a nudge). Returns an unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.unsubscribe) {
      this.stopped = false;
      this.unsubscribe = this.store.onAppended(() => this.nudge());
      this.pollTimer = setInterval(() => {
        if (performance.now() - this.lastReadAt >= this.idlePollMs) this.nudge();
      }, this.idlePollMs);
      this.pollTimer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Reads the head now: something new may be there. */
  nudge(): void {
    this.generation++;
    this.readHead();
  }

  /**
   * The events after `after` (at most `limit`), for a runner at the head; `caughtUp` once it has seen everything a
   * read started after this call found. A runner behind the window reads the store (`readAll`).
   */
  async next(after: Position | null, limit: number): Promise<FeedBatch> {
    const asked = this.generation;
    for (;;) {
      if (this.windowFrom === undefined) this.windowFrom = after;
      if (this.windowFrom !== null && (after === null || comparePositions(after, this.windowFrom) < 0)) {
        return { events: await this.readAll({ after, limit }), caughtUp: false };
      }
      const from = this.indexAfter(after);
      if (from < this.window.length) return { events: this.window.slice(from, from + limit), caughtUp: false };
      if (this.atEnd && this.freshAt >= asked) return { events: [], caughtUp: true };
      await new Promise<void>((resolve, reject) => {
        this.waiting.push({ generation: asked, done: (error) => (error === undefined ? resolve() : reject(error)) });
        this.readHead();
      });
    }
  }

  /** The index of the first event of the window after `after` (the window's length when there is none). */
  private indexAfter(after: Position | null): number {
    let low = 0;
    let high = this.window.length;
    if (after === null) return 0;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (comparePositions(this.window[middle]!.position, after) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private readHead(): void {
    if (this.stopped && this.waiting.length === 0) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = this.readLoop().finally(() => { this.reading = null; });
  }

  private async readLoop(): Promise<void> {
    do {
      this.readAgain = false;
      const startedAt = this.generation;
      this.lastReadAt = performance.now();
      const after = this.window.length > 0 ? this.window[this.window.length - 1]!.position : this.windowFrom ?? null;
      let events: RecordedEvent[];
      let held: boolean;
      try {
        ({ events, held } = this.store.readTail
          ? await this.store.readTail({ after, limit: TAIL_READ_EVENTS })
          : { events: await this.store.readAll({ after, limit: TAIL_READ_EVENTS }), held: false });
      } catch (error) {
        // The runners asking see the error (and back off); the next sign of something new reads again.
        for (const waiter of this.waiting.splice(0)) waiter.done(error);
        return;
      }
      if (events.length > 0) {
        this.window.push(...events);
        if (this.window.length > TAIL_EVENTS) {
          const dropped = this.window.splice(0, this.window.length - TAIL_EVENTS);
          this.windowFrom = dropped[dropped.length - 1]!.position;
        }
      }
      const complete = events.length < TAIL_READ_EVENTS;
      this.atEnd = complete;
      if (complete) this.freshAt = Math.max(this.freshAt, startedAt);
      // Runners waiting at the window's end look again: at what was added, or (a complete read) to learn they
      // are caught up. A full page reads no further by itself: the next page is read when a runner comes for it.
      const ready = this.waiting.filter((w) => events.length > 0 || (complete && w.generation <= this.freshAt));
      this.waiting = this.waiting.filter((w) => !ready.includes(w));
      for (const waiter of ready) waiter.done();
      if (events.length > 0) for (const listener of [...this.listeners]) listener();
      if (complete) this.whileHeld(held);
    } while (this.readAgain || this.waiting.length > 0);
  }

  /** While events are held behind an older transaction: read again when one ends here, or after a short wait. */
  private whileHeld(held: boolean): void {
    if (!held || this.stopped) {
      this.heldWait = 0;
      return;
    }
    if (this.heldTimer || this.heldListener) return;
    this.heldWait = this.heldWait === 0 ? HELD_FIRST_WAIT_MS : Math.min(this.heldWait * 2, HELD_MAX_WAIT_MS);
    const again = () => {
      if (this.heldTimer) clearTimeout(this.heldTimer);
      if (this.heldListener) this.releases?.off('release', this.heldListener);
      this.heldTimer = null;
      this.heldListener = null;
      this.readHead();
    };
    this.heldTimer = setTimeout(again, this.heldWait);
    this.heldTimer.unref();
    if (this.releases) {
      this.heldListener = again;
      this.releases.on('release', again);
    }
  }

  private stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    if (this.heldTimer) clearTimeout(this.heldTimer);
    this.heldTimer = null;
    if (this.heldListener) this.releases?.off('release', this.heldListener);
    this.heldListener = null;
  }
}
