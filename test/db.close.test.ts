/**
 * Closing a database ends its connection pool, also when nothing went through the query builder (the CLI's
 * `projections status` queries through `query` alone): a pool left open keeps the process alive, its idle
 * connections holding the event loop until pg's idle timeout.
 */
import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';

for (const target of databaseTargets()) {
  describe(`database close: ${target.name}`, () => {
    it('ends the pool after queries through `query` alone', async () => {
      const database = await target.open();
      expect((await database.query<{ one: number }>('SELECT 1 AS one')).rows).to.deep.equal([{ one: 1 }]);
      await database.close();
      expect(database.pool.ending, 'pool ended').to.equal(true);
      expect(database.pool.totalCount, 'connections left').to.equal(0);
    });

    it('ends the pool after queries through the query builder', async () => {
      const database = await target.open();
      await database.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
      await database.close();
      expect(database.pool.ending, 'pool ended').to.equal(true);
      expect(database.pool.totalCount, 'connections left').to.equal(0);
    });
  });
}
