/**
 * The feed as the runners of one process read it: a page read by one runner is handed to the others that ask
 * for the same page (same position, same size) while it is being read or soon after, so a rebuild of every
 * projector reads and decodes the log about once instead of once per runner.
 *
 * Safe because a page of the feed never changes once it is full: the feed shows an event only when every
 * transaction older than its own has ended, so nothing can later appear before an event already shown. A page
 * that came back short (the feed's current end) is handed only to readers that asked while it was being read,
 * never kept. Runners share the event objects: projectors and reactors treat events as read-only.
 */
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.ts';
import { formatPosition } from '../eventstore/position.ts';

/** Full pages kept for runners behind the fastest (each at most a batch of events: 1,000 by default). */
export const MAX_SHARED_PAGES = 16;

export type FeedSource = Pick<EventStore, 'readAll' | 'onAppended'>;

export class SharedFeed implements FeedSource {
  /** By key, in insertion order: the oldest first, so eviction drops the page read longest ago. */
  private readonly pages = new Map<string, Promise<RecordedEvent[]>>();

  constructor(private readonly store: FeedSource, private readonly maxPages = MAX_SHARED_PAGES) {}

  onAppended(listener: () => void): () => void {
    return this.store.onAppended(listener);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const key = `${options.after ? formatPosition(options.after) : 'start'}/${options.limit}`;
    const shared = this.pages.get(key);
    if (shared) return shared;
    const reading = this.store.readAll(options);
    this.pages.set(key, reading);
    let events: RecordedEvent[];
    try {
      events = await reading;
    } catch (error) {
      this.pages.delete(key);
      throw error;
    }
    if (events.length < options.limit) {
      this.pages.delete(key);
    } else {
      for (const oldest of this.pages.keys()) {
        if (this.pages.size <= this.maxPages) break;
        this.pages.delete(oldest);
      }
    }
    return events;
  }
}
