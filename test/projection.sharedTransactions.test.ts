/**
 * Shared projector transactions: the batches of several projectors ready together commit in one transaction, their
 * checkpoints moved by one statement that puts every projector's schema on the search_path; a batch that fails, or
 * whose checkpoint moved meanwhile, fails alone and the others commit.
 */
import { expect } from 'chai';
import { sql, type Kysely } from 'kysely';
import type { Database, NoTables } from '../src/db/database.ts';
import { quoteIdent } from '../src/db/sql.ts';
import type { Position } from '../src/eventstore/position.ts';
import { ProjectionStateStore } from '../src/projection/projectionState.ts';
import { SharedTransactions, type SharedWork } from '../src/projection/sharedTransactions.ts';
import { writesNow } from '../src/projection/projector.ts';
import { databaseTargets } from './support/targets.ts';

const OWNER = 'shared-test';
const at = (n: number): Position => ({ commit: BigInt(n), prepare: BigInt(n) });

for (const target of databaseTargets()) {
  describe(`shared projector transactions: ${target.name}`, () => {
    let database: Database;
    let states: ProjectionStateStore;
    const names = ['shared_a', 'shared_b', 'shared_c'];
    const schemaOf = (name: string) => `${database.schema}__${name}_v1`;

    before(async () => {
      database = await target.open();
      states = new ProjectionStateStore(database);
      for (const name of names) {
        await database.query(`CREATE SCHEMA ${quoteIdent(schemaOf(name))}`);
        // Each projector's own table, named after it, in its own schema only.
        await database.query(`CREATE TABLE ${quoteIdent(schemaOf(name))}.${quoteIdent(`${name}_rows`)} (n integer)`);
        await states.register(name, 1, 'projector', schemaOf(name));
        expect((await states.claimLease(name, 1, OWNER, 60_000)).held).to.equal(true);
      }
    });
    after(async () => {
      for (const name of names) await database?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schemaOf(name))} CASCADE`);
      await database?.close();
    });

    /** A batch of `name` writing `n` into its own table (by its unqualified name) and moving its checkpoint to `next`. */
    function work(name: string, previous: Position | null, next: Position, n: number, fail = false): SharedWork {
      const apply = async (trx: Kysely<NoTables>) => {
        await sql`INSERT INTO ${sql.raw(quoteIdent(`${name}_rows`))} (n) VALUES (${n})`.execute(trx);
        if (fail) throw new Error(`${name} failed`);
      };
      const checkpoint = { name, version: 1, owner: OWNER, ttlMs: 60_000, previous, next, handled: 1 };
      return {
        checkpoint, apply,
        alone: async (trx) => {
          if (!await states.advanceCheckpoint(trx, name, 1, OWNER, 60_000, previous, next, 1, database.schema)) throw new Error(`${name}: checkpoint moved`);
          await apply(trx);
        },
      };
    }
    const rowsOf = async (name: string) =>
      (await database.query<{ n: number }>(`SELECT n FROM ${quoteIdent(schemaOf(name))}.${quoteIdent(`${name}_rows`)} ORDER BY n`)).rows.map((r) => r.n);
    const checkpointOf = async (name: string) => (await states.get(name, 1))!.checkpoint;
    /** The database, counting the statements it runs (once per statement run: a statement compiled is not one sent). */
    function counting(): { db: Kysely<NoTables>; statements(): number } {
      let statements = 0;
      const db = database.db.withPlugin({
        transformQuery: (args) => args.node,
        transformResult: async (args) => { statements++; return args.result; },
      });
      return { db, statements: () => statements };
    }

    it('commits the batches of one turn together, each into its own schema, and moves every checkpoint', async () => {
      const shared = new SharedTransactions(database.db, states, database.schema);
      // Run alone, a batch would fail: these commit in the shared transaction or not at all.
      await Promise.all(names.map((name) => shared.run({ ...work(name, null, at(10), 1), alone: () => Promise.reject(new Error(`${name} ran alone`)) })));
      for (const name of names) {
        expect(await rowsOf(name), name).to.deep.equal([1]);
        expect(await checkpointOf(name), name).to.deep.equal(at(10));
      }
    });

    it('a failing batch, or one whose checkpoint moved meanwhile, fails alone: the others commit', async () => {
      const shared = new SharedTransactions(database.db, states, database.schema);
      const outcomes = await Promise.allSettled([
        shared.run(work('shared_a', at(10), at(20), 2)),
        shared.run(work('shared_b', at(10), at(20), 2, true)),
        shared.run(work('shared_c', at(5), at(20), 2)), // its checkpoint is at 10, not 5
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected']);
      expect(((outcomes[1] as PromiseRejectedResult).reason as Error).message).to.equal('shared_b failed');
      expect(((outcomes[2] as PromiseRejectedResult).reason as Error).message).to.equal('shared_c: checkpoint moved');
      expect(await rowsOf('shared_a')).to.deep.equal([1, 2]);
      expect(await checkpointOf('shared_a')).to.deep.equal(at(20));
      for (const name of ['shared_b', 'shared_c']) {
        expect(await rowsOf(name), name).to.deep.equal([1]);
        expect(await checkpointOf(name), name).to.deep.equal(at(10));
      }
    });

    /** A batch of `name` whose only write, `value` into its own table, is handed over to go with the COMMIT. */
    function laterWork(name: string, previous: Position | null, next: Position, value: number | string): SharedWork {
      const insert = (trx: Kysely<NoTables>) => sql`INSERT INTO ${sql.raw(quoteIdent(`${name}_rows`))} (n) VALUES (${value})`.compile(trx);
      const checkpoint = { name, version: 1, owner: OWNER, ttlMs: 60_000, previous, next, handled: 1 };
      return {
        checkpoint,
        apply: (trx, later) => later.add(insert(trx)),
        alone: async (trx) => {
          if (!await states.advanceCheckpoint(trx, name, 1, OWNER, 60_000, previous, next, 1, database.schema)) throw new Error(`${name}: checkpoint moved`);
          await writesNow(trx).add(insert(trx));
        },
      };
    }

    it('writes a batch hands over go with the COMMIT: the transaction is two round trips, its begin and its end', async () => {
      const counted = counting();
      const shared = new SharedTransactions(counted.db, states, database.schema);
      await Promise.all([
        shared.run({ ...laterWork('shared_a', at(20), at(30), 3), alone: () => Promise.reject(new Error('ran alone')) }),
        shared.run({ ...laterWork('shared_b', at(10), at(30), 3), alone: () => Promise.reject(new Error('ran alone')) }),
      ]);
      expect(counted.statements()).to.equal(2);
      expect(await rowsOf('shared_a')).to.deep.equal([1, 2, 3]);
      expect(await rowsOf('shared_b')).to.deep.equal([1, 3]);
      expect(await checkpointOf('shared_b')).to.deep.equal(at(30));
    });

    it('a large handed-over write runs at once, after those held before it; those after it go with the COMMIT', async () => {
      const counted = counting();
      const table = sql.raw(quoteIdent('shared_c_rows'));
      const many = Array.from({ length: 1_001 }, (_, i) => 1_000 + i);
      // Past the 64 KiB a held write may carry.
      const large = JSON.stringify({ rows: many, note: 'x'.repeat(70_000) });
      const shared = new SharedTransactions(counted.db, states, database.schema);
      await shared.run({
        checkpoint: { name: 'shared_c', version: 1, owner: OWNER, ttlMs: 60_000, previous: at(10), next: at(50), handled: 3 },
        apply: async (trx, later) => {
          await later.add(sql`INSERT INTO ${table} (n) VALUES (${5})`.compile(trx));
          // Its rows go in only if the held write before it already ran.
          await later.add(sql`INSERT INTO ${table} (n) SELECT v::integer FROM json_array_elements_text(${large}::json -> 'rows') AS v
            WHERE EXISTS (SELECT 1 FROM ${table} WHERE n = 5)`.compile(trx));
          await later.add(sql`INSERT INTO ${table} (n) SELECT 6 WHERE (SELECT count(*) FROM ${table}) > 1000`.compile(trx));
        },
        alone: () => Promise.reject(new Error('ran alone')),
      });
      // The begin, the write held before the large one, the large one, and the last one with the COMMIT.
      expect(counted.statements()).to.equal(4);
      expect(await rowsOf('shared_c')).to.deep.equal([1, 5, 6, ...many]);
      expect(await checkpointOf('shared_c')).to.deep.equal(at(50));
    });

    it('an array counts by its elements: a write with an array of many values runs at once, not written into the COMMIT', async () => {
      const counted = counting();
      const table = sql.raw(quoteIdent('shared_c_rows'));
      // 20,000 short values: one value as a whole, about 160,000 characters once written into a query's text.
      const many = Array.from({ length: 20_000 }, (_, i) => String(10_000 + i));
      const before = (await rowsOf('shared_c')).length;
      const shared = new SharedTransactions(counted.db, states, database.schema);
      await shared.run({
        checkpoint: { name: 'shared_c', version: 1, owner: OWNER, ttlMs: 60_000, previous: at(50), next: at(60), handled: 1 },
        apply: (trx, later) => later.add(sql`INSERT INTO ${table} (n) SELECT v::integer FROM unnest(${many}::text[]) AS v`.compile(trx)),
        alone: () => Promise.reject(new Error('ran alone')),
      });
      // The begin, the array's write with its values as parameters, the COMMIT alone.
      expect(counted.statements()).to.equal(3);
      expect((await rowsOf('shared_c')).length).to.equal(before + 20_000);
      expect(await checkpointOf('shared_c')).to.deep.equal(at(60));
    });

    it('once held writes come to 256 KiB of text, those held so far go before the COMMIT, in the order they came', async () => {
      const counted = counting();
      const table = sql.raw(quoteIdent('shared_c_rows'));
      const shared = new SharedTransactions(counted.db, states, database.schema);
      // 10 writes of about 40,000 characters each: each small enough to hold, 400,000 together.
      const pad = 'x'.repeat(40_000);
      await shared.run({
        checkpoint: { name: 'shared_c', version: 1, owner: OWNER, ttlMs: 60_000, previous: at(60), next: at(70), handled: 10 },
        apply: async (trx, later) => {
          for (let i = 0; i < 10; i++) {
            // Each goes in only after the one before it.
            await later.add(sql`INSERT INTO ${table} (n) SELECT ${50_000 + i} WHERE length(${pad}) > 0
              AND (${i} = 0 OR EXISTS (SELECT 1 FROM ${table} WHERE n = ${50_000 + i - 1}))`.compile(trx));
          }
        },
        alone: () => Promise.reject(new Error('ran alone')),
      });
      // The begin, the first six held writes once the seventh would pass 256 KiB, the last four with the COMMIT.
      expect(counted.statements()).to.equal(3);
      expect((await rowsOf('shared_c')).filter((n) => n >= 50_000)).to.deep.equal(Array.from({ length: 10 }, (_, i) => 50_000 + i));
      expect(await checkpointOf('shared_c')).to.deep.equal(at(70));
    });

    it('held writes sent before the COMMIT are inside the transaction: a later write failing undoes them', async () => {
      const table = sql.raw(quoteIdent('shared_c_rows'));
      const shared = new SharedTransactions(database.db, states, database.schema);
      const pad = 'x'.repeat(40_000);
      const outcome = shared.run({
        checkpoint: { name: 'shared_c', version: 1, owner: OWNER, ttlMs: 60_000, previous: at(70), next: at(80), handled: 10 },
        apply: async (trx, later) => {
          // The first six go before the seventh is held (as above); the last fails with the COMMIT.
          for (let i = 0; i < 9; i++) await later.add(sql`INSERT INTO ${table} (n) SELECT ${60_000 + i} WHERE length(${pad}) > 0`.compile(trx));
          await later.add(sql`INSERT INTO ${table} (n) VALUES (${'not a number'})`.compile(trx));
        },
        alone: () => Promise.reject(new Error('ran alone')),
      });
      const [settled] = await Promise.allSettled([outcome]);
      expect(String((settled as PromiseRejectedResult).reason)).to.match(/ran alone/);
      expect((await rowsOf('shared_c')).filter((n) => n >= 60_000)).to.deep.equal([]);
      expect(await checkpointOf('shared_c')).to.deep.equal(at(70));
    });

    it('a handed-over write that fails fails its own batch, run again alone with its own error; the others commit', async () => {
      const shared = new SharedTransactions(database.db, states, database.schema);
      const outcomes = await Promise.allSettled([
        shared.run(laterWork('shared_a', at(30), at(40), 4)),
        shared.run(laterWork('shared_b', at(30), at(40), 'not a number')),
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected']);
      expect(String((outcomes[1] as PromiseRejectedResult).reason)).to.match(/invalid input syntax for type integer/);
      expect(await rowsOf('shared_a')).to.deep.equal([1, 2, 3, 4]);
      expect(await checkpointOf('shared_a')).to.deep.equal(at(40));
      expect(await rowsOf('shared_b')).to.deep.equal([1, 3]);
      expect(await checkpointOf('shared_b')).to.deep.equal(at(30));
    });
  });
}
