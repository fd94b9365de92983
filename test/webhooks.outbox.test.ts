/**
 * The outbox under replay, rebuild, several dispatchers and a dispatcher killed mid-delivery (acceptance 4 of
 * the webhooks): nothing is emitted twice, nothing is sent by two dispatchers at once, and a delivery a dead
 * dispatcher held is sent again once its lease runs out (at least once).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { databaseTargets } from './support/targets.ts';
import type { TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { providerReceipts } from './support/payments.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { testDispatcher } from './support/webhooks.ts';
import { until } from './support/until.ts';
import { newestEventPosition } from './support/newestEvent.ts';
import { openDatabase, type Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { createFreshSchema, searchPathOf } from '../src/projection/projectorSchema.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { createWebhooksProjector, WEBHOOKS_PROJECTOR_VERSION } from '../projections/webhooks.ts';
import { webhookEventId, type Mapping } from '../projections/webhookMappings.ts';
import { registered, storedEvents } from '../src/contexts.ts';

/** The emitter in service: every context's mappings, as their manifests carry them. */
const { webhookMappings } = registered;
const webhooksProjector = createWebhooksProjector(WEBHOOKS_PROJECTOR_VERSION, webhookMappings);
import { enqueueTestPing } from '../src/webhooks/outbox.ts';
import { CLAIM_LEASE_MS, type WebhookDispatcher } from '../src/webhooks/dispatcher.ts';

const PROVIDER_SECRET = 'test-provider-secret';

