/**
 * The batches of a process's projectors that are ready in the same turn of the event loop commit in one
 * transaction: one BEGIN and one COMMIT for all of them instead of one pair each. A write sets off several
 * projectors at once (a deposit: payments, deposits, customers, ledger, webhooks), each reading the same window of
 * the shared feed, so their batches come together; under load the commits per request fall with the projectors'
 * count. The first round trip begins the transaction, checks that every batch's checkpoint is where the batch starts
 * and its lease still held, and puts every batch's schema first on the search_path; the batches' writes follow, one
 * after the other; the last round trip moves every checkpoint, each its own compare-and-set, and carries the writes the
 * batches hand over (`LaterWrites`), their values written in, with the COMMIT. A transaction whose batches hand over
 * all their writes so writes only in its last statement: until then it holds back no event from the feed
 * (./projectionState.ts, `beginCheckingCheckpoints`). Both ends are simple queries of several statements, sent on the
 * pooled connection itself: kysely answers only the last statement's rows, and the first statement's are wanted (the
 * schemas the checkpoints' moves check again).
 *
 * A checkpoint that does not move, or a failing batch, rolls the shared transaction back; each of its works then
 * runs again in a transaction of its own (its checkpoint, then its writes), so that only the failing projector
 * fails (and backs off) and the others' batches commit.
 */
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { Coalescer } from '../db/coalescer.ts';
import type { Database, NoTables } from '../db/database.ts';
import { inlineParameters } from '../db/inlineSql.ts';
import { beginCheckingCheckpoints, checkpointsMoved, type CheckpointMove, type CheckpointSchema } from './projectionState.ts';
import { compiledWrite, type LaterWrites } from './projector.ts';

/** A projector's batch. */
export interface SharedWork {
  /** Its checkpoint's move. */
  checkpoint: CheckpointMove;
  /**
   * Its writes, once its checkpoint was checked and its schema is on the search_path (null: a checkpoint alone); those
   * it hands to `later` go with the COMMIT, after the checkpoint's move.
   */
  apply: ((trx: Kysely<NoTables>, later: LaterWrites) => Promise<void>) | null;
  /** The whole batch in a transaction of its own: its checkpoint (throwing if it does not move), then its writes. */
  alone: (trx: Kysely<NoTables>) => Promise<void>;
}

/** What a work came to: null when it committed, else its own error. */
type Outcome = { failed: unknown } | null;

/** Batches committed together, at most: a transaction's last round trip locks every one of their checkpoint rows. */
const MAX_WORKS_PER_TRANSACTION = 32;
/** Shared transactions in flight at once (each on its own pooled connection). */
const MAX_IN_FLIGHT = 2;

export class SharedTransactions {
  /** Gathers the works of a turn (or of the time a transaction is in flight), as the other shared statements do. */
  private readonly works: Coalescer<SharedWork, Outcome>;

  constructor(private readonly database: Pick<Database, 'pool' | 'db' | 'schema'>) {
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
      await this.together(batch);
      return batch.map(() => null);
    } catch {
      // Which work failed is told by running each alone, below; the others commit there.
    }
    const outcomes: Outcome[] = [];
    for (const work of batch) {
      try {
        await this.database.db.transaction().execute(work.alone);
        outcomes.push(null);
      } catch (error) {
        outcomes.push({ failed: error });
      }
    }
    return outcomes;
  }

  /** The works in one transaction: begun with their checkpoints' check, ended with their moves and held writes. */
  private async together(batch: readonly SharedWork[]): Promise<void> {
    const client = await this.database.pool.connect();
    // A connection that cannot roll back is broken: given back with the error, the pool drops it.
    let broken: Error | undefined;
    try {
      // BEGIN and the checkpoints' check in one round trip; a checkpoint that moved fails it.
      const moves = batch.map((work) => work.checkpoint);
      const begun = await client.query(beginCheckingCheckpoints(moves, this.database.schema)) as unknown as pg.QueryResult[];
      // The answers of BEGIN and of the checkpoints' statement.
      const schemas = (begun[1]!.rows[0] as { schemas: CheckpointSchema[] }).schemas;
      const trx = kyselyOn(client);
      const held: string[] = [];
      let sealed = false;
      const later: LaterWrites = {
        add: async (query) => {
          // A write handed over once the batches are done (an add not awaited) would be lost: it fails instead.
          if (sealed) throw new Error('a projector handed over a write after its batch was done');
          const compiled = compiledWrite(query);
          held.push(inlineParameters(compiled.sql, compiled.parameters));
        },
      };
      for (const work of batch) await work.apply?.(trx, later);
      sealed = true;
      // The checkpoints' moves, the held writes and the COMMIT in one simple query: a checkpoint moved meanwhile or a
      // failing write stops it there, before the COMMIT. Each on lines of its own, so that a statement's trailing
      // comment cannot take in the next one.
      await client.query([checkpointsMoved(moves, schemas), ...held, 'COMMIT'].join('\n;\n'));
    } catch (error) {
      await client.query('ROLLBACK').catch((failed: unknown) => { broken = failed instanceof Error ? failed : new Error(String(failed)); });
      throw error;
    } finally {
      client.release(broken);
    }
  }
}

/**
 * A kysely handle whose every statement runs on `client`, a pooled connection checked out for a shared transaction:
 * one per connection, kept as long as the connection lives. Its statements never give the connection back.
 */
const handles = new WeakMap<pg.PoolClient, Kysely<NoTables>>();

function kyselyOn(client: pg.PoolClient): Kysely<NoTables> {
  let handle = handles.get(client);
  if (!handle) {
    const borrowed = { query: (...args: unknown[]) => (client.query as (...a: unknown[]) => unknown)(...args), release: () => undefined };
    handle = new Kysely<NoTables>({
      dialect: new PostgresDialect({ pool: { connect: async () => borrowed, end: async () => undefined } as unknown as pg.Pool }),
    });
    handles.set(client, handle);
  }
  return handle;
}
