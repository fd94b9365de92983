/**
 * Transactions of this process that never append events: its projectors' batches. The feed leaves them out of its
 * horizon (src/eventstore/postgres/appendSql.ts, READ_TAIL_SQL).
 *
 * The feed shows an event only once every transaction older than the event's has ended, since an older one might
 * still append an event that would come before it. A projector's batch is such an older transaction most of the
 * time under load (it writes read models over several round trips, with its transaction id taken by its first
 * statement), so appends made meanwhile were held back from the feed until it committed, and the feed read them
 * again and again, finding nothing (four reads in five, measured under refunds on one parent). A projector's batch
 * writes read-model tables and its checkpoint only: appends go through the event store, on connections of their
 * own, never through a runner's transaction, so nothing can appear before an event from it, and the horizon
 * need not wait for it.
 *
 * Ids are kept while their transaction runs, so at most one per projector transaction in flight (bounded by the
 * connection pool).
 */
export class QuietTransactions {
  private readonly ids = new Set<string>();

  /**
   * Runs `work`, which calls `mark` with its transaction's id (as `pg_current_xact_id()` prints it) once its first
   * statement took one; the id is left out of the horizon until `work` ends (its transaction committed or rolled back).
   */
  async run<T>(work: (mark: (transactionId: string) => void) => Promise<T>): Promise<T> {
    const marked: string[] = [];
    try {
      return await work((transactionId) => {
        marked.push(transactionId);
        this.ids.add(transactionId);
      });
    } finally {
      for (const transactionId of marked) this.ids.delete(transactionId);
    }
  }

  /** The ids of the transactions running now. */
  current(): string[] {
    return [...this.ids];
  }
}
