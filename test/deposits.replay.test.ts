/**
 * Replay of deposits: matched and unassigned deposits of two clients, assigned PAID, UNDERPAID and OVERPAID,
 * one refused by a blocked account, one refunded (settled, failed, in progress), some left waiting (inside and
 * outside the urgent window) and some expired (their refunds to the originators issued); then every read model
 * rebuilt from zero by a version bump of every projector, and the deposits, the list, the widget, the payments,
 * the refunds and every balance compared with what was answered before.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { comparePositions } from '../src/eventstore/position.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import type { Projector } from '../src/projection/projector.ts';
import { ProjectionStateStore } from '../src/projection/projectionState.ts';
import { allProjectors, registered } from '../src/contexts.ts';
import { createLedgerProjector, LEDGER_PROJECTOR_NAME } from '../projections/ledger.ts';
import { depositDecider } from '../src/deposits/decider.ts';
import { finishAssignment } from '../src/deposits/handlers.ts';
import { expireUnassignedDeposits } from '../src/deposits/jobs.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { refundNotificationSignature } from '../src/payments/refunds/routes.ts';
import { handleCommand } from '../src/eventstore/commandHandler.ts';
import { paymentStream } from '../src/payments/events.ts';
import { toDecimal } from '../src/domain/money.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type Credentials, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'replay-provider-secret';
const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET, READ_YOUR_WRITES_TIMEOUT_MS: '60000' };
const HOUR_MS = 60 * 60 * 1000;

function bumped(projector: Projector): Projector {
  return projector.name === LEDGER_PROJECTOR_NAME ? createLedgerProjector(projector.version + 1, registered.postings) : { ...projector, version: projector.version + 1 };
}

for (const target of databaseTargets()) {
  describe(`replay of deposits: read models rebuilt from the event store: ${target.name}`, function () {
    this.timeout(300_000);
    let database: Database;
    let service: TestService;
    let nowMs = Date.now();
    // Still between the captures, so hoursRemaining is the same before and after the rebuild.
    const clock: Runtime = { now: () => new Date(nowMs), newId: () => randomUUID() };
    const clients: Array<{ credentials: Credentials; deposits: string[] }> = [];
    let captured: Record<string, any>;
    let rebuilt: Record<string, any>;
    let rebuild: ProjectionDaemon | null = null;
    let rebuildStore: PostgresEventStore | null = null;

    const ok = (response: ApiResponse, what: string) => {
      expect(response.status, `${what}: ${response.text}`).to.be.within(200, 299);
      return response.body as Record<string, any>;
    };

    async function populate(name: string, index: number): Promise<void> {
      const credentials = await service.createClient(name);
      const headers = await service.as(credentials);
      const call = (method: string, path: string, body?: unknown) => service.request(method, path, { headers, body });
      const deposits: string[] = [];
      clients.push({ credentials, deposits });
      const org = ok(await call('POST', '/identities', { type: 'ORGANIZATION', name, country: 'ARG' }), 'org').id;
      const open = async (currency: string) => ok(await call('POST', '/accounts', { identityId: org, type: 'CHECKING', currency }), 'account');
      const [ars, usd, blocked] = [await open('ARS'), await open('USD'), await open('ARS')];
      let sequence = 0;
      const deposit = async (reference: string, amount: string, currency: 'ARS' | 'USD' = 'ARS', who = `${index}${sequence % 3}`) => {
        const body = { clientId: credentials.clientId, depositId: `${name}-${++sequence}`, reference, amount, currency,
          originator: { firstName: `First${who}`, lastName: `Last${who}`, documentNumber: `DOC-${who}` } };
        const id = ok(await service.request('POST', '/payments/deposits', { body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) } }), 'deposit').id;
        deposits.push(id);
        return id as string;
      };
      await deposit(ars.accountNumber, '2000.00');
      await deposit(usd.accountNumber, '15.00', 'USD');
      const assignedIds: string[] = [];
      for (const expectedAmount of [undefined, '6000.00', '4000.00']) {
        const id = await deposit('unknown', '5000.00');
        ok(await call('POST', `/payments/${id}/assign`, { accountId: ars.id, ...(expectedAmount ? { expectedAmount } : {}) }), 'assign');
        assignedIds.push(id);
      }
      // Refunds of an assigned deposit: one paid out, one failed, one in progress.
      for (const [amount, outcome] of [['1000.00', 'SETTLED'], ['500.00', 'FAILED'], ['700.00', null]] as const) {
        const refundId = ok(await call('POST', `/payments/${assignedIds[0]}/refund`, { amount }), 'refund').id as string;
        if (outcome) {
          ok(await service.request('POST', '/refunds/notifications', { body: { refundId, outcome,
            signature: refundNotificationSignature(PROVIDER_SECRET, refundId, outcome) } }), 'refund notification');
        }
      }
      ok(await call('POST', `/payments/${await deposit('unknown', '25.00', 'USD')}/assign`, { accountId: usd.id, expectedAmount: '20.00' }), 'assign usd');
      // Refused by the account blocked before the credit: the deposit waits again.
      ok(await call('PATCH', `/accounts/${blocked.id}`, { status: 'BLOCKED' }), 'block');
      const refused = await deposit('unknown', '1500.00');
      await handleCommand(service.services.storage.store, paymentStream(refused), depositDecider, {
        type: 'RequestAssignment', tenant: { clientId: credentials.clientId }, now: clock.now(), expectedAmount: null,
        target: { accountId: blocked.id, accountNumber: blocked.accountNumber, identityId: org } }, { clientId: credentials.clientId });
      await finishAssignment(service.services, refused, { clientId: credentials.clientId });
      // Created 43 hours ago (urgent now), 47 and 49 hours ago (expired by the job), and now.
      for (const [ago, amount] of [[43, '1100.00'], [49, '1200.00'], [49.5, '1300.00']] as const) {
        nowMs -= ago * HOUR_MS;
        try {
          await deposit('unknown', amount);
        } finally {
          nowMs += ago * HOUR_MS;
        }
      }
      await deposit('unknown', '1400.00');
      await deposit('unknown', '30.00', 'USD');
    }

    async function capture(): Promise<Record<string, unknown>> {
      const answers: Record<string, unknown> = {};
      for (const { credentials, deposits } of clients) {
        const headers = await service.as(credentials);
        const get = async (path: string) => {
          const response = await service.request('GET', path, { headers });
          return { status: response.status, body: response.body };
        };
        answers[credentials.name] = {
          widget: await get('/accounts/unassigned'),
          widgetUsd: await get('/accounts/unassigned?currency=USD'),
          unassigned: await get('/payments/unassigned?limit=500'),
          urgent: await get('/payments/unassigned?expiresWithin=6h'),
          payments: await get('/payments?limit=500'),
          deposits: Object.fromEntries(await Promise.all(deposits.map(async (id) => [id, await get(`/payments/${id}`)]))),
          accounts: await get('/accounts?limit=500'),
          refunds: await get('/refunds?limit=500'),
          refundSummaries: Object.fromEntries(await Promise.all(deposits.map(async (id) => [id, await get(`/payments/${id}/refunds`)]))),
          refundChildren: await get('/payments?type=REFUND&limit=500'),
        };
      }
      const sql = async (text: string) => (await database.query(text)).rows;
      return {
        answers,
        deposits: await sql('SELECT * FROM deposits ORDER BY payment_id'),
        paymentCounts: await sql('SELECT client_id, dimension, value, n::integer AS n FROM payment_counts ORDER BY client_id, dimension, value'),
        refunds: await sql('SELECT * FROM refunds ORDER BY refund_id'),
        accountBalances: await sql(`SELECT account_id, currency, balance::text, available_funds::text, held::text, is_system
          FROM account_balances ORDER BY account_id, currency`),
        trialBalance: await sql('SELECT currency, balance_sum::text, accounts, balanced FROM trial_balance ORDER BY currency'),
        entryLines: await sql(`SELECT entry_id, occurred_at, currency, description, source_event_id, client_id, line_no, account_id,
          amount::text FROM ledger_entry_lines ORDER BY entry_id, line_no`),
      };
    }

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { runtime: clock, env });
      await populate('Ada', 1);
      await populate('Bea', 2);
      expect((await expireUnassignedDeposits(service.services)).expired).to.equal(2 * clients.length);
      captured = await capture();
    });
    after(async () => {
      await rebuild?.stop();
      await rebuildStore?.close();
      await service?.close();
      await database?.close();
    });

    it('the mix reached every state: matched, assigned three ways, refunded, refused and waiting, urgent, expired', () => {
      const ada = captured.answers.Ada;
      const statuses = Object.values(ada.deposits as Record<string, { body: { status: string; reconciliationStatus: string | null } }>)
        .map((d) => `${d.body.status}:${d.body.reconciliationStatus}`);
      expect(statuses.filter((s) => s === 'SETTLED:null')).to.have.length(2);
      for (const status of ['PAID', 'UNDERPAID', 'OVERPAID']) expect(statuses).to.include(`SETTLED:${status}`);
      expect(statuses.filter((s) => s === 'EXPIRED:null')).to.have.length(2);
      expect(ada.widget.body).to.include({ currency: 'ARS', count: 3, totalAmount: '4000.00' });
      expect(ada.widget.body.urgent).to.have.length(1);
      expect(ada.widgetUsd.body).to.include({ currency: 'USD', count: 1, totalAmount: '30.00' });
      expect(ada.urgent.body.pagination.total).to.equal(1);
      // Refunds of an assigned deposit in three states, and the expired deposits' refunds to their originators.
      expect(ada.refunds.body.refunds.map((r: { status: string }) => r.status).sort()).to.deep.equal(['FAILED', 'RECEIVED', 'RECEIVED', 'RECEIVED', 'SETTLED']);
      expect(ada.refundChildren.body.pagination.total).to.equal(5);
      for (const row of captured.trialBalance as Array<{ currency: string; balanced: boolean }>) expect(row.balanced, row.currency).to.equal(true);
    });

    it('the kept totals of the payment lists are the rows counted, by client and by each filter value', async () => {
      const { rows: counted } = await database.query(`
        SELECT p.client_id, d.dimension, d.value, count(*)::integer AS n
          FROM payments p, LATERAL (VALUES ('', ''), ('status', p.status), ('identity_id', p.identity_id),
                                           ('account_number', p.account_number), ('type', p.type)) AS d(dimension, value)
         WHERE d.value IS NOT NULL
         GROUP BY p.client_id, d.dimension, d.value ORDER BY p.client_id, d.dimension, d.value`);
      // Deposits assigned (their identity and account set), refund children (their parent's account copied in), expiries.
      expect(captured.paymentCounts).to.deep.equal(counted);
      expect(counted.filter((row) => row.dimension === 'account_number')).to.not.be.empty;
    });

    it('a version bump of every projector rebuilds from zero and reproduces deposits, their refunds, the widget and every balance exactly', async () => {
      const eventsBefore = await service.eventCount();
      const serving = service;
      service = undefined as unknown as TestService;
      await serving.close();
      const statesBefore = new Map((await new ProjectionStateStore(database).list()).map((s) => [s.name, s]));
      const projectors = allProjectors().map(bumped);
      rebuildStore = new PostgresEventStore(database);
      rebuild = new ProjectionDaemon(database, rebuildStore, { owner: 'deposits-rebuild', idlePollMs: 20, initialBackoffMs: 10, maxBackoffMs: 200 });
      for (const projector of projectors) rebuild.addProjector(projector);
      rebuild.start();
      const states = new ProjectionStateStore(database);
      await until(async () => {
        const rows = await states.list();
        return projectors.every((p) => {
          const row = rows.find((r) => r.name === p.name && r.version === p.version);
          return row?.status === 'active' && row.checkpoint !== null && comparePositions(row.checkpoint, statesBefore.get(p.name)!.checkpoint!) >= 0;
        });
      }, { what: 'every bumped projector active and caught up', timeoutMs: 60_000 });
      for (const row of (await states.list()).filter((s) => s.kind === 'projector' && projectors.some((p) => p.name === s.name && p.version === s.version))) {
        expect(row.lastError, row.name).to.equal(null);
      }
      service = await startTestService(database, { runtime: clock, env });
      rebuilt = await capture();
      expect(await service.eventCount(), 'the rebuild appended nothing').to.equal(eventsBefore);

      expect(rebuilt.deposits).to.deep.equal(captured.deposits);
      expect(rebuilt.refunds).to.deep.equal(captured.refunds);
      expect(rebuilt.paymentCounts).to.deep.equal(captured.paymentCounts);
      expect(rebuilt.answers).to.deep.equal(captured.answers);
      expect(rebuilt.accountBalances).to.deep.equal(captured.accountBalances);
      expect(rebuilt.entryLines).to.deep.equal(captured.entryLines);
      expect(rebuilt.trialBalance).to.deep.equal(captured.trialBalance);
      for (const row of rebuilt.trialBalance as Array<{ currency: string; balance_sum: string }>) {
        expect(toDecimal(row.balance_sum).isZero(), row.currency).to.equal(true);
      }
    });
  });
}
