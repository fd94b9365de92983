/**
 * Retention of the webhooks' history (src/webhooks/retention.ts): with WEBHOOK_DELIVERY_RETENTION_DAYS=0, the purge
 * job removes delivered deliveries from the outbox and the delivery log and cuts the events feed, pending deliveries
 * stay, and GET /events refuses a cursor from before the cut (410); two processes purging at once delete each row
 * once.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { databaseTargets } from './support/targets.ts';
import type { TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { providerReceipts } from './support/payments.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { testDispatcher } from './support/webhooks.ts';
import { until } from './support/until.ts';
import type { Database } from '../src/db/database.ts';
import { purgeWebhookHistory } from '../src/webhooks/retention.ts';
import type { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { repoRoot } from './support/serviceProcess.ts';

const PROVIDER_SECRET = 'test-provider-secret';

for (const target of databaseTargets()) {
  describe(`webhook retention: purged deliveries and events feed: ${target.name}`, function () {
    this.timeout(180_000);
    let tenants: TwoTenants;
    let service: TestService;
    let database: Database;
    let asAlice: Record<string, string>;
    let identityId: string;
    let accountNumber: string;
    let sequence = 0;
    const receivers: Receiver[] = [];
    let dispatcher: WebhookDispatcher | null = null;

    const post = (path: string, body?: unknown) => service.request('POST', path, { headers: asAlice, body });
    const get = (path: string) => service.request('GET', path, { headers: asAlice });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const settledPayment = async () => {
      const id = (await post('/payments', {
        externalId: `retained-${++sequence}`, identityId, type: 'PURCHASE', accountNumber, currency: 'USD', totalAmount: '10.00',
      })).body.id as string;
      expect((await received(id)).body.status).to.equal('SETTLED');
      return id;
    };
    const outbox = async (endpointId: string) => (await database.query<{ status: string; n: string }>(
      'SELECT status, count(*)::text AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status ORDER BY status', [endpointId]))
      .rows.map((r) => `${r.status}:${r.n}`);
    const purge = () => purgeWebhookHistory(database, service.services.runtime.now(), service.services.config.webhookDeliveryRetentionDays);

    before(async () => {
      tenants = await startTwoTenants(target, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET, WEBHOOK_DELIVERY_RETENTION_DAYS: '0' } });
      ({ service, asAlice, database } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'USA' })).body.id;
      accountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body.accountNumber;
    });
    after(async () => {
      await dispatcher?.stop();
      await Promise.all(receivers.map((r) => r.close()));
      await tenants?.close();
    });

    it('purges delivered deliveries from the outbox and the delivery log and cuts the events feed; pending ones stay', async () => {
      const answering = await startReceiver(() => 200);
      const failing = await startReceiver(() => 500);
      receivers.push(answering, failing);
      const delivered = (await post('/webhooks', { url: answering.url })).body.id as string;
      const pending = (await post('/webhooks', { url: failing.url })).body.id as string;
      for (let i = 0; i < 2; i++) await settledPayment();
      const oldEvents = (await get('/events')).body;
      // Each settled payment: two status changes (RECEIVED, SETTLED) and payment.settled.
      expect(oldEvents.results).to.have.length(6);
      const midway = (await get('/events?limit=3')).body.next as string;

      dispatcher = testDispatcher(service.services);
      dispatcher.start();
      await until(async () => (await outbox(delivered)).join() === 'DELIVERED:6', { what: 'the answering endpoint has every delivery' });
      await until(() => failing.received.length >= 6, { what: 'the failing endpoint was tried' });
      await dispatcher.stop();
      dispatcher = null;
      expect(await outbox(pending)).to.deep.equal(['PENDING:6']);
      expect((await get(`/webhooks/${delivered}/deliveries`)).body.pagination.total).to.equal(6);
      const someDelivery = (await get(`/webhooks/${delivered}/deliveries`)).body.results[0].id as string;

      const result = await purge();
      expect(result).to.deep.equal({ deliveries: 6, events: 6 });
      expect(await outbox(delivered)).to.deep.equal([]);
      expect(await outbox(pending)).to.deep.equal(['PENDING:6']);
      expect((await get(`/webhooks/${delivered}/deliveries`)).body.pagination.total).to.equal(0);
      const log = (await get(`/webhooks/${pending}/deliveries`)).body;
      expect(log.pagination.total).to.equal(6);
      expect(log.results.every((d: { status: string }) => d.status === 'PENDING')).to.equal(true);
      const retry = await post(`/webhooks/${delivered}/deliveries/${someDelivery}/retry`);
      expect(retry.status).to.equal(404);
      expect(retry.body.message).to.match(/are purged/);
      // Again: nothing left to purge.
      expect(await purge()).to.deep.equal({ deliveries: 0, events: 0 });

      // The events feed: empty from its start, and a cursor from before the cut is refused, naming why.
      const fresh = (await get('/events')).body;
      expect(fresh.results).to.deep.equal([]);
      const gone = await get(`/events?cursor=${midway}`);
      expect(gone.status).to.equal(410);
      expect(gone.body).to.include({ statusCode: 410, error: 'invalidParam' });
      expect(gone.body.message).to.match(/^cursor: the events feed keeps the events of the last WEBHOOK_DELIVERY_RETENTION_DAYS; .*read again without a cursor/);
      expect((await get('/events?cursor=0-0-0')).status).to.equal(410);
      // The cut itself (the empty page's next, or the last event purged) is still a good cursor: what follows is there.
      const paymentId = await settledPayment();
      const after = (await get(`/events?cursor=${fresh.next}`)).body;
      expect(after.results.map((e: { payload: { transaction: { id: string } } }) => e.payload.transaction.id)).to.deep.equal([paymentId, paymentId, paymentId]);
      expect(fresh.next).to.equal(oldEvents.next);
      expect((await get(`/events?cursor=${oldEvents.next}`)).status).to.equal(200);
    });

    if (target.name === 'postgres') {
      it('two processes purging at once delete each delivered row once, and no pending one', async () => {
        const endpoint = (await post('/webhooks', { url: 'http://127.0.0.1:9/unused' })).body.id as string;
        const rows = 3_000;
        await database.query(`
          INSERT INTO webhook_deliveries (delivery_id, endpoint_id, client_id, event_id, source_event_id, event_type, body, status,
                                          created_at, next_attempt_at, delivered_at, dropped_at)
          SELECT 'bulk-' || n, $1, 'c', 'e-' || n, gen_random_uuid(), 'payment.settled', '{}',
                 CASE WHEN n % 10 = 0 THEN 'PENDING' WHEN n % 10 = 1 THEN 'DROPPED' ELSE 'DELIVERED' END,
                 now() - interval '1 day', CASE WHEN n % 10 = 0 THEN now() ELSE NULL END,
                 CASE WHEN n % 10 > 1 THEN now() - interval '1 hour' END, CASE WHEN n % 10 = 1 THEN now() - interval '1 hour' END
            FROM generate_series(1, ${rows}) AS n`, [endpoint]);
        // Every deletion, with the session that made it: a row deleted twice would be logged twice.
        await database.query('CREATE TABLE purge_log (delivery_id text NOT NULL, pid integer NOT NULL)');
        await database.query(`CREATE FUNCTION log_purge() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN INSERT INTO purge_log VALUES (OLD.delivery_id, pg_backend_pid()); RETURN OLD; END $$`);
        await database.query('CREATE TRIGGER purge_logged AFTER DELETE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION log_purge()');
        try {
          const purgers = [0, 1].map(() => spawn(process.execPath, ['--import', 'tsx', 'test/support/purgeProcess.ts'], {
            cwd: repoRoot, env: { ...process.env, DATABASE_SCHEMA: database.schema, PURGE_BATCH: '50' }, stdio: ['pipe', 'pipe', 'pipe'],
          }));
          const outputs = purgers.map((child) => {
            let text = '';
            child.stdout!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
            child.stderr!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
            return () => text;
          });
          const exits = purgers.map((child) => new Promise<number | null>((resolve) => child.once('exit', resolve)));
          await until(() => outputs.every((output) => output().includes('ready')), { what: 'both purgers connected', timeoutMs: 60_000 });
          for (const child of purgers) child.stdin!.write('go\n');
          expect(await Promise.all(exits), outputs.map((o) => o()).join('\n')).to.deep.equal([0, 0]);
          const deleted = outputs.map((output) => JSON.parse(output().split('\n').find((line) => line.startsWith('{'))!).deleted as number);
          const ended = rows - rows / 10;
          expect(deleted[0]! + deleted[1]!).to.equal(ended);
          const logged = (await database.query<{ n: string; ids: string }>(
            'SELECT count(*)::text AS n, count(DISTINCT delivery_id)::text AS ids FROM purge_log')).rows[0]!;
          expect(logged).to.deep.equal({ n: String(ended), ids: String(ended) });
          expect(await outbox(endpoint)).to.deep.equal([`PENDING:${rows / 10}`]);
        } finally {
          await database.query('DROP TRIGGER purge_logged ON webhook_deliveries');
          await database.query('DROP FUNCTION log_purge()');
          await database.query('DROP TABLE purge_log');
        }
      });
    }
  });
}
