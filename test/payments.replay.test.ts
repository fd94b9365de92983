/**
 * Replay: a realistic mix of clients and payments through every branch, then every read model rebuilt from
 * zero by the projectors' own mechanism (a version bump: each new version builds fresh tables from position
 * zero beside the serving one and takes over once caught up), and every answer compared with what was
 * answered before.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import type { AccountAdjustedData } from '../src/ledger/events.ts';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import { eventDataValidator } from '../src/storedEvents/validate.ts';
import { identityStream } from '../src/identities/events.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { toDecimal } from '../src/domain/money.ts';
import { expireDuePayments, runSettlementBatch } from '../src/payments/jobs.ts';
import { DECLINED_CARD } from '../src/payments/sandbox/triggers.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import type { Projector } from '../src/projection/projector.ts';
import { ProjectionStateStore, type ProjectionStateRow } from '../src/projection/projectionState.ts';
import { allProjectors, registered, storedEvents } from '../src/contexts.ts';
import { createLedgerProjector, LEDGER_PROJECTOR_NAME } from '../projections/ledger.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type Credentials, type TestService } from './support/testService.ts';
import { movableClock, providerReceipts, TEST_CARD as card } from './support/payments.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'replay-provider-secret';
const V2 = '24-04-2025';
/**
 * Read-your-writes as long as the service allows: what is captured must include every command sent (on a shared
 * Postgres cluster, a transaction open anywhere holds the feed back for a while).
 */
const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET, READ_YOUR_WRITES_TIMEOUT_MS: '60000' };
const pix = [{ type: 'PIX', pix: { key: 'payer@example.com' } }];
const fedNow = [{ type: 'FEDNOW', fedNow: { routingNumber: '021000021', accountNumber: '000123456789' } }];
const ach = [{ type: 'ACH', ach: { routingNumber: '021000021', accountNumber: '000123456789', accountHolder: 'Jane Doe' } }];
const etpay = [{ type: 'ETPAY', etpay: { bank: 'Banco Ejemplo' } }];

/** The next version of a projector: same tables and handlers, built from zero into a schema of its own. */
function bumped(projector: Projector): Projector {
  return projector.name === LEDGER_PROJECTOR_NAME
    ? createLedgerProjector(projector.version + 1, registered.postings)
    : { ...projector, version: projector.version + 1 };
}

/** One client's world: what it owns, and the status each of its payments must end in. */
interface ClientWorld {
  name: string;
  credentials: Credentials;
  headers: Record<string, string>;
  accounts: Record<string, string>;
  identities: string[];
  customers: string[];
  payments: Record<string, { id: string }>;
}

