import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';

for (const target of databaseTargets()) {
  describe(`read-your-writes header X-Read-Models: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let as: Record<string, string>;
    let identityId: string;
    let accountNumber: string;
    let sequence = 0;

    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      service.request('POST', path, { headers: { ...as, ...headers }, body });
    const createPayment = (headers: Record<string, string> = {}) => post('/payments', {
      externalId: `ryw-${++sequence}`, identityId, type: 'PURCHASE', accountNumber, totalAmount: '10.00', currency: 'BRL',
    }, headers);
    const paymentsRunner = () => service.services.projections.projectionRunners.find((r) => r.name === 'payments')!;
    /** Another process takes the payments projector's lease and does not move it: this one can no longer project. */
    const leaseHeldElsewhere = async () => {
      await database.query(`UPDATE projection_state SET lease_owner = 'another-process', lease_expires_at = now() + interval '1 hour'
        WHERE name = 'payments' AND status = 'active'`);
      await until(() => !paymentsRunner().holdsLease, { what: 'the runner notices it lost its lease', timeoutMs: 10_000 });
    };
    const leaseFree = async () => {
      await database.query(`UPDATE projection_state SET lease_owner = NULL, lease_expires_at = NULL
        WHERE name = 'payments' AND lease_owner = 'another-process'`);
      await until(() => paymentsRunner().holdsLease, { what: 'the runner takes the lease back', timeoutMs: 10_000 });
    };

    before(async () => {
      database = await target.open();
      // Short, so the stale answers come quickly; still ample for read models that are not held up.
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false', READ_YOUR_WRITES_TIMEOUT_MS: '1000' } });
      as = await service.as(await service.createClient('Fresh or stale'));
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'BRA' })).body.id;
      accountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'BRL' })).body.accountNumber;
    });
    afterEach(async () => {
      await database.query(`UPDATE projection_state SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = 'another-process'`);
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('a command answered once the read models include it carries no X-Read-Models header', async () => {
      const created = await createPayment();
      expect(created.status).to.equal(200);
      expect(created.headers.get('x-read-models')).to.equal(null);
      const identity = await post('/identities', { type: 'ORGANIZATION', name: 'Ana Shop', country: 'BRA' });
      expect(identity.status).to.equal(201);
      expect(identity.headers.get('x-read-models')).to.equal(null);
    });

    it('the OpenAPI document names the header on the answers of writes, not of reads', async () => {
      const document = (await service.request('GET', '/openapi.json')).body;
      expect(document.paths['/payments'].post.responses['200'].headers['X-Read-Models']).to.deep.equal({ $ref: '#/components/headers/X-Read-Models' });
      expect(document.components.headers['X-Read-Models'].schema).to.deep.equal({ type: 'string', enum: ['stale'] });
      expect(document.paths['/identities/{id}'].patch.responses['200'].headers).to.have.property('X-Read-Models');
      expect(document.paths['/payments'].get.responses['200'].headers).to.equal(undefined);
    });

    it('a command whose wait for the read models timed out says X-Read-Models: stale, on both kinds of wait', async () => {
      await leaseHeldElsewhere();
      // The create's wait is its HandlerResult.readModels, with an Idempotency-Key.
      const created = await createPayment({ 'idempotency-key': `stale-${sequence}` });
      expect(created.status).to.equal(200);
      expect(created.headers.get('x-read-models')).to.equal('stale');
      // An identity's create waits inside its handler, for every read model, without an Idempotency-Key.
      const identity = await post('/identities', { type: 'ORGANIZATION', name: 'Bea Shop', country: 'BRA' });
      expect(identity.status).to.equal(201);
      expect(identity.headers.get('x-read-models')).to.equal('stale');
      const listed = await service.request('GET', `/payments/${created.body.id}`, { headers: as });
      expect(listed.headers.get('x-read-models'), 'reads do not carry it').to.equal(null);

      await leaseFree();
      const fresh = await createPayment();
      expect(fresh.status).to.equal(200);
      expect(fresh.headers.get('x-read-models'), 'once the projector runs again').to.equal(null);
      expect((await service.request('GET', `/payments/${created.body.id}`, { headers: as })).body.id).to.equal(created.body.id);
    });
  });
}
