/**
 * The keeper of projection schemas (src/projection/schemaKeeper.ts): what a dead build, replay or read-model check
 * left behind is dropped; what serves readers, what is still building and what a running replay or check uses
 * stays.
 */
import { expect } from 'chai';
import pg from 'pg';
import { databaseTargets } from './support/targets.ts';
import type { Database } from '../src/db/database.ts';
import { quoteIdent } from '../src/db/sql.ts';
import { dropOrphanSchemas, verifyLockKey } from '../src/projection/schemaKeeper.ts';

for (const target of databaseTargets()) {
  describe(`the projection schema keeper: ${target.name}`, function () {
    this.timeout(60_000);
    let database: Database;

    before(async () => {
      database = await target.open();
    });
    after(async () => {
      await database?.close();
    });

    const schemas = async () => (await database.query<{ nspname: string }>(
      'SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY nspname', [`${database.schema}__`])).rows.map((r) => r.nspname);

    it('drops retired versions, abandoned replays and checks; keeps the serving, the building and the unknown', async () => {
      const base = database.schema;
      const rows: Array<[string, number, string, string]> = [
        ['payments', 3, 'active', `${base}__payments_v3_r1`],
        ['payments', 2, 'retired', `${base}__payments_v2`],
        ['ledger', 1, 'active', `${base}__ledger_v1`],
        ['ledger', 2, 'building', `${base}__ledger_v2`],
      ];
      for (const [name, version, status, schema] of rows) {
        await database.query(`INSERT INTO projection_state (name, version, kind, status, schema_name) VALUES ($1, $2, 'projector', $3, $4)`,
          [name, version, status, schema]);
      }
      const made = [
        'payments_v3', 'payments_v3_r1', 'payments_v3_r2', 'payments_v2', 'ledger_v1', 'ledger_v2', 'verify_payments', 'verify_ledger',
        'unknown_v1', 'verify_unknown',
      ].map((suffix) => `${base}__${suffix}`);
      for (const schema of made) await database.query(`CREATE SCHEMA ${quoteIdent(schema)}`);

      // On Postgres a running check of the ledger holds its lock: its scratch schema stays while it does.
      let checker: pg.Client | null = null;
      if (database.kind === 'postgres') {
        checker = new pg.Client({ connectionString: database.connectionString });
        await checker.connect();
        await checker.query('SELECT pg_advisory_lock(hashtext($1))', [verifyLockKey(base, 'ledger')]);
      }
      try {
        const dropped = await dropOrphanSchemas(database);
        const expected = ['payments_v2', 'payments_v3', 'payments_v3_r2', 'verify_payments', ...(checker ? [] : ['verify_ledger'])]
          .map((suffix) => `${base}__${suffix}`);
        expect([...dropped].sort()).to.deep.equal(expected.sort());
        expect(await schemas()).to.deep.equal(made.filter((s) => !expected.includes(s)).sort());
      } finally {
        await checker?.end();
      }
      if (checker) expect(await dropOrphanSchemas(database)).to.deep.equal([`${base}__verify_ledger`]);
      expect(await dropOrphanSchemas(database)).to.deep.equal([]);
    });
  });
}
