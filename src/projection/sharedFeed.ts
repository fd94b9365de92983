/**
 * The feed as the runners of one process read it: a page read by one runner is handed to the others that ask
 * for the same page (same position, same size) while it is being read or soon after, so a rebuild of every
 * projector reads and decodes the log about once instead of once per runner.
 *
 * Safe because a page of the feed never changes once it is full: the feed shows an event only when every
 * transaction older than its own has ended, so nothing can later appear before an event already shown. A page
 * that came back short (the feed's current end) is never kept, and a reader that joined someone else's read of
 * it reads again itself: that read may have started before the append that woke this reader. Runners share
 * the event objects: projectors and reactors treat events as read-only.
 */
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.ts';
import { formatPosition } from '../eventstore/position.ts';

/** Full pages kept for runners behind the fastest (each at most a batch of events: 1,000 by default). */
export const MAX_SHARED_PAGES = 16;

export type FeedSource = Pick<EventStore, 'readAll' | 'onAppended'>;

export class SharedFeed implements FeedSource {
  /** By key, in insertion order: the oldest first, so eviction drops the page read longest ago. */
  private readonly pages = new Map<string, Promise<RecordedEvent[]>>();
  /** The pages of `pages` that are full and read. */
  private readonly settled = new Set<Promise<RecordedEvent[]>>();

  constructor(private readonly store: FeedSource, private readonly maxPages = MAX_SHARED_PAGES) {}

  onAppended(listener: () => void): () => void {
    return this.store.onAppended(listener);
  }

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
}
