/**
 * The batches of a process's projectors that are ready in the same turn of the event loop commit in one
 * transaction: one BEGIN and one COMMIT for all of them instead of one pair each. A write sets off several
 * projectors at once (a deposit: payments, deposits, customers, ledger, webhooks), each reading the same window of
 * the shared feed, so their batches come together; under load the commits per request fall with the projectors'
 * count. The first round trip begins the transaction and moves every batch's checkpoint, each its own compare-and-set,
 * and puts every batch's schema first on the search_path; the batches' writes follow, one after the other, and
 * the writes they hand over (`LaterWrites`) go with the COMMIT, their values written in, in one last round trip
 * (unless they are large: see MAX_HELD_SIZE and MAX_HELD_TEXT).
 *
 * A checkpoint that does not move, or a failing batch, rolls the shared transaction back; each of its works then
 * runs again in a transaction of its own (its checkpoint, then its writes), so that only the failing projector
 * fails (and backs off) and the others' batches commit.
 */
import { sql, type Kysely } from 'kysely';
import { Coalescer } from '../db/coalescer.ts';
import type { NoTables } from '../db/database.ts';
import { inlineParameters } from '../db/inlineSql.ts';
import type { CheckpointMove, ProjectionStateStore } from './projectionState.ts';
import { compiledWrite, type LaterWrites } from './projector.ts';

/** A projector's batch. */
export interface SharedWork {
  /** Its checkpoint's move. */
  checkpoint: CheckpointMove;
  /**
   * Its writes, once its checkpoint moved and its schema is on the search_path (null: a checkpoint alone); those it
   * hands to `later` go with the COMMIT.
   */
  apply: ((trx: Kysely<NoTables>, later: LaterWrites) => Promise<void>) | null;
  /** The whole batch in a transaction of its own: its checkpoint (throwing if it does not move), then its writes. */
  alone: (trx: Kysely<NoTables>) => Promise<void>;
}

/** What a work came to: null when it committed, else its own error. */
type Outcome = { failed: unknown } | null;

/** Batches committed together, at most: a projector's batch holds its checkpoint row's lock until the commit. */
const MAX_WORKS_PER_TRANSACTION = 32;
/**
 * How large a write held for the COMMIT may be, at most, as its values' count plus the characters of those that are
 * text, an array's elements each counted so (the ledger's postings go as arrays); a larger one runs at once. A write
 * at the head of the feed carries a few events' rows: some tens of values, a few kilobytes. One catching up carries
 * thousands of rows.
 */
const MAX_HELD_SIZE = 64 * 1024;
const valueSize = (value: unknown): number => (typeof value === 'string' ? 1 + value.length
  : Array.isArray(value) ? value.reduce<number>((size, element) => size + valueSize(element), 1) : 1);
const heldSize = (parameters: readonly unknown[]) => parameters.reduce<number>((size, value) => size + valueSize(value), 0);
/**
 * Characters of held writes gathered into one query before it goes: 32 batches each within MAX_HELD_SIZE could
 * otherwise make a query of megabytes. When the next write would take the text past it, those held so far go at
 * once, still inside the transaction. (A single held write may itself be longer: MAX_HELD_SIZE counts a value that
 * is not text as one.)
 */
const MAX_HELD_TEXT = 256 * 1024;
/** Shared transactions in flight at once (each on its own pooled connection). */
const MAX_IN_FLIGHT = 2;

export class SharedTransactions {
  /** Gathers the works of a turn (or of the time a transaction is in flight), as the other shared statements do. */
  private readonly works: Coalescer<SharedWork, Outcome>;

  constructor(private readonly db: Kysely<NoTables>, private readonly states: ProjectionStateStore, private readonly baseSchema: string) {
    this.works = new Coalescer((batch) => this.commit(batch), { maxBatch: MAX_WORKS_PER_TRANSACTION, maxInFlight: MAX_IN_FLIGHT });
  }

  /** Runs `work` in a transaction, shared with the works submitted in the same turn; rejects only with its own error. */
  async run(work: SharedWork): Promise<void> {
    const outcome = await this.works.submit(work);
    if (outcome) throw outcome.failed;
  }

  private async commit(batch: SharedWork[]): Promise<Outcome[]> {
    // A work alone in its turn goes this way too: its BEGIN rides on its checkpoint's move, a round trip less than
    // a transaction of its own. When it fails, it runs again alone below, which tells its error (a checkpoint moved
    // elsewhere, a failing write) as the runner knows it.
    try {
      await this.db.connection().execute(async (connection) => {
        try {
          // BEGIN and the checkpoints' moves in one round trip; a checkpoint that did not move fails it.
          await this.states.beginWithCheckpoints(connection, batch.map((work) => work.checkpoint), this.baseSchema);
          const held: string[] = [];
          let heldText = 0;
          // Those held so far, taken at once: a write held after this waits for the next query or the COMMIT.
          const takeHeld = () => {
            heldText = 0;
            return held.splice(0);
          };
          // Each on lines of its own, so that a statement's trailing comment cannot take in the next one.
          const send = (writes: string[]) => sql.raw(writes.join('\n;\n')).execute(connection);
          let sealed = false;
          const later: LaterWrites = {
            add: async (query) => {
              // A write handed over once the batches are done (an add not awaited) would be lost: it fails instead.
              if (sealed) throw new Error('a projector handed over a write after its batch was done');
              const compiled = compiledWrite(query);
              if (heldSize(compiled.parameters) <= MAX_HELD_SIZE) {
                const text = inlineParameters(compiled.sql, compiled.parameters);
                // Held before anything is awaited, so that no write waits outside `held` for a query of its own.
                const earlier = heldText + text.length > MAX_HELD_TEXT ? takeHeld() : [];
                held.push(text);
                heldText += text.length;
                if (earlier.length > 0) await send(earlier);
                return;
              }
              // A large write (a batch catching up) goes now, with its values as parameters: written into the text, it
              // would make a string of megabytes, for a round trip that matters little beside it. Those held before it
              // go first.
              const earlier = takeHeld();
              if (earlier.length > 0) await send(earlier);
              await connection.executeQuery(compiled);
            },
          };
          for (const work of batch) await work.apply?.(connection, later);
          sealed = true;
          // The held writes and the COMMIT in one simple query: a failing write stops it there, before the COMMIT.
          await send([...held, 'COMMIT']);
        } catch (error) {
          // Given back to the pool outside any transaction; a connection that cannot roll back is broken, and the
          // pool drops it.
          await sql`ROLLBACK`.execute(connection).catch(() => undefined);
          throw error;
        }
      });
      return batch.map(() => null);
    } catch {
      // Which work failed is told by running each alone, below; the others commit there.
    }
    const outcomes: Outcome[] = [];
    for (const work of batch) {
      try {
        await this.db.transaction().execute(work.alone);
        outcomes.push(null);
      } catch (error) {
        outcomes.push({ failed: error });
      }
    }
    return outcomes;
  }
}
