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
 * At the head, and through a backlog all runners share (a restart after a while, a rebuild of every projector): one
 * reader for the whole process (`next`). What comes after the last position read is read once, whoever asks, into a
 * window every runner reading from it takes its batches from; the window keeps what one of them has not passed
 * yet (up to TAIL_EVENTS), and a runner that needs more while it is full waits a while for the slowest to move on,
 * so a backlog is read from the database once, not once per runner. A runner the others waited for long enough,
 * one that backs off after a failure, and one behind the window (a version rebuilding from zero while the others
 * serve) read the store themselves, through the shared pages above, until they reach the window; a runner further
 * on than everything the window holds starts it again there. A runner that is done with the window is caught up
 * once a read that started after its question came back to the feed's end. A read starts when an append of this
 * process (or, on Postgres, a notification from another) says there is something new, when a runner asks at the
 * window's end, and otherwise at most every idle poll (a notification lost between processes only delays); reads
 * never overlap, and a read asked for while one is in flight follows it. The subscribers (the runners) hear when
 * the window grows.
 *
 * An event committed while an older transaction still runs (another append, a projector's batch) is held back
 * from the feed until that transaction ends. The store tells (`readTail`), and names the server process running it
 * when it can. Most such transactions are this process's own: when the one named runs on a connection of this process
 * that is in use, the reader reads again when that connection is given back (at once if it was while the read was
 * out), and not before, since no other transaction's end can show the events; under load one connection or another
 * is given back every fraction of a millisecond, and reading again at each of them found the events still held in
 * most reads. Any other hold (another process's transaction, one not named, one on a connection this process does
 * not know as its own or that is not in use) ends when a connection taken before the read is given back, when
 * another process says it appended, or after a short wait that doubles while the hold lasts. Until then nothing
 * else starts a read, this process's appends included (theirs are held too). A request waiting for its write to
 * show in the read models never waits for an idle poll.
 *
 * Runners share the event objects: projectors and reactors treat events as read-only.
 */
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.ts';
import { comparePositions, formatPosition, type Position } from '../eventstore/position.ts';

/** Full pages kept for runners behind the fastest (each at most a batch of events: 1,000 by default). */
export const MAX_SHARED_PAGES = 16;
/**
 * Events of the window: it keeps what a runner reading from it has not passed yet, up to this many; a runner at
 * its end that needs more while it is full waits (BACKPRESSURE_MS at most) for the slowest to move on, so that
 * a backlog (a rebuild, a restart) is read from the database once for every runner, not once per runner. Past
 * that wait the slowest are left behind: they read the store themselves until they catch up with the window.
 */
const TAIL_EVENTS = 20_000;
const BACKPRESSURE_MS = 5_000;
/** Events per read of the head. */
const TAIL_READ_EVENTS = 5_000;
/** Waits before reading again while events are held behind an older transaction: the first, and the longest. */
const HELD_FIRST_WAIT_MS = 1;
const HELD_MAX_WAIT_MS = 50;
/**
 * The wait before reading again while a transaction on a connection of this process in use holds the feed: a safety
 * only, for a connection that runs several transactions before it is given back.
 */
const HELD_BY_CONNECTION_WAIT_MS = 50;

export type FeedSource = Pick<EventStore, 'readAll' | 'onAppended'> & Partial<Pick<EventStore, 'readTail'>>;

/**
 * Where the feed learns of this process's connections (pg.Pool's events): when one is taken ('acquire'), when one
 * is given back ('release': a transaction may have ended), and when one is closed ('remove'). A connection names
 * its server process (`processID`) once connected.
 */
export interface ReleaseSignal {
  on(event: 'acquire', listener: (client: object) => void): unknown;
  on(event: 'remove', listener: (client: object) => void): unknown;
  on(event: 'release', listener: (error: unknown, client: object) => void): unknown;
  off(event: 'acquire', listener: (client: object) => void): unknown;
  off(event: 'remove', listener: (client: object) => void): unknown;
  off(event: 'release', listener: (error: unknown, client: object) => void): unknown;
}

/** A pooled connection as the feed sees it: its server process, once connected (pg.Client's `processID`). */
type PooledConnection = { processID?: number | null };

interface SharedFeedOptions {
  maxPages?: number;
  /** Bounds of the window (tests make them small): its events, a read's events, and the wait for the slowest reader. */
  windowEvents?: number;
  readEvents?: number;
  backpressureMs?: number;
  /** How often the head is read when nothing says there is something new (ms). */
  idlePollMs?: number;
  releases?: ReleaseSignal;
  /** The first wait before reading again while events are held, and the longest (ms; tests make them long). */
  heldWaitMs?: { first: number; max: number };
}

/** A batch for a runner at the head: events after its position, and whether it has seen all there is. */
interface FeedBatch {
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
  /** The generation the read in flight started at. */
  private readingFrom = -1;
  private readAgain = false;
  /**
   * The furthest position this process's appends reached while the read in flight was out: that read may show them
   * already (its snapshot taken after their commit), and then none follows for them.
   */
  private appendedDuringRead: Position | null = null;
  /** Runners waiting for a read that started after their question. */
  private waiting: Array<{ generation: number; done(error?: unknown): void }> = [];
  private readonly listeners = new Set<() => void>();
  private unsubscribe: (() => void) | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private lastReadAt = 0;
  private heldWait = 0;
  private heldTimer: NodeJS.Timeout | null = null;
  /**
   * While set, the last read found events held behind a transaction older than them: one running when the read
   * began, of this process (on a connection taken by then: at most this count of takings) or of another. Until
   * such a connection is given back, the held wait passes, or another process says it appended, a read would find
   * them held again, so none starts; what asks meanwhile is answered by the read that follows.
   */
  private heldBehind: number | null = null;
  /**
   * While the hold waits for a transaction on a connection of this process in use: that connection's server process,
   * whose return alone ends the hold (with the safety wait). Null: any other hold.
   */
  private holder: number | null = null;
  /** Connections taken so far (this process's pool), and the count at which each connection in use was taken. */
  private taken = 0;
  private readonly takenAt = new WeakMap<object, number>();
  /** This process's connections by server process, and those of them in use. */
  private readonly connections = new Map<number, PooledConnection>();
  private readonly inUse = new Set<PooledConnection>();
  /** The takings counted when the read in flight began (null: none in flight). */
  private readFrom: number | null = null;
  /** Whether, while the read in flight was out, a connection taken before it was given back or another process appended. */
  private movedDuringRead = false;
  /** The server processes whose connections were given back while the read in flight was out. */
  private readonly releasedDuringRead = new Set<number>();
  private readonly onTaken = (client: object & PooledConnection) => {
    this.takenAt.set(client, ++this.taken);
    this.inUse.add(client);
    if (client.processID) this.connections.set(client.processID, client);
  };
  private readonly onReleased = (_error: unknown, client: object & PooledConnection) => {
    this.inUse.delete(client);
    // A connection whose taking was not seen (taken before the feed listened) counts as taken before.
    const at = this.takenAt.get(client) ?? 0;
    if (this.readFrom !== null) {
      if (at <= this.readFrom) this.movedDuringRead = true;
      if (client.processID) this.releasedDuringRead.add(client.processID);
    }
    if (this.heldBehind === null) return;
    if (this.holder !== null ? client.processID === this.holder : at <= this.heldBehind) this.endHold();
  };
  private readonly onRemoved = (client: object & PooledConnection) => {
    this.inUse.delete(client);
    if (!client.processID || this.connections.get(client.processID) !== client) return;
    this.connections.delete(client.processID);
    if (this.heldBehind !== null && this.holder === client.processID) this.endHold();
  };
  private stopped = false;
  /** The runners reading from the window, and where each is; `behind` once left behind (they read the store). */
  private readonly readers = new Map<object, { after: Position | null; behind: boolean }>();
  /** Runners at the window's full end, waiting for the slowest reader to move on. */
  private waitingForRoom: Array<() => void> = [];
  /** Bumped when the window starts again further on: a read started before lands in no window. */
  private epoch = 0;

  constructor(private readonly store: FeedSource, options: SharedFeedOptions | number = {}) {
    const settings = typeof options === 'number' ? { maxPages: options } : options;
    this.maxPages = settings.maxPages ?? MAX_SHARED_PAGES;
    this.idlePollMs = settings.idlePollMs ?? 500;
    this.releases = settings.releases ?? null;
    this.heldWaitMs = settings.heldWaitMs ?? { first: HELD_FIRST_WAIT_MS, max: HELD_MAX_WAIT_MS };
    this.windowEvents = settings.windowEvents ?? TAIL_EVENTS;
    this.readEvents = settings.readEvents ?? TAIL_READ_EVENTS;
    this.backpressureMs = settings.backpressureMs ?? BACKPRESSURE_MS;
  }

  private readonly windowEvents: number;
  private readonly readEvents: number;
  private readonly backpressureMs: number;

  private readonly releases: ReleaseSignal | null;
  private readonly heldWaitMs: { first: number; max: number };

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
      // This process's appends tell their types; another process's notification tells nothing: its transaction
      // may be the one the feed's events are held behind.
      this.unsubscribe = this.store.onAppended((types, position) => {
        if (types && position) this.appended(position);
        else this.nudge(types ? 'local' : 'remote');
      });
      this.releases?.on('acquire', this.onTaken);
      this.releases?.on('release', this.onReleased);
      this.releases?.on('remove', this.onRemoved);
      this.pollTimer = setInterval(() => {
        if (performance.now() - this.lastReadAt >= this.idlePollMs) this.nudge('poll');
      }, this.idlePollMs);
      this.pollTimer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Reads the head now: something new may be there. */
  nudge(why: 'local' | 'remote' | 'poll' | 'nudge' = 'nudge'): void {
    this.generation++;
    if (why !== 'local' && this.reading) this.movedDuringRead = true;
    // This process's append while the feed is held: its transaction began after the read that found the hold
    // (a transaction running then is on a connection taken before, whose return ends the hold), so what it appended
    // is held too. Another process's append cannot end a hold by a transaction on a connection of this process either.
    if (this.heldBehind !== null && (why === 'local' || (why === 'remote' && this.holder !== null))) return;
    if (this.heldBehind !== null) this.endHold();
    else this.readHead();
  }

  /**
   * This process appended up to `position`. Nothing to read when the window shows it already; while a read is out,
   * whether one follows is decided when it is back: under load most appends end while a read is out, and most of them
   * before its snapshot, so a read after each found nothing new about a third of the time.
   */
  private appended(position: Position): void {
    if (this.shows(position)) return;
    if (this.reading && this.heldBehind === null) {
      if (this.appendedDuringRead === null || comparePositions(position, this.appendedDuringRead) > 0) this.appendedDuringRead = position;
      return;
    }
    this.nudge('local');
  }

  /** Whether the window reaches `position`: read from the head up to it, or begun past it. */
  private shows(position: Position): boolean {
    const end = this.window.length > 0 ? this.window[this.window.length - 1]!.position : this.windowFrom;
    return end !== undefined && end !== null && comparePositions(position, end) <= 0;
  }

  /**
   * The events after `after` (at most `limit`), for a runner at the head; `caughtUp` once it has seen everything a
   * read started after this call found. A runner behind the window reads the store (`readAll`).
   */
  async next(after: Position | null, limit: number, reader?: object): Promise<FeedBatch> {
    const asked = this.generation;
    for (;;) {
      if (this.windowFrom === undefined) this.windowFrom = after;
      if (this.windowFrom !== null && (after === null || comparePositions(after, this.windowFrom) < 0)) {
        const page = await this.readAll({ after, limit });
        // Behind the window by less than a batch (a runner that stored its checkpoint a moment before the others,
        // or one that caught up): the window takes the gap in, and the runner reads with the others from now on.
        if (this.windowFrom !== null && this.joins(page, after)) continue;
        if (reader) this.readers.set(reader, { after, behind: true });
        return { events: page, caughtUp: false };
      }
      const end = this.window.length > 0 ? this.window[this.window.length - 1]!.position : this.windowFrom;
      if (after !== null && (end === null || comparePositions(after, end) > 0)) {
        // Further on than all the window holds (a runner that was ahead when this process started, or the live ones
        // while another rebuilds from zero): the window starts again there; those it held read the store.
        this.startAt(after);
      }
      if (reader) this.moved(reader, after);
      const from = this.indexAfter(after);
      if (from < this.window.length) return { events: this.window.slice(from, from + limit), caughtUp: false };
      if (this.atEnd && this.freshAt >= asked) return { events: [], caughtUp: true };
      if (!this.atEnd && this.window.length >= this.windowEvents && !this.trim()) {
        // More to read, and no room until the slowest reader moves on: wait for it, a while.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, this.backpressureMs);
          const waiting = this.waitingForRoom;
          function done() {
            clearTimeout(timer);
            const at = waiting.indexOf(done);
            if (at >= 0) waiting.splice(at, 1);
            resolve();
          }
          waiting.push(done);
        });
        if (this.window.length >= this.windowEvents && !this.trim()) this.leaveBehind();
        continue;
      }
      await new Promise<void>((resolve, reject) => {
        this.waiting.push({ generation: asked, done: (error) => (error === undefined ? resolve() : reject(error)) });
        this.readHead(asked);
      });
    }
  }

  /** When `page` (read after `after`, behind the window) reaches the window's start, prepends it to the window. */
  private joins(page: readonly RecordedEvent[], after: Position | null): boolean {
    const from = this.windowFrom!;
    const at = page.findIndex((event) => comparePositions(event.position, from) === 0);
    if (at < 0) return false;
    this.window.unshift(...page.slice(0, at + 1));
    this.windowFrom = after;
    return true;
  }

  private startAt(after: Position): void {
    this.epoch++;
    this.window = [];
    this.windowFrom = after;
    this.atEnd = false;
    for (const state of this.readers.values()) {
      if (state.after === null || comparePositions(state.after, after) < 0) state.behind = true;
    }
    this.roomMade();
  }

  /** A runner stops reading from the window for now (it stops, lost its lease, or backs off after a failure). */
  leave(reader: object): void {
    if (!this.readers.delete(reader)) return;
    if (this.trim()) this.roomMade();
  }

  private moved(reader: object, after: Position | null): void {
    const known = this.readers.get(reader);
    this.readers.set(reader, { after, behind: false });
    // The slowest reader moving on may make room.
    if (this.waitingForRoom.length > 0 && (!known || known.behind || known.after !== after) && this.trim()) this.roomMade();
  }

  private roomMade(): void {
    for (const done of this.waitingForRoom.splice(0)) done();
  }

  /**
   * Drops the window's events every reader in it has passed, when it is over its bound; true when that made room.
   */
  private trim(): boolean {
    if (this.window.length < this.windowEvents) return true;
    let slowest = this.window.length;
    for (const { after, behind } of this.readers.values()) {
      if (behind) continue;
      slowest = Math.min(slowest, this.indexAfter(after));
    }
    if (slowest === 0) return false;
    const dropped = this.window.splice(0, slowest);
    this.windowFrom = dropped[dropped.length - 1]!.position;
    return this.window.length < this.windowEvents;
  }

  /** The slowest readers, waited for long enough, read the store from now on until they reach the window. */
  private leaveBehind(): void {
    const keep = Math.floor(this.windowEvents / 2);
    const dropped = this.window.splice(0, this.window.length - keep);
    if (dropped.length > 0) this.windowFrom = dropped[dropped.length - 1]!.position;
    for (const state of this.readers.values()) {
      if (this.windowFrom && (state.after === null || comparePositions(state.after, this.windowFrom) < 0)) state.behind = true;
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

  /** Reads the head unless a read that started at `generation` or later is in flight (then that one serves). */
  private readHead(generation = this.generation): void {
    if (this.stopped && this.waiting.length === 0) return;
    if (this.heldBehind !== null && !this.stopped) return;
    if (this.reading) {
      if (this.readingFrom < generation) this.readAgain = true;
      return;
    }
    this.reading = this.readLoop().finally(() => { this.reading = null; });
  }

  private async readLoop(): Promise<void> {
    do {
      this.readAgain = false;
      const startedAt = this.generation;
      this.readingFrom = startedAt;
      const epoch = this.epoch;
      this.lastReadAt = performance.now();
      const after = this.window.length > 0 ? this.window[this.window.length - 1]!.position : this.windowFrom ?? null;
      let events: RecordedEvent[];
      let held: boolean;
      let holder: number | null | undefined;
      this.readFrom = this.taken;
      this.movedDuringRead = false;
      this.releasedDuringRead.clear();
      try {
        ({ events, held, holder } = this.store.readTail
          ? await this.store.readTail({ after, limit: this.readEvents })
          : { events: await this.store.readAll({ after, limit: this.readEvents }), held: false });
      } catch (error) {
        this.readFrom = null;
        // The runners asking see the error (and back off); the next sign of something new reads again.
        for (const waiter of this.waiting.splice(0)) waiter.done(error);
        return;
      }
      // Connections taken while the read was out may hold what it found held too (taken before its snapshot).
      const takenBefore = this.taken;
      this.readFrom = null;
      if (epoch !== this.epoch) {
        // The window started again further on while this read was out: read again from there.
        this.readAgain = true;
        continue;
      }
      if (events.length > 0) {
        this.window.push(...events);
        // At the head (no backlog), the window keeps its bound whoever lags: a reader left behind reads the store.
        if (this.window.length > this.windowEvents && !this.trim() && this.window.length > 2 * this.windowEvents) this.leaveBehind();
      }
      // This process's appends that ended while the read was out, and that it does not show, are read for now, as an
      // append at any other time is; this read then tells no runner it is caught up.
      const appended = this.appendedDuringRead;
      this.appendedDuringRead = null;
      const unshown = appended !== null && !this.shows(appended);
      if (unshown) {
        this.generation++;
        this.readAgain = true;
      }
      const complete = events.length < this.readEvents;
      this.atEnd = complete;
      if (complete && !unshown) this.freshAt = Math.max(this.freshAt, startedAt);
      // Runners waiting at the window's end look again: at what was added, or (a complete read) to learn they
      // are caught up. A full page reads no further by itself: the next page is read when a runner comes for it.
      const ready = this.waiting.filter((w) => events.length > 0 || (complete && w.generation <= this.freshAt));
      this.waiting = this.waiting.filter((w) => !ready.includes(w));
      for (const waiter of ready) waiter.done();
      if (events.length > 0) for (const listener of [...this.listeners]) listener();
      if (complete) this.whileHeld(held, takenBefore, holder ?? null);
    } while (this.heldBehind === null && (this.readAgain || this.waiting.length > 0));
  }

  /**
   * While events are held behind an older transaction: read again at once if the hold may have ended while the read
   * was out. Otherwise, held by a transaction on a connection of this process in use (`holder`, the server process
   * the store named): when that connection is given back, or after a safety wait. Any other hold: when a connection
   * taken before the read ended (at most `takenBefore`) is given back here, when another process says it appended,
   * or after a short wait, doubling while the hold lasts.
   */
  private whileHeld(held: boolean, takenBefore: number, holder: number | null): void {
    if (!held || this.stopped) {
      this.heldWait = 0;
      return;
    }
    const connection = holder === null ? undefined : this.connections.get(holder);
    // A connection of this process not in use (given back inside its transaction, or before its COMMIT ended) says
    // nothing by its return: that hold is treated as one not named.
    const byConnection = connection !== undefined && this.inUse.has(connection);
    if (byConnection ? this.releasedDuringRead.has(holder!) : this.movedDuringRead) {
      this.readAgain = true;
      return;
    }
    this.heldBehind = takenBefore;
    this.holder = byConnection ? holder : null;
    if (this.heldTimer) clearTimeout(this.heldTimer);
    let wait = HELD_BY_CONNECTION_WAIT_MS;
    if (!byConnection) {
      this.heldWait = wait = this.heldWait === 0 ? this.heldWaitMs.first : Math.min(this.heldWait * 2, this.heldWaitMs.max);
    }
    // Never shorter than the first wait, which tests lengthen to keep every timer out.
    this.heldTimer = setTimeout(() => this.endHold(), Math.max(wait, this.heldWaitMs.first));
    this.heldTimer.unref();
  }

  private endHold(): void {
    if (this.heldTimer) clearTimeout(this.heldTimer);
    this.heldTimer = null;
    this.heldBehind = null;
    this.holder = null;
    this.readHead();
  }

  private stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    if (this.heldTimer) clearTimeout(this.heldTimer);
    this.heldTimer = null;
    this.heldBehind = null;
    this.holder = null;
    this.releases?.off('acquire', this.onTaken);
    this.releases?.off('release', this.onReleased);
    this.releases?.off('remove', this.onRemoved);
    this.connections.clear();
    this.inUse.clear();
    this.roomMade();
  }
}
