/**
 * The payments projector's new rows go with its batch's COMMIT through `insert_payment_rows`, a function of the
 * projector version's own schema (projections/payments.ts): each schema a version or a replay builds has its own,
 * which writes that schema's tables whatever the batch's search_path.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { replayProjector } from '../src/projection/replay.ts';
import { paymentsProjector } from '../projections/payments.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';

for (const target of databaseTargets()) {
  describe(`payments projector: the insert that goes with the COMMIT: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let identityId: string;
    let accountNumber: string;
    let sequence = 0;
    const post = (path: string, body: unknown) => service.request('POST', path, { headers, body });
    const create = async () => {
      const created = await post('/payments', { externalId: `held-${++sequence}`, identityId, type: 'PURCHASE', accountNumber, totalAmount: '10.00', currency: 'USD' });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      return created.body.id as string;
    };
    /** The schemas holding the function, with the schema the payments row of projection_state names. */
    const functionSchemas = async () => (await database.query<{ schema: string }>(
      `SELECT n.nspname AS schema FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.proname = 'insert_payment_rows' ORDER BY 1`)).rows.map((r) => r.schema);
    const servingSchema = async () => (await database.query<{ schema_name: string }>(
      `SELECT schema_name FROM projection_state WHERE name = 'payments' AND status = 'active'`)).rows[0]!.schema_name;

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false' } });
      headers = await service.as(await service.createClient('Held inserts'));
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'USA' })).body.id;
      accountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body.accountNumber;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('lives in the serving version\'s schema, and after a replay in the rebuilt one, whose new rows it writes', async () => {
      const before = await create();
      const serving = await servingSchema();
      expect(await functionSchemas()).to.include(serving);
      const replayed = await replayProjector(database, service.services.storage.store, paymentsProjector);
      expect(replayed.schema).to.not.equal(serving);
      expect(await servingSchema()).to.equal(replayed.schema);
      // The old schema went with its function; the rebuilt one has its own.
      const schemas = await functionSchemas();
      expect(schemas).to.include(replayed.schema);
      expect(schemas).to.not.include(serving);
      const after = await create();
      const listed = await service.request('GET', '/payments?limit=50', { headers });
      expect(listed.body.results.map((p: { id: string }) => p.id)).to.include.members([before, after]);
      expect(listed.body.pagination.total).to.equal(sequence);
      const counted = await database.query<{ n: string }>(
        `SELECT n::text FROM payment_counts WHERE client_id = (SELECT client_id FROM payments WHERE payment_id = $1) AND dimension = '' AND value = ''`, [after]);
      expect(counted.rows.map((r) => r.n)).to.deep.equal([String(sequence)]);
    });
  });
}
