/**
 * Statements marked `PREPARED` are parsed and planned once per connection (src/db/preparedStatements.ts): kysely's
 * pool names them, and the connection keeps the one prepared statement however often they run; unmarked ones, and
 * marked ones written into a simple query with their values, leave nothing behind. Seen from the connection itself,
 * in pg_prepared_statements.
 */
import { expect } from 'chai';
import { sql, type Kysely } from 'kysely';
import { PREPARED } from '../src/db/preparedStatements.ts';
import type { NoTables } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';

const preparedOn = async (connection: Kysely<NoTables>) =>
  (await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.execute(connection)).rows;

for (const target of databaseTargets()) {
  describe(`prepared statements: ${target.name}`, () => {
    it('a marked statement is prepared once per connection and answers with the values of each call', async () => {
      const database = await target.open();
      try {
        await database.db.connection().execute(async (connection) => {
          const before = new Set((await preparedOn(connection)).map((row) => row.name));
          const marked = (n: number) => sql<{ doubled: number }>`${sql.raw(PREPARED)} SELECT ${n}::integer * 2 AS doubled`.execute(connection);
          expect((await marked(2)).rows).to.deep.equal([{ doubled: 4 }]);
          expect((await marked(21)).rows).to.deep.equal([{ doubled: 42 }]);
          await sql`SELECT ${'unmarked'}::text AS plain`.execute(connection);
          const added = (await preparedOn(connection)).filter((row) => !before.has(row.name));
          expect(added.map((row) => row.statement)).to.deep.equal([`${PREPARED} SELECT $1::integer * 2 AS doubled`]);
        });
      } finally {
        await database.close();
      }
    });

    it('a marked statement written into a simple query, values and all, goes unnamed: the text may hold several', async () => {
      const database = await target.open();
      try {
        await database.db.connection().execute(async (connection) => {
          const before = (await preparedOn(connection)).length;
          // As a projectors' held writes go with their COMMIT: no parameters, two statements.
          await sql.raw(`${PREPARED} SELECT 1 AS one;\n${PREPARED} SELECT 2 AS two`).execute(connection);
          expect((await preparedOn(connection)).length).to.equal(before);
        });
      } finally {
        await database.close();
      }
    });
  });
}
