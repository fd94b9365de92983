/**
 * The batches of a process's projectors that are ready in the same turn of the event loop commit in one
 * transaction: one BEGIN and one COMMIT for all of them instead of one pair each. A write sets off several
 * projectors at once (a deposit: payments, deposits, customers, ledger, webhooks), each reading the same window of
 * the shared feed, so their batches come together; under load the commits per request fall with the projectors'
 * count. Each batch keeps its own compare-and-set checkpoint (and the search_path it sets for its own schema) as
 * the first statement of its work, so the works run one after the other inside the transaction.
 *
 * A failing work rolls the shared transaction back; each of its works then runs again in a transaction of its
 * own, so that only the failing projector fails (and backs off) and the others' batches commit.
 */
import type { Kysely } from 'kysely';
import type { NoTables } from '../db/database.ts';

type Work = (trx: Kysely<NoTables>) => Promise<void>;

interface Waiting {
  work: Work;
  resolve(): void;
  reject(error: unknown): void;
}

/** Batches committed together, at most: a projector's batch holds its checkpoint row's lock until the commit. */
const MAX_WORKS_PER_TRANSACTION = 32;
/** Shared transactions in flight at once (each on its own pooled connection). */
const MAX_IN_FLIGHT = 2;

export class SharedTransactions {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  private flushScheduled = false;

  constructor(private readonly db: Kysely<NoTables>) {}

  /** Runs `work` in a transaction, shared with the works submitted in the same turn; rejects only with its own error. */
  run(work: Work): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ work, resolve, reject });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      while (this.inFlight < MAX_IN_FLIGHT && this.waiting.length > 0) {
        const batch = this.waiting.splice(0, MAX_WORKS_PER_TRANSACTION);
        this.inFlight++;
        void this.commit(batch).finally(() => {
          this.inFlight--;
          if (this.waiting.length > 0) this.scheduleFlush();
        });
      }
    });
  }

  private async commit(batch: Waiting[]): Promise<void> {
    if (batch.length > 1) {
      try {
        await this.db.transaction().execute(async (trx) => {
          for (const { work } of batch) await work(trx);
        });
        for (const each of batch) each.resolve();
        return;
      } catch {
        // Which work failed is told by running each alone, below; the others commit there.
      }
    }
    for (const each of batch) {
      try {
        await this.db.transaction().execute(each.work);
        each.resolve();
      } catch (error) {
        each.reject(error);
      }
    }
  }
}