for (const target of databaseTargets()) {
  describe(`webhook outbox: replay, rebuild, several dispatchers, a killed dispatcher: ${target.name}`, function () {
    this.timeout(180_000);
    let tenants: TwoTenants;
    let service: TestService;
    let database: Database;
    let asAlice: Record<string, string>;
    let identityId: string;
    let accountNumber: string;
    let sequence = 0;
    const dispatchers: WebhookDispatcher[] = [];
    const receivers: Receiver[] = [];

    const post = (path: string, body?: unknown) => service.request('POST', path, { headers: asAlice, body });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const outboxCount = async () => Number((await database.query('SELECT count(*) AS n FROM webhook_deliveries')).rows[0].n);
    const receiver = async (...args: Parameters<typeof startReceiver>) => {
      const made = await startReceiver(...args);
      receivers.push(made);
      return made;
    };
    const dispatcher = (options: Parameters<typeof testDispatcher>[1] = {}) => {
      const made = testDispatcher(service.services, options);
      dispatchers.push(made);
      return made;
    };
    const register = async (url: string) => (await post('/webhooks', { url })).body.id as string;
    /** A payment taken to SETTLED through the push path: two status changes (RECEIVED, SETTLED) and a payment.settled. */
    const settledPayment = async () => {
      const id = (await post('/payments', {
        externalId: `order-${++sequence}`, identityId, type: 'PURCHASE', accountNumber, currency: 'USD', totalAmount: '10.00',
      })).body.id as string;
      expect((await received(id)).body.status).to.equal('SETTLED');
      return id;
    };
    const allEvents = async () => {
      const events: RecordedEvent[] = [];
      for (;;) {
        const page = await service.services.storage.store.readAll({ after: events[events.length - 1]?.position ?? null, limit: 1_000 });
        events.push(...page);
        if (page.length < 1_000) return events;
      }
    };

    before(async () => {
      tenants = await startTwoTenants(target, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ service, asAlice, database } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'USA' })).body.id;
      accountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body.accountNumber;
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
    });
    after(async () => {
      await tenants?.close();
    });

    it('emits a delivery for events after an endpoint’s registration only; replaying the feed from zero emits nothing new', async () => {
      const before = await settledPayment();
      const hooks = await receiver();
      const webhookId = await register(hooks.url);
      const after = await settledPayment();
      await service.services.readYourWrites(await newestEventPosition(service.services.storage.database));
      const rows = (await database.query('SELECT object_id, event_type, event_id, source_event_id FROM webhook_deliveries WHERE endpoint_id = $1', [webhookId])).rows;
      expect(rows.map((r) => r.object_id)).not.to.include(before);
      expect(rows.filter((r) => r.object_id === after)).to.have.length(3);
      for (const row of rows) expect(row.event_id).to.equal(webhookEventId(row.source_event_id, row.event_type));

      // The emitter's code over the whole feed again, into fresh tables of its own: every delivery it emits is one
      // the outbox has (same endpoint, event, type), so it adds none.
      const count = await outboxCount();
      const schema = `${database.schema}__webhooks_replay`;
      await createFreshSchema(database.db, webhooksProjector, schema, database.schema);
      const events = (await allEvents()).filter((e) => webhooksProjector.handles.includes(e.type));
      await database.db.transaction().execute(async (trx) => {
        await sql.raw(`SET LOCAL search_path TO ${searchPathOf(schema, database.schema)}`).execute(trx);
        await webhooksProjector.apply(trx, events);
        const replayed = await sql<{ n: string }>`SELECT count(*) AS n FROM webhook_events WHERE client_id = ${tenants.alice.clientId}`.execute(trx);
        expect(Number(replayed.rows[0]!.n)).to.be.greaterThan(0);
      });
      await database.query(`DROP SCHEMA "${schema}" CASCADE`);
      expect(await outboxCount()).to.equal(count);
      await dispatcher().runOnce();
      await until(() => hooks.received.length === 3, { what: 'the three deliveries' });
      expect(await dispatcher().runOnce(), 'nothing else is due').to.equal(0);
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });

    it('deliveries a batch makes for an endpoint it then deletes are dropped with it, not left pending for good', async () => {
      const hooks = await receiver();
      const webhookId = await register(hooks.url);
      const paymentId = await settledPayment();
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
      await service.services.readYourWrites(await newestEventPosition(service.services.storage.database));
      const events = await allEvents();
      const ofEndpoint = (type: string) => events.find((e) => e.type === type && (e.data as { endpointId?: string }).endpointId === webhookId)!;
      // The same history for an endpoint of another id, as one batch: registered, the payment's events, deleted.
      const other = `${webhookId}-one-batch`;
      const renamed = (event: RecordedEvent) => ({ ...event, data: { ...(event.data as object), endpointId: other } });
      const batch = [
        renamed(ofEndpoint('WebhookEndpointRegistered')),
        ...events.filter((e) => webhooksProjector.handles.includes(e.type) && (e.data as { paymentId?: string }).paymentId === paymentId),
        renamed(ofEndpoint('WebhookEndpointDeleted')),
      ];
      const schema = `${database.schema}__webhooks_one_batch`;
      await createFreshSchema(database.db, webhooksProjector, schema, database.schema);
      try {
        await database.db.transaction().execute(async (trx) => {
          await sql.raw(`SET LOCAL search_path TO ${searchPathOf(schema, database.schema)}`).execute(trx);
          await webhooksProjector.apply(trx, batch);
        });
      } finally {
        await database.query(`DROP SCHEMA "${schema}" CASCADE`);
      }
      const rows = (await database.query('SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = $1', [other])).rows;
      expect(rows).to.have.length(3);
      for (const row of rows) expect(row).to.deep.equal({ status: 'DROPPED', last_error: 'the webhook was deleted' });
    });

    it('two dispatchers on one outbox never send one delivery twice at once, and send each once', async () => {
      // On Postgres each has a pool of its own, as two processes would; PGlite is one session, shared.
      const second = target.name === 'postgres'
        ? await openDatabase({ kind: 'postgres', connectionString: process.env.DATABASE_URL!, poolSize: 8 }, { schema: database.schema })
        : database;
      try {
        const hooks = await receiver(() => 200, { answerDelayMs: 5 });
        const endpoints = [await register(hooks.url), await register(hooks.url), await register(hooks.url)];
        const deliveries: string[] = [];
        for (let n = 0; n < 40; n++) {
          for (const endpoint of endpoints) deliveries.push(await enqueueTestPing(database, endpoint, tenants.alice.clientId, new Date()));
        }
        const attemptsBy = { one: 0, two: 0 };
        const one = dispatcher({ owner: 'one', onAttempt: () => { attemptsBy.one++; } });
        const two = dispatcher({ owner: 'two', database: second, onAttempt: () => { attemptsBy.two++; } });
        one.start();
        two.start();
        // A dispatcher tells of an attempt once its record is back, a moment after the row shows it: both are waited for.
        await until(async () => Number((await database.query(
          `SELECT count(*) AS n FROM webhook_deliveries WHERE delivery_id = ANY($1) AND status = 'DELIVERED'`, [deliveries])).rows[0].n) === deliveries.length
          && attemptsBy.one + attemptsBy.two >= deliveries.length,
        { what: 'every delivery delivered' });
        const ids = hooks.received.map((r) => String(r.headers['x-webhook-id']));
        expect(ids).to.have.length(deliveries.length);
        expect(new Set(ids).size).to.equal(deliveries.length);
        expect(hooks.maxInFlightPerId).to.equal(1);
        expect(attemptsBy.one + attemptsBy.two).to.equal(deliveries.length);
        for (const endpoint of endpoints) await service.request('DELETE', `/webhooks/${endpoint}`, { headers: asAlice });
      } finally {
        if (second !== database) await second.close();
      }
    });

    it('a clock moved past the leases while attempts are in flight: each delivery is sent once, by one dispatcher, and recorded', async () => {
      const second = target.name === 'postgres'
        ? await openDatabase({ kind: 'postgres', connectionString: process.env.DATABASE_URL!, poolSize: 4 }, { schema: database.schema })
        : database;
      try {
        const held = 6;
        // The first six requests are held open until the test answers them; any later one is answered at once.
        const hooks = await receiver((_request, index) => (index < held ? 'hang' : 200));
        const probe = await receiver();
        const endpoints = [await register(hooks.url), await register(hooks.url)];
        const probeEndpoint = await register(probe.url);
        const deliveries: string[] = [];
        for (let n = 0; n < held / endpoints.length; n++) {
          for (const endpoint of endpoints) deliveries.push(await enqueueTestPing(database, endpoint, tenants.alice.clientId, new Date()));
        }
        let ahead = 0;
        const now = () => new Date(Date.now() + ahead);
        const outcomes: string[] = [];
        const one = dispatcher({ owner: 'one', now, onAttempt: (_claimed, _result, outcome) => outcomes.push(outcome) });
        one.start();
        await until(() => hooks.open === held, { what: 'every delivery in flight' });

        // The service's clock jumps past every lease (as a test clock does, or a machine's clock stepped forward).
        ahead = 2 * CLAIM_LEASE_MS;
        const two = dispatcher({ owner: 'two', database: second, now });
        expect(await two.runOnce(), 'another dispatcher, its clock as far ahead, finds every claim still leased').to.equal(0);
        // A claim by the running dispatcher after the jump: the probe's delivery reaches its receiver.
        await enqueueTestPing(database, probeEndpoint, tenants.alice.clientId, now());
        await until(() => probe.received.length === 1, { what: 'a claim after the clock moved' });
        expect(hooks.received, 'nothing sent again while its first attempt is in flight').to.have.length(held);

        for (const request of hooks.received) request.answer(200);
        await until(() => outcomes.length >= held + 1, { what: 'every attempt recorded' });
        expect(outcomes.filter((outcome) => outcome !== 'delivered'), 'no attempt lost its lease').to.deep.equal([]);
        const recorded = await database.query(`SELECT status, attempts FROM webhook_deliveries WHERE delivery_id = ANY($1)`, [deliveries]);
        expect(recorded.rows).to.deep.equal(deliveries.map(() => ({ status: 'DELIVERED', attempts: 1 })));
        expect(new Set(hooks.received.map((r) => String(r.headers['x-webhook-id'])))).to.deep.equal(new Set(deliveries));
        expect(hooks.received).to.have.length(held);
        expect(hooks.maxInFlightPerId).to.equal(1);
        for (const endpoint of [...endpoints, probeEndpoint]) await service.request('DELETE', `/webhooks/${endpoint}`, { headers: asAlice });
      } finally {
        if (second !== database) await second.close();
      }
    });

    it('refuses a lease that an attempt could outlast', () => {
      expect(() => testDispatcher(service.services, { leaseMs: CLAIM_LEASE_MS - 1 })).to.throw(RangeError, /an attempt \(10000 ms\)/);
      expect(() => testDispatcher(service.services, { leaseMs: 25_000, timeoutMs: 5_000 })).not.to.throw();
      expect(() => testDispatcher(service.services, { leaseMs: 20_000, timeoutMs: 5_000 })).to.throw(RangeError, /a wait for a slot/);
    });

    it('a dispatcher killed in the middle of a delivery leaves it to another, which sends it again once the lease runs out', async () => {
      let first = true;
      const hooks = await receiver(() => {
        if (!first) return 200;
        first = false;
        return 'hang';
      });
      const webhookId = await register(hooks.url);
      const delivery = await enqueueTestPing(database, webhookId, tenants.alice.clientId, new Date());
      if (target.name === 'postgres') {
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/dispatcherProcess.ts'], {
          env: { ...process.env, DATABASE_SCHEMA: database.schema }, stdio: ['ignore', 'pipe', 'inherit'],
        });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        try {
          await until(() => hooks.received.length === 1, { what: 'the child process sending the delivery' });
        } finally {
          child.kill('SIGKILL');
        }
        expect(await exited).to.equal(null);
      } else {
        // PGlite is one process's database: no second process can share it. What a process killed mid-delivery
        // leaves is what is made here: its claim, leased to it, and a request the receiver got but never answered.
        await database.query(`UPDATE webhook_deliveries SET lease_token = 'dead-process:1',
          lease_expires_at = now() + make_interval(secs => $2::double precision / 1000) WHERE delivery_id = $1`, [delivery, CLAIM_LEASE_MS]);
        // Never answered; it ends when the receiver closes.
        void fetch(hooks.url, { method: 'POST', body: '{}', headers: { 'x-webhook-id': delivery } }).catch(() => undefined);
        await until(() => hooks.received.length === 1, { what: 'the request of the dead dispatcher' });
      }
      expect(await dispatcher().runOnce(), 'the lease of the dead dispatcher still holds').to.equal(0);
      // Leases run on the database's clock: a dispatcher whose clock is past the lease does not end it either.
      expect(await dispatcher({ now: () => new Date(Date.now() + CLAIM_LEASE_MS + 1_000) }).runOnce()).to.equal(0);
      // The lease runs out (moved to the database's now, as CLAIM_LEASE_MS passing would).
      await database.query('UPDATE webhook_deliveries SET lease_expires_at = now() WHERE delivery_id = $1', [delivery]);
      expect(await dispatcher().runOnce()).to.equal(1);
      const row = (await database.query('SELECT status, attempts FROM webhook_deliveries WHERE delivery_id = $1', [delivery])).rows[0];
      expect(row).to.deep.equal({ status: 'DELIVERED', attempts: 1 });
      expect(hooks.received.map((r) => r.headers['x-webhook-id'])).to.deep.equal([delivery, delivery]);
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });

    it('a version bump rebuilds the emitter from zero without sending history, even with a mapping that now emits more', async () => {
      const hooks = await receiver();
      const webhookId = await register(hooks.url);
      await settledPayment();
      const run = dispatcher();
      run.start();
      await until(() => hooks.received.length === 3, { what: 'the deliveries before the bump' });
      const count = await outboxCount();

      // The next version also sends purchase.attempted for every payment created: history must not get it.
      const attempted: Mapping<'PaymentCreated'> = (event, facts) => {
        const mapped = webhookMappings.PaymentCreated!(event, facts);
        const f = mapped.facts!;
        return { ...mapped, emissions: [{ id: webhookEventId(event.id, 'purchase.attempted'), eventType: 'purchase.attempted', clientId: f.clientId,
          objectId: f.id, sequence: Number(event.revision) + 1, occurredAt: f.settledAt ?? new Date(0).toISOString(),
          body: JSON.stringify({ eventType: 'purchase.attempted', id: f.id }) }] };
      };
      const bumped = createWebhooksProjector(webhooksProjector.version + 1, { ...webhookMappings, PaymentCreated: attempted });
      const store = new PostgresEventStore(database, { upcasters: storedEvents.upcasters });
      const rebuild = new ProjectionDaemon(database, store, { owner: 'rebuild', idlePollMs: 20 });
      rebuild.addProjector(bumped);
      rebuild.start();
      try {
        await until(async () => (await database.query(
          `SELECT status FROM projection_state WHERE name = 'webhooks' AND version = $1`, [bumped.version])).rows[0]?.status === 'active', { what: 'the next version active' });
        expect(await outboxCount(), 'no delivery added by the rebuild').to.equal(count);
        // From now on the next version emits, and the new type reaches the endpoint for new payments.
        const fresh = await settledPayment();
        await until(() => hooks.received.some((r) => r.body.eventType === 'purchase.attempted' && r.body.id === fresh), { what: 'the new type for a new payment' });
        expect(hooks.received.filter((r) => r.body.eventType === 'purchase.attempted')).to.have.length(1);
      } finally {
        await rebuild.stop();
        await store.close();
      }
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });
  });
}
