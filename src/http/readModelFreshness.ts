/**
 * Which requests are answered before the read models caught up with their writes, so that the answer says so
 * (`X-Read-Models: stale`) instead of silently showing read models without the write.
 *
 * Handlers wait for read-your-writes deep inside (`services.readYourWrites(position)`), far from the response.
 * A write is tied to its request by the correlation id its events carry (every route's metadata sets it to the
 * request id): each append is noted with the position it reached, and a wait for that position that runs out
 * marks the request, which the router reads before it answers. A per-request context (AsyncLocalStorage)
 * would need no correlation id, but its promise hooks slow down every request of the process; this costs a few
 * map operations per write.
 */
import type { AppendResult, NewEvent } from '../eventstore/port.ts';
import type { Position } from '../eventstore/position.ts';

export const READ_MODELS_HEADER = 'X-Read-Models';

export class ReadModelFreshness {
  /**
   * Write requests in progress by request id. Callers may reuse an X-Request-Id, so concurrent requests can
   * share an entry: a wait that ran out for one marks all of them, never none.
   */
  private readonly open = new Map<string, { requests: number; stale: boolean }>();
  /** The request an append was made for, by the position it returned (a new object per append). */
  private readonly writers = new WeakMap<Position, string>();

  /** A write request starts: its appends and waits are followed until `end`. */
  begin(requestId: string): void {
    const entry = this.open.get(requestId);
    if (entry) entry.requests += 1;
    else this.open.set(requestId, { requests: 1, stale: false });
  }

  /** Whether a read-your-writes wait of this request ran out (so far). */
  isStale(requestId: string): boolean {
    return this.open.get(requestId)?.stale ?? false;
  }

  end(requestId: string): void {
    const entry = this.open.get(requestId);
    if (!entry) return;
    entry.requests -= 1;
    if (entry.requests === 0) this.open.delete(requestId);
  }

  /** The event store appended `events`; the request named by their correlation id, if in progress, wrote them. */
  appended(result: AppendResult, events: readonly NewEvent[]): void {
    const requestId = events[0]?.metadata?.correlationId;
    if (typeof requestId === 'string' && this.open.has(requestId)) this.writers.set(result.position, requestId);
  }

  /** The read models did not reach `position` in time: the request that wrote it answers stale. */
  timedOut(position: Position): void {
    const requestId = this.writers.get(position);
    const entry = requestId === undefined ? undefined : this.open.get(requestId);
    if (entry) entry.stale = true;
  }
}