for (const target of databaseTargets()) {
  describe(`replay: every read model rebuilt from the event store: ${target.name}`, function () {
    this.timeout(300_000);
    let database: Database;
    let service: TestService;
    const clock = movableClock();
    const worlds: ClientWorld[] = [];
    let snapshotBefore: Record<string, any>;
    let snapshotAfter: Record<string, any> | undefined;
    let eventsBefore = 0;
    let statesBefore: ProjectionStateRow[] = [];
    let rebuild: ProjectionDaemon | null = null;
    let rebuildStore: PostgresEventStore | null = null;

    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const expectOk = (response: ApiResponse, what: string, status = 200) => {
      expect(response.status, `${what}: ${response.text}`).to.equal(status);
      return response.body as Record<string, any>;
    };

    /** Phase one of a client: identities, accounts, customers, payments up to where the jobs take over. */
    async function populate(name: string, index: number): Promise<{ world: ClientWorld; afterBatch: () => Promise<void> }> {
      const credentials = await service.createClient(name);
      const headers = await service.as(credentials);
      const post = (path: string, body?: unknown) => service.request('POST', path, { headers, body });
      const world: ClientWorld = { name, credentials, headers, accounts: {}, identities: [], customers: [], payments: {} };
      const org = expectOk(await post('/identities', { type: 'ORGANIZATION', name: `${name} Ltda`, country: 'BRA', email: `${name}@example.com` }), 'org', 201).id;
      const person = expectOk(await post('/identities', { type: 'USER', name: `${name} Person`, country: 'CHL' }), 'person', 201).id;
      world.identities.push(org, person);
      expectOk(await service.request('PATCH', `/identities/${person}`, { headers, body: { name: `${name} Persona` } }), 'rename');
      // the identity graph: a link recorded the earlier way (on the child's stream), then links, an unlink, a move,
      // and a linked child deleted, all decided on the client's graph stream
      const identity = async (label: string) =>
        expectOk(await post('/identities', { type: 'USER', name: `${name} ${label}` }), label, 201).id as string;
      const [kid, ward, leaving] = [await identity('Kid'), await identity('Ward'), await identity('Leaving')];
      world.identities.push(kid, ward, leaving);
      await service.services.storage.store.append(identityStream(ward), [{ type: 'IdentityParentSet',
        data: { identityId: ward, parentId: person, at: clock.now().toISOString() }, metadata: { clientId: credentials.clientId } }], 'stream_exists');
      const children = (method: string, parentId: string, ids: string[]) =>
        service.request(method, `/identities/${parentId}/children`, { headers, body: { children: ids } });
      expectOk(await children('POST', org, [kid, leaving]), 'link');
      expectOk(await children('DELETE', org, [kid]), 'unlink');
      expectOk(await children('POST', person, [kid]), 'move');
      expectOk(await service.request('DELETE', `/identities/${leaving}`, { headers }), 'delete a child');
      const open = async (label: string, identityId: string, currency: string) => {
        const account = expectOk(await post('/accounts', { identityId, type: 'CHECKING', currency, name: label }), label, 201);
        world.accounts[label] = account.id;
        return { id: account.id as string, number: account.accountNumber as string, identityId, currency };
      };
      const usd = await open('usd', org, 'USD');
      const brl = await open('brl', org, 'BRL');
      const clp = await open('clp', person, 'CLP');
      const blocked = await open('blocked', org, 'USD');
      const spare = await open('spare', person, 'USD');
      const closing = await open('closing', person, 'CLP');

      const customer = async (documentNumber: string, level?: string) => {
        const id = expectOk(await post('/customers', { documentNumber, firstName: `${name}-${documentNumber}` }), 'customer', 201).id as string;
        if (level) expectOk(await service.operator('POST', `/operator/customers/${id}/operation-level`, { operationLevel: level }), 'level');
        world.customers.push(id);
        return id;
      };
      const basic = await customer(`${index}001`);
      const full = await customer(`${index}002`, 'FULL');
      const inactive = await customer(`${index}003`, 'INACTIVE');
      expectOk(await service.request('PATCH', `/customers/${basic}`, { headers, body: { lastName: 'Souza' } }), 'customer update');
      expectOk(await post(`/customers/${full}/documents`, { type: 'ID_FRONT', url: 'https://example.com/id.png', contentType: 'image/png' }), 'customer document', 201);

      // operator adjustments: deposits, a correction, and an account taken back to zero and deleted
      const adjust = async (accountId: string, amount: string) =>
        expectOk(await service.operator('POST', `/operator/accounts/${accountId}/adjustments`, { amount, reason: 'replay test' }), 'adjust', 201);
      await adjust(usd.id, '500.00');
      await adjust(usd.id, '-25.5');
      await adjust(clp.id, '1000');
      await adjust(spare.id, '100');
      await adjust(spare.id, '-100');
      await adjust(closing.id, '5');
      await adjust(closing.id, '-5');
      expectOk(await service.request('DELETE', `/accounts/${closing.id}`, { headers }), 'delete');

      let sequence = 0;
      const create = async (label: string, account: { number: string; identityId: string; currency: string }, amount: string,
        extra: Record<string, unknown> = {}) => {
        const body = await expectOk(await post('/payments', {
          externalId: `${label}-${++sequence}`, identityId: account.identityId, accountNumber: account.number,
          totalAmount: amount, currency: account.currency, type: sequence % 2 ? 'PURCHASE' : 'PAYMENT', ...extra,
        }), `create ${label}`);
        world.payments[label] = { id: body.id };
        return body.id as string;
      };
      const move = async (id: string, step: 'authorized' | 'captured') => expectOk(await post(`/payments/${id}/${step}`), `${step} ${id}`);
      const cardThrough = async (id: string) => {
        await move(id, 'authorized');
        await move(id, 'captured');
        expectOk(await received(id), `receive ${id}`);
      };

      // card payments settled by the settlement batch
      await cardThrough(await create('cardUsd', usd, '100.00', { origins: [{ type: 'CARD', card }] }));
      await cardThrough(await create('cardBrl', brl, '55.00', { origins: [{ type: 'CARD', card }] }));
      await cardThrough(await create('cardClp', clp, '15000', { origins: [{ type: 'CARD', card }] }));
      // a T+2 push payment, also settled by the batch
      expectOk(await received(await create('achUsd', usd, '20.00', { origins: ach })), 'ach');
      // INSTANT push payments, settled on receipt
      expectOk(await received(await create('pixBrl', brl, '50.00', { origins: pix, description: 'pix order' })), 'pix');
      expectOk(await received(await create('fedNowUsd', usd, '12.34', { origins: fedNow })), 'fednow');
      expectOk(await received(await create('etpayClp', clp, '5000', { origins: etpay })), 'etpay');
      expectOk(await received(await create('plainUsd', spare, '7.00', { identityExternalId: `ext-${index}` })), 'plain');
      // paid in another currency: the exchange executes on settlement
      expectOk(await received(await create('exchange', usd, '40.00', { purchaseCurrency: 'BRL', origins: pix })), 'exchange');
      // the provider delivers one unit more than expected: UNSETTLED, AMOUNT_MISMATCH
      expectOk(await received(await create('mismatch', brl, '10.00', { origins: pix, description: 'sandbox:unsettled' })), 'mismatch');
      // to an account blocked after creation: INSTANT → UNSETTLED at once; card → UNSETTLED by the batch
      const toBlockedInstant = await create('blockedInstant', blocked, '20.00');
      const toBlockedCard = await create('blockedCard', blocked, '30.00', { origins: [{ type: 'CARD', card }] });
      await move(toBlockedCard, 'authorized');
      await move(toBlockedCard, 'captured');
      expectOk(await service.request('PATCH', `/accounts/${blocked.id}`, { headers, body: { status: 'BLOCKED' } }), 'block');
      expectOk(await received(toBlockedInstant), 'receive blocked instant');
      expectOk(await received(toBlockedCard), 'receive blocked card');
      // reviews: rejected (with a document), approved then settled by the batch; a FULL payer is never reviewed
      const rejected = await create('reviewRejected', usd, '1500.00', { customerId: basic, origins: [{ type: 'CARD', card }] });
      expectOk(await post(`/payments/${rejected}/documents`, { type: 'INVOICE', url: 'https://example.com/invoice.pdf' }), 'document', 201);
      expectOk(await service.operator('POST', `/operator/payments/${rejected}/review`, { decision: 'REJECTED' }), 'reject');
      const approved = await create('reviewApproved', usd, '2000.00', { origins: [{ type: 'CARD', card }] });
      expectOk(await service.operator('POST', `/operator/payments/${approved}/review`, { decision: 'APPROVED' }), 'approve');
      await cardThrough(approved);
      expectOk(await received(await create('fullPayer', usd, '5000.00', { customerId: full, origins: fedNow })), 'full payer');
      await create('inactivePayer', usd, '10.00', { customerId: inactive });
      const declined = await create('declined', usd, '10.00', { origins: [{ type: 'CARD', card: { ...card, number: DECLINED_CARD.number } }] });
      await move(declined, 'authorized');
      // left where they are
      await create('leftCreated', clp, '2500');
      await move(await create('leftAuthorized', brl, '33.00', { origins: [{ type: 'CARD', card }] }), 'authorized');
      await create('leftInReview', brl, '15.00', { origins: pix, description: 'sandbox:review please' });
      // to expire: by expiresAt, and by the exchange quote's end
      await create('expiresAt', usd, '9.99', { expiresAt: new Date(clock.now().getTime() + 60_000).toISOString() });
      await create('quoteExpired', usd, '10.00', { purchaseCurrency: 'BRL', description: 'sandbox:expire-quote' });
      // captured now, received only after the batch: stays RECEIVED
      const late = await create('leftReceived', brl, '77.00', { origins: [{ type: 'CARD', card }] });
      await move(late, 'authorized');
      await move(late, 'captured');

      const afterBatch = async () => {
        expectOk(await received(late), 'late receive');
      };
      return { world, afterBatch };
    }

    const expectedStatuses: Record<string, string> = {
      cardUsd: 'SETTLED', cardBrl: 'SETTLED', cardClp: 'SETTLED', achUsd: 'SETTLED', pixBrl: 'SETTLED', fedNowUsd: 'SETTLED',
      etpayClp: 'SETTLED', plainUsd: 'SETTLED', exchange: 'SETTLED', mismatch: 'UNSETTLED', blockedInstant: 'UNSETTLED',
      blockedCard: 'UNSETTLED', reviewRejected: 'FAILED', reviewApproved: 'SETTLED', fullPayer: 'SETTLED', inactivePayer: 'FAILED',
      declined: 'FAILED', leftCreated: 'CREATED', leftAuthorized: 'AUTHORIZED', leftInReview: 'REQUIRES_REVIEW',
      expiresAt: 'EXPIRED', quoteExpired: 'EXPIRED', leftReceived: 'RECEIVED',
    };

    /** Every page of a list, walked with a small page size. */
    async function allPages(path: string, headers: Record<string, string>): Promise<unknown[]> {
      const results: unknown[] = [];
      for (let offset = 0; ; offset += 7) {
        const page = expectOk(await service.request('GET', `${path}${path.includes('?') ? '&' : '?'}limit=7&offset=${offset}`, { headers }), path);
        results.push(...page.results);
        if (page.pagination.next >= page.pagination.total) return results;
      }
    }

    /** Everything a reader can see: the API answers of every client, and the finance views. */
    async function capture(): Promise<Record<string, unknown>> {
      const answer = (r: ApiResponse) => ({ status: r.status, body: r.body });
      const clients: Record<string, unknown> = {};
      for (const world of worlds) {
        const headers = await service.as(world.credentials);
        const get = async (path: string) => answer(await service.request('GET', path, { headers }));
        const ids = Object.values(world.payments).map((p) => p.id);
        clients[world.name] = {
          me: await get('/me'),
          paymentsV1: await allPages('/payments', headers),
          paymentsV2: await allPages('/payments', { ...headers, 'service-api-version': V2 }),
          paymentsByUpdate: await allPages('/payments?sort=updatedAt:asc', headers),
          payments: Object.fromEntries(await Promise.all(ids.map(async (id) => [id, {
            detail: await get(`/payments/${id}`), customer: await get(`/payments/${id}/customer`),
          }]))),
          accounts: await allPages('/accounts', headers),
          account: Object.fromEntries(await Promise.all(Object.entries(world.accounts).map(async ([label, id]) => [label, await get(`/accounts/${id}`)]))),
          identities: await allPages('/identities', headers),
          identity: Object.fromEntries(await Promise.all(world.identities.map(async (id) => [id, await get(`/identities/${id}`)]))),
          customers: await allPages('/customers', headers),
          customer: Object.fromEntries(await Promise.all(world.customers.map(async (id) => [id, await get(`/customers/${id}`)]))),
        };
      }
      const sql = async (text: string) => (await database.query(text)).rows;
      return {
        clients,
        accountBalances: await sql(`SELECT account_id, currency, balance::text, available_funds::text, held::text, is_system, updated_at
          FROM account_balances ORDER BY account_id, currency`),
        trialBalance: await sql(`SELECT currency, balance_sum::text, accounts, balanced FROM trial_balance ORDER BY currency`),
        entryLines: await sql(`SELECT entry_id, occurred_at, currency, description, source_event_id, client_id, line_no, account_id,
          amount::text, is_system FROM ledger_entry_lines ORDER BY entry_id, line_no`),
      };
    }

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { runtime: clock, env });
      const populated = await Promise.all(['alice', 'bob', 'carol'].map((name, i) => populate(name, i + 1)));
      worlds.push(...populated.map((p) => p.world));
      const batch = await runSettlementBatch(service.services);
      // per client: cardUsd, cardBrl, cardClp, achUsd, reviewApproved settled; blockedCard unsettled
      expect(batch).to.include({ settled: 5 * worlds.length, unsettled: worlds.length, skipped: 0 });
      for (const p of populated) await p.afterBatch();
      clock.advance(61_000);
      expect(await expireDuePayments(service.services)).to.deep.equal({ expired: 2 * worlds.length, skipped: 0 });

      snapshotBefore = await capture();
      eventsBefore = await service.eventCount();
      statesBefore = await new ProjectionStateStore(database).list();
    });
    after(async () => {
      await rebuild?.stop();
      await rebuildStore?.close();
      await service?.close();
      await database?.close();
    });

    it('the mix went through every branch before the rebuild', () => {
      const captured = snapshotBefore;
      for (const world of worlds) {
        const answers = captured.clients[world.name];
        for (const [label, { id }] of Object.entries(world.payments)) {
          expect(answers.payments[id].detail.body.status, `${world.name} ${label}`).to.equal(expectedStatuses[label]);
        }
        expect(Object.keys(world.payments).sort()).to.deep.equal(Object.keys(expectedStatuses).sort());
        expect(answers.paymentsV1).to.have.length(Object.keys(expectedStatuses).length);
        expect(answers.account.closing.status).to.equal(404);
        expect(answers.account.usd.body.balance).not.to.equal('0.00');
        const [org, person, kid, ward, leaving] = world.identities;
        expect(answers.identity[person!].body.children.map((c: { id: string }) => c.id)).to.have.members([ward, kid]);
        expect(answers.identity[org!].body.children).to.deep.equal([]);
        expect(answers.identity[leaving!].status).to.equal(404);
      }
      const detail = (world: ClientWorld, label: string) => snapshotBefore.clients[world.name].payments[world.payments[label]!.id].detail.body;
      expect(detail(worlds[0]!, 'blockedCard')).to.include({ unsettledReason: 'ACCOUNT_NOT_ACTIVE' });
      expect(detail(worlds[0]!, 'blockedCard').settlementBatchId).to.be.a('string');
      expect(detail(worlds[0]!, 'mismatch')).to.include({ unsettledReason: 'AMOUNT_MISMATCH' });
      expect(detail(worlds[0]!, 'exchange').exchange).to.include({ status: 'EXECUTED' });
      expect(detail(worlds[0]!, 'reviewRejected')).to.include({ failureReason: 'REVIEW_REJECTED', reviewDocuments: 1 });
      expect(captured.trialBalance.map((r: { currency: string }) => r.currency)).to.include.members(['BRL', 'CLP', 'USD']);
      expect(statesBefore.filter((s) => s.kind === 'projector').map((s) => [s.name, s.version, s.status]).sort())
        .to.deep.equal(allProjectors().map((p) => [p.name, p.version, 'active']).sort());
    });

    it('every event the mix appended has the data its type\'s stored contract declares', async () => {
      const problemOf = eventDataValidator(storedEvents);
      const problems: string[] = [];
      for (let after: Position | null = null; ;) {
        const page = await service.services.storage.store.readAll({ after, limit: 1000 });
        if (page.length === 0) break;
        for (const event of page) {
          const problem = problemOf(event.type, event.data);
          if (problem) problems.push(`${event.stream}@${event.revision}: ${problem}`);
        }
        after = page.at(-1)!.position;
      }
      expect(problems).to.deep.equal([]);
    });

    it('the trial balance is zero in every currency', async () => {
      expect(snapshotBefore.trialBalance, 'currencies with ledger lines').to.have.length.at.least(3);
      for (const row of snapshotBefore.trialBalance as Array<{ currency: string; balance_sum: string; balanced: boolean }>) {
        expect(toDecimal(row.balance_sum).isZero(), `${row.currency} sums to ${row.balance_sum}`).to.equal(true);
        expect(row.balanced, row.currency).to.equal(true);
      }
    });

    it('a version bump of every projector rebuilds all read models from position zero, and the new versions take over', async () => {
      // The serving instance stops; a new one runs the next version of every projector over the same database.
      const serving = service;
      service = undefined as unknown as TestService;
      await serving.close();
      // Stored checkpoints as the serving instance left them: on stop it stores the last one it reached.
      statesBefore = await new ProjectionStateStore(database).list();
      const projectors = allProjectors().map(bumped);
      const schemas = async () => (await database.query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1`, [`${database.schema}\\_\\_%`])).rows.map((r) => r.nspname);
      expect(await schemas()).to.deep.equal(allProjectors().map((p) => `${database.schema}__${p.name}_v${p.version}`).sort());

      rebuildStore = new PostgresEventStore(database);
      rebuild = new ProjectionDaemon(database, rebuildStore, { owner: 'replay-rebuild', idlePollMs: 20, initialBackoffMs: 10, maxBackoffMs: 200 });
      for (const projector of projectors) rebuild.addProjector(projector);
      rebuild.start();
      const states = new ProjectionStateStore(database);
      const previous = new Map(statesBefore.map((s) => [s.name, s]));
      await until(async () => {
        const rows = await states.list();
        return projectors.every((p) => {
          const row = rows.find((r) => r.name === p.name && r.version === p.version);
          const old = previous.get(p.name)!;
          return row?.status === 'active' && row.checkpoint !== null && comparePositions(row.checkpoint, old.checkpoint!) >= 0;
        });
      }, { what: 'every bumped projector active and caught up', timeoutMs: 60_000 });

      const rows = (await states.list()).filter((s) => s.kind === 'projector');
      for (const p of projectors) {
        const fresh = rows.find((r) => r.name === p.name && r.version === p.version)!;
        const old = rows.find((r) => r.name === p.name && r.version === p.version - 1)!;
        expect(old.status, `${p.name} v${old.version}`).to.equal('retired');
        expect(fresh.lastError, p.name).to.equal(null);
        // the same feed, so the same place in it and the same number of events applied
        expect(comparePositions(fresh.checkpoint!, previous.get(p.name)!.checkpoint!), p.name).to.equal(0);
        expect(fresh.eventsHandled, p.name).to.equal(previous.get(p.name)!.eventsHandled);
      }
      // the old versions' tables are gone: what readers see now was built from zero
      expect(await schemas()).to.deep.equal(projectors.map((p) => `${database.schema}__${p.name}_v${p.version}`).sort());

      // An instance of the service reads them (its own, older projector versions stand by: they were replaced).
      service = await startTestService(database, { runtime: clock, env });
      snapshotAfter = await capture();
      expect(await service.eventCount(), 'the rebuild appended nothing').to.equal(eventsBefore);
    });

    it('reproduces the payments listings (v1 and v2), every payment, account, identity and customer exactly', () => {
      expect(snapshotAfter, 'run the rebuild first').to.not.equal(undefined);
      const [was, now] = [snapshotBefore, snapshotAfter!];
      expect(Object.keys(now.clients).sort()).to.deep.equal(worlds.map((w) => w.name).sort());
      for (const world of worlds) {
        for (const key of Object.keys(was.clients[world.name])) {
          expect(now.clients[world.name][key], `${world.name} ${key}`).to.deep.equal(was.clients[world.name][key]);
        }
      }
    });

    it('reproduces the balances, the ledger lines and the trial balance exactly, still zero per currency', () => {
      expect(snapshotAfter, 'run the rebuild first').to.not.equal(undefined);
      const [was, now] = [snapshotBefore, snapshotAfter!];
      expect(now.accountBalances).to.deep.equal(was.accountBalances);
      expect(now.entryLines).to.deep.equal(was.entryLines);
      expect(now.trialBalance).to.deep.equal(was.trialBalance);
      for (const row of now.trialBalance as Array<{ currency: string; balance_sum: string; balanced: boolean }>) {
        expect(toDecimal(row.balance_sum).isZero(), row.currency).to.equal(true);
        expect(row.balanced).to.equal(true);
      }
      expect((now.accountBalances as unknown[]).length).to.be.greaterThan(10);
    });
  });

  describe(`replay beside a serving instance (rolling deploy): ${target.name}`, function () {
    this.timeout(60_000);

    // activateVersion frees the retired version's lease; an old process idling past a renewal must not take it
    // back, or it would write through the main schema's views into its successor's tables.
    it('an old instance left running does not write into the rebuilt read model, which keeps following the feed', async () => {
      const database = await target.open();
      const store = new PostgresEventStore(database);
      const fast = { idlePollMs: 20, leaseTtlMs: 600, initialBackoffMs: 10, maxBackoffMs: 50 };
      const old = new ProjectionDaemon(database, store, { ...fast, owner: 'old-instance' }).addProjector(createLedgerProjector(1, registered.postings));
      const fresh = new ProjectionDaemon(database, store, { ...fast, owner: 'new-instance' }).addProjector(createLedgerProjector(2, registered.postings));
      const account = `acct-${randomUUID()}`;
      const deposit = (amount: string): NewEvent => {
        const data: AccountAdjustedData = { accountId: account, clientId: 'client-1', currency: 'USD', amount, reason: 'replay',
          adjustmentId: randomUUID(), adjustedAt: new Date().toISOString() };
        return { type: 'AccountAdjusted', data, metadata: { clientId: 'client-1', actor: 'operator' } };
      };
      try {
        old.start();
        const first = await store.append(`account-${account}`, [deposit('10.00')], 'any');
        expect(await old.waitFor(first.position, 10_000)).to.equal(true);
        fresh.start();
        await until(async () => (await fresh.status()).some((s) => s.version === 2 && s.status === 'active'), { what: 'v2 active', timeoutMs: 60_000 });
        await new Promise((r) => setTimeout(r, 2 * fast.leaseTtlMs)); // the old instance idles past a lease renewal
        const second = await store.append(`account-${account}`, [deposit('5.00')], 'any');
        expect(await fresh.waitFor(second.position, 10_000), 'the rebuilt ledger follows the feed').to.equal(true);
        const states = await fresh.status();
        expect(states.map((s) => [s.version, s.status])).to.deep.equal([[1, 'retired'], [2, 'active']]);
        expect(states.find((s) => s.version === 2)!.lastError).to.equal(null);
        expect(states.find((s) => s.version === 1)!.leaseOwner, 'nobody holds a retired version').to.equal(null);
        expect(old.projectionRunners[0]!.holdsLease).to.equal(false);
        expect(old.projectionRunners[0]!.state).to.equal('retired');
        expect(await old.waitFor(second.position, 10_000), 'the old process waits on the version readers see').to.equal(true);
        const { rows } = await database.query(`SELECT balance::text FROM ledger_balances WHERE account_id = $1`, [account]);
        expect(rows).to.deep.equal([{ balance: '15.00' }]);
      } finally {
        await old.stop();
        await fresh.stop();
        await store.close();
        await database.close();
      }
    });
  });
}
