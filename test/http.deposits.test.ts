/**
 * Deposits without a destination over HTTP: the provider's signed notification (matched, unassigned, repeated,
 * below the minimum, forged), the list and the widget at their window edges, assignment (PAID, UNDERPAID,
 * OVERPAID, and every refusal), the 48-hour expiry with a moved clock, and the ledger through all of it.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { paymentStream } from '../src/payments/events.ts';
import { accountStream } from '../src/accounts/events.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { expireUnassignedDeposits } from '../src/deposits/jobs.ts';
import { refundStream } from '../src/payments/refunds/events.ts';
import { endRefund } from '../src/payments/refunds/handlers.ts';
import { until } from './support/until.ts';
import { databaseTargets } from './support/targets.ts';
import type { ApiResponse, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { randomUUID } from 'node:crypto';

const PROVIDER_SECRET = 'test-provider-secret';
const HOUR_MS = 60 * 60 * 1000;
const MINUTE_MS = 60 * 1000;

/** A clock that stands still until the test moves it: window edges are exact. */
function frozenClock(): Runtime & { advance(ms: number): void } {
  let nowMs = Date.now();
  return { now: () => new Date(nowMs), newId: () => randomUUID(), advance: (ms) => { nowMs += ms; } };
}

for (const target of databaseTargets()) {
  describe(`deposits without a destination over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let tenants: TwoTenants;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let identityId: string;
    let ars: { id: string; accountNumber: string };
    let usd: { id: string; accountNumber: string };
    const clock = frozenClock();
    let sequence = 0;

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const patch = (path: string, body: unknown, headers = asAlice) => service.request('PATCH', path, { headers, body });
    const open = async (currency: string, headers = asAlice, identity = identityId) => {
      const response = await post('/accounts', { identityId: identity, type: 'CHECKING', currency }, headers);
      expect(response.status, response.text).to.equal(201);
      return { id: response.body.id as string, accountNumber: response.body.accountNumber as string };
    };
    /** The provider's notification of a deposit, signed unless a signature is given. */
    const deposit = (fields: { reference?: string; amount?: string; currency?: 'ARS' | 'USD'; depositId?: string; clientId?: string;
      originator?: Record<string, string>; signature?: string } = {}): Promise<ApiResponse> => {
      const body = {
        clientId: fields.clientId ?? tenants.alice.clientId, depositId: fields.depositId ?? `dep-${++sequence}`,
        reference: fields.reference ?? `0000003100${String(sequence).padStart(12, '0')}`, amount: fields.amount ?? '5000.00',
        currency: fields.currency ?? 'ARS',
        originator: fields.originator ?? { firstName: 'Juan', lastName: `Pérez${sequence}`, documentType: 'CUIT', documentNumber: `20-${sequence}-9` },
      };
      return service.request('POST', '/payments/deposits', {
        body: { ...body, signature: fields.signature ?? depositSignature(PROVIDER_SECRET, body) }, headers: { 'user-agent': 'provider' } });
    };
    const streamTypes = async (paymentId: string) =>
      (await service.services.storage.store.readStream(paymentStream(paymentId), { limit: 1000 })).map((e) => e.type);
    const balance = async (accountId: string) => (await database.query<{ balance: string }>(
      'SELECT balance::text FROM account_balances WHERE account_id = $1', [accountId])).rows[0]?.balance ?? '0';
    const balanced = async () => {
      for (const row of (await database.query<{ currency: string; balanced: boolean }>('SELECT currency, balanced FROM trial_balance')).rows) {
        expect(row.balanced, `trial balance of ${row.currency}`).to.equal(true);
      }
    };

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ database, service, asAlice, asBob } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Tienda', country: 'ARG' })).body.id;
      ars = await open('ARS');
      usd = await open('USD');
    });
    after(async () => {
      await tenants?.close();
    });

    it('a deposit to an ACTIVE account’s number settles into it through the account’s stream', async () => {
      const before = await balance('system:ARS:suspense');
      const answer = await deposit({ reference: ars.accountNumber, amount: '2500.00' });
      expect(answer.status, answer.text).to.equal(201);
      expect(answer.body).to.include({ type: 'LOCAL_DEPOSIT', status: 'SETTLED', accountNumber: ars.accountNumber, totalAmount: '2500.00' });
      expect(answer.body.externalId).to.equal(`${service.services.provider.name}:dep-${sequence}`);
      expect(answer.body.customerId).to.be.a('string');
      expect(await streamTypes(answer.body.id)).to.deep.equal(['PaymentCreated', 'PaymentReceived', 'PaymentSettled']);
      expect(await balance(ars.id)).to.equal('2500.00');
      expect(await balance('system:ARS:suspense')).to.equal(before);
      await balanced();
    });

    it('a deposit to an unknown reference waits unassigned 48 hours, in suspense, its originator a customer', async () => {
      const suspense = await balance('system:ARS:suspense');
      const answer = await deposit({ amount: '1500.00', originator: { firstName: 'Ana', lastName: 'Gómez', documentType: 'DNI', documentNumber: '30111222' } });
      expect(answer.status, answer.text).to.equal(201);
      expect(answer.body).to.include({ type: 'LOCAL_DEPOSIT', status: 'CREATED', accountNumber: null, identityId: null, totalAmount: '1500.00' });
      expect(answer.body.externalId).to.equal(`${service.services.provider.name}:dep-${sequence}`);
      expect(Date.parse(answer.body.expiresAt) - Date.parse(answer.body.createdAt)).to.equal(48 * HOUR_MS);
      expect(await streamTypes(answer.body.id)).to.deep.equal(['DepositReceived', 'PurchasePendingAssignment']);
      const customer = (await get(`/payments/${answer.body.id}/customer`)).body.customer;
      expect(customer).to.include({ firstName: 'Ana', lastName: 'Gómez', documentNumber: '30111222', autoCreated: true });
      expect(Number(await balance('system:ARS:suspense')) - Number(suspense)).to.equal(1500);
      const detail = await get(`/payments/${answer.body.id}`);
      expect(detail.status).to.equal(200);
      expect(detail.body).to.include({ status: 'CREATED', accountNumber: null });
      await balanced();

      // The same originator again: the same customer.
      const again = await deposit({ amount: '1200.00', originator: { firstName: 'Ana', lastName: 'Gómez', documentType: 'DNI', documentNumber: '30111222' } });
      expect(again.body.customerId).to.equal(answer.body.customerId);
    });

    it('an originator is the customer holding its document number now: one that moved to another number is not found by the old one', async () => {
      const originator = { firstName: 'Rosa', lastName: 'Díaz', documentType: 'DNI', documentNumber: '30555666' };
      const first = await deposit({ originator });
      const rosa = first.body.customerId as string;
      expect((await deposit({ originator })).body.customerId).to.equal(rosa);
      // Rosa's number changes: the old one is given back, and the next deposit naming it makes a new customer.
      const moved = await patch(`/customers/${rosa}`, { documentNumber: '30555667' });
      expect(moved.status, moved.text).to.equal(200);
      const old = await deposit({ originator });
      expect(old.body.customerId).to.be.a('string').and.not.equal(rosa);
      expect((await deposit({ originator: { ...originator, documentNumber: '30555667' } })).body.customerId).to.equal(rosa);
      expect((await deposit({ originator })).body.customerId).to.equal(old.body.customerId);
    });

    it('a blocked account’s number, another client’s, or another currency’s does not match: the deposit waits unassigned', async () => {
      const blocked = await open('ARS');
      expect((await patch(`/accounts/${blocked.id}`, { status: 'BLOCKED' })).status).to.equal(200);
      const bobs = await open('ARS', asBob, (await post('/identities', { type: 'USER', name: 'Bob' }, asBob)).body.id);
      for (const reference of [blocked.accountNumber, bobs.accountNumber, usd.accountNumber]) {
        const answer = await deposit({ reference });
        expect(answer.body, reference).to.include({ status: 'CREATED', accountNumber: null });
      }
      expect(await balance(blocked.id)).to.equal('0');
      expect(await balance(bobs.id)).to.equal('0');
    });

    it('a repeated notification changes nothing and answers the payment as it is', async () => {
      const first = await deposit({ depositId: 'repeat-1' });
      const matched = await deposit({ depositId: 'repeat-2', reference: ars.accountNumber, amount: '1000.00' });
      const events = await service.eventCount();
      const again = await deposit({ depositId: 'repeat-1' });
      expect(again.status).to.equal(200);
      expect(again.body.id).to.equal(first.body.id);
      const matchedAgain = await deposit({ depositId: 'repeat-2', reference: ars.accountNumber, amount: '1000.00' });
      expect(matchedAgain.status).to.equal(200);
      expect(matchedAgain.body).to.include({ id: matched.body.id, status: 'SETTLED' });
      expect(await service.eventCount()).to.equal(events);
      // Sent twice at once: one payment, one pending assignment (or one settlement), both answering it.
      for (let round = 0; round < 4; round++) {
        const reference = round % 2 === 0 ? 'unknown' : ars.accountNumber;
        const both = await Promise.all([deposit({ depositId: `twice-${round}`, reference }), deposit({ depositId: `twice-${round}`, reference })]);
        expect(both.map((a) => a.status).sort(), both.map((a) => a.text).join(' | ')).to.deep.equal([200, 201]);
        expect(both[0]!.body).to.deep.equal(both[1]!.body);
        expect(await streamTypes(both[0]!.body.id)).to.deep.equal(round % 2 === 0
          ? ['DepositReceived', 'PurchasePendingAssignment'] : ['PaymentCreated', 'PaymentReceived', 'PaymentSettled']);
      }
    });

    it('the same depositId with another amount, currency, reference or originator is 409 naming what differs; the first deposit stands', async () => {
      const originator = { firstName: 'Ana', lastName: 'Gómez', documentType: 'CUIT', documentNumber: '27-11111111-3' };
      const first = await deposit({ depositId: 'differs-1', reference: 'unknown-ref', amount: '5000.00', originator });
      expect(first.status, first.text).to.equal(201);
      const matched = await deposit({ depositId: 'differs-2', reference: ars.accountNumber, amount: '2000.00', originator });
      expect(matched.status, matched.text).to.equal(201);
      const events = await service.eventCount();
      const refusals: Array<[Parameters<typeof deposit>[0], string]> = [
        [{ depositId: 'differs-1', reference: 'unknown-ref', amount: '6000.00', originator }, 'amount'],
        [{ depositId: 'differs-1', reference: 'other-ref', amount: '5000.00', originator }, 'reference'],
        [{ depositId: 'differs-1', reference: 'unknown-ref', amount: '5000.00', originator: { ...originator, firstName: 'Eva' } }, 'originator.firstName'],
        [{ depositId: 'differs-1', reference: 'unknown-ref', amount: '5000.00', currency: 'USD', originator }, 'currency'],
        [{ depositId: 'differs-2', reference: ars.accountNumber, amount: '2500.00', originator }, 'amount'],
        [{ depositId: 'differs-2', reference: 'unknown-ref', amount: '2000.00', originator }, 'reference'],
        [{ depositId: 'differs-2', reference: ars.accountNumber, amount: '2000.00', originator: { ...originator, documentNumber: '27-22222222-3' } },
          'originator.documentNumber'],
      ];
      for (const [fields, what] of refusals) {
        const answer = await deposit(fields);
        expect(answer.status, `${what}: ${answer.text}`).to.equal(409);
        expect(answer.body.message).to.include(`depositId ${fields!.depositId}`).and.to.include(what);
      }
      expect(await service.eventCount()).to.equal(events);
      expect((await get(`/payments/${first.body.id}`)).body.originAmount).to.deep.equal({ amount: '5000.00', currency: 'ARS' });
      // The same content again (the amount written otherwise) is the idempotent 200.
      const same = await deposit({ depositId: 'differs-1', reference: 'unknown-ref', amount: '5000', originator });
      expect(same.status, same.text).to.equal(200);
      expect(same.body).to.include({ id: first.body.id, totalAmount: '5000.00' });
      expect((await deposit({ depositId: 'differs-2', reference: ars.accountNumber, amount: '2000.00', originator })).status).to.equal(200);
    });

    it('above the currency’s maximum deposit is 422, and an expectedAmount above it 400; nothing is recorded', async () => {
      const events = await service.eventCount();
      const huge = await deposit({ amount: '999999999999999999.99', currency: 'USD' });
      expect(huge.status, huge.text).to.equal(422);
      expect(huge.body.message).to.equal('amount: 999999999999999999.99 USD is above the maximum deposit of 1000000.00 USD');
      const over = await deposit({ amount: '50000000.01' });
      expect(over.status, over.text).to.equal(422);
      expect(over.body.message).to.include('maximum deposit of 50000000.00 ARS');
      expect(await service.eventCount()).to.equal(events);
      const largest = await deposit({ amount: '50000000.00' });
      expect(largest.status, largest.text).to.equal(201);
      const before = await service.eventCount();
      const expected = await post(`/payments/${largest.body.id}/assign`, { accountId: ars.id, expectedAmount: '999999999999999999.99' });
      expect(expected.status, expected.text).to.equal(400);
      expect(expected.body.message).to.equal('expectedAmount: 999999999999999999.99 ARS is above the maximum deposit of 50000000.00 ARS');
      expect(await service.eventCount()).to.equal(before);
    });

    it('a payment of the client that took the deposit’s externalId is left alone: the notification is refused', async () => {
      const taken = await post('/payments', { externalId: `${service.services.provider.name}:taken-1`, identityId, accountNumber: ars.accountNumber,
        totalAmount: '5000.00', currency: 'ARS', type: 'PURCHASE' });
      expect(taken.status, taken.text).to.equal(200);
      const events = await service.eventCount();
      for (const reference of ['unknown', ars.accountNumber]) {
        const answer = await deposit({ depositId: 'taken-1', reference });
        expect(answer.status, answer.text).to.equal(422);
        expect(answer.body.message).to.include('taken-1');
      }
      expect(await service.eventCount()).to.equal(events);
      expect(await streamTypes(taken.body.id)).to.deep.equal(['PaymentCreated']);
    });

    it('below the currency’s minimum is 422 and records nothing; a forged signature is 401 and records nothing', async () => {
      const events = await service.eventCount();
      const small = await deposit({ amount: '999.99' });
      expect(small.status).to.equal(422);
      expect(small.body.message).to.include('minimum deposit of 1000.00 ARS');
      const forged = await deposit({ signature: depositSignature('another-secret', {
        depositId: 'x', clientId: tenants.alice.clientId, reference: '1', amount: '5000.00', currency: 'ARS' }) });
      expect(forged.status).to.equal(401);
      expect(forged.body.error).to.equal('unauthorized');
      const badScale = await deposit({ amount: '5000.001' });
      expect(badScale.status).to.equal(400);
      const unknownClient = await deposit({ clientId: 'no-such-client' });
      expect(unknownClient.status).to.equal(404);
      expect(await service.eventCount()).to.equal(events);
    });

    it('assigns PAID, UNDERPAID and OVERPAID: suspense to the account in one entry, companions linked both ways, purchase events beside payment.settled', async () => {
      const cases = [
        { amount: '3000.00', expected: undefined, status: 'PAID', companion: null },
        { amount: '3000.00', expected: '3500.00', status: 'UNDERPAID', companion: { status: 'CREATED', totalAmount: '500.00' } },
        { amount: '3000.00', expected: '2000.00', status: 'OVERPAID', companion: { status: 'SETTLED', totalAmount: '1000.00' } },
      ] as const;
      for (const c of cases) {
        const id = (await deposit({ amount: c.amount })).body.id as string;
        const [accountBefore, suspenseBefore] = [Number(await balance(ars.id)), Number(await balance('system:ARS:suspense'))];
        const answer = await post(`/payments/${id}/assign`, { accountId: ars.id, ...(c.expected ? { expectedAmount: c.expected } : {}) });
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.include({ status: 'SETTLED', reconciliationStatus: c.status, accountNumber: ars.accountNumber, identityId });
        expect(Number(await balance(ars.id)) - accountBefore, c.status).to.equal(3000);
        expect(suspenseBefore - Number(await balance('system:ARS:suspense'))).to.equal(3000);
        const entries = (await database.query<{ entry_id: string; n: string }>(
          `SELECT entry_id, count(*)::text AS n FROM ledger_entry_lines WHERE description = $1 GROUP BY entry_id`, [`Assignment of payment ${id}`])).rows;
        expect(entries.map((e) => e.n)).to.deep.equal(['2']);
        const types = await streamTypes(id);
        if (!c.companion) {
          expect(types).to.deep.equal(['DepositReceived', 'PurchasePendingAssignment', 'DepositAssignmentRequested', 'DepositAssigned', 'PaymentSettled']);
          expect(answer.body.relatedPaymentId).to.equal(null);
          continue;
        }
        expect(types.slice(3)).to.deep.equal(['DepositAssigned', 'PaymentSettled', c.status === 'UNDERPAID' ? 'PurchaseUnderpaid' : 'PurchaseOverpaid']);
        const companion = await get(`/payments/${answer.body.relatedPaymentId}`);
        expect(companion.status).to.equal(200);
        expect(companion.body).to.include({ ...c.companion, relatedPaymentId: id, parentPaymentId: id, accountNumber: ars.accountNumber, type: 'LOCAL_DEPOSIT' });
        const event = (await service.services.storage.store.readStream(paymentStream(id), { limit: 100 })).at(-1)!;
        expect(event.data).to.include({ relatedPaymentId: answer.body.relatedPaymentId, difference: c.companion.totalAmount });
      }
      await balanced();
    });

    it('refuses a second assignment, an expired deposit, a blocked account, another currency, and another client’s account or deposit', async () => {
      const id = (await deposit()).body.id as string;
      expect((await post(`/payments/${id}/assign`, { accountId: ars.id })).status).to.equal(200);
      const twice = await post(`/payments/${id}/assign`, { accountId: ars.id });
      expect(twice.status).to.equal(422);
      expect(twice.body.message).to.include('SETTLED');

      const other = (await deposit()).body.id as string;
      const blocked = await open('ARS');
      await patch(`/accounts/${blocked.id}`, { status: 'BLOCKED' });
      const bobsAccount = await open('USD', asBob, (await post('/identities', { type: 'USER', name: 'Bob' }, asBob)).body.id);
      const events = await service.eventCount();
      const refusals = [
        [await post(`/payments/${other}/assign`, { accountId: blocked.id }), 422, 'BLOCKED'],
        [await post(`/payments/${other}/assign`, { accountId: usd.id }), 422, 'USD'],
        [await post(`/payments/${other}/assign`, { accountId: 'no-such-account' }), 404, 'not found'],
        [await post(`/payments/${other}/assign`, { accountId: ars.id, expectedAmount: '1.001' }), 400, 'expectedAmount'],
        [await post(`/payments/${ars.id}/assign`, { accountId: ars.id }), 404, 'not found'],
      ] as const;
      for (const [answer, status, text] of refusals) {
        expect(answer.status, answer.text).to.equal(status);
        expect(answer.body.message).to.include(text);
      }
      expect((await post(`/payments/${other}/assign`, { accountId: bobsAccount.id })).status).to.equal(404);
      expect((await post(`/payments/${other}/assign`, { accountId: ars.id }, asBob)).status).to.equal(404);
      expect(await service.eventCount()).to.equal(events);

      clock.advance(48 * HOUR_MS);
      try {
        const late = await post(`/payments/${other}/assign`, { accountId: ars.id }, await service.as(tenants.alice));
        expect(late.status).to.equal(422);
        expect(late.body.message).to.include('expired');
      } finally {
        clock.advance(-48 * HOUR_MS);
      }
    });

    it('two assignments of one deposit at once: exactly one takes it, the money moves once', async () => {
      const second = await open('ARS');
      for (let round = 0; round < 4; round++) {
        const id = (await deposit({ amount: '2000.00' })).body.id as string;
        const [a, b] = await Promise.all([
          post(`/payments/${id}/assign`, { accountId: ars.id }), post(`/payments/${id}/assign`, { accountId: second.id })]);
        expect([a.status, b.status].sort()).to.deep.equal([200, 422]);
        expect((await streamTypes(id)).filter((t) => t === 'PaymentSettled')).to.have.length(1);
        const credited = [] as string[];
        for (const account of [ars.id, second.id]) {
          const events = await service.services.storage.store.readStream(accountStream(account), { limit: 10_000 });
          if (events.some((e) => e.type === 'AccountCredited' && (e.data as { paymentId: string }).paymentId === id)) credited.push(account);
        }
        expect(credited).to.deep.equal([a.status === 200 ? ars.id : second.id]);
      }
      await balanced();
    });

    describe('the 48-hour window', () => {
      it('lists and counts at the window edges: 5h59m and 6h are urgent and within 6h, 6h01m is not', async () => {
        const client = await service.createClient('Edges');
        const edges = { service, alice: client, asAlice: await service.as(client), bob: tenants.bob, asBob };
        {
          const as = edges.asAlice;
          const notify = (amount: string, name: string, document: string) => {
            const body = { clientId: edges.alice.clientId, depositId: `edge-${++sequence}`, reference: '999', amount, currency: 'USD' as const,
              originator: { firstName: name, lastName: 'Edge', documentNumber: document } };
            return edges.service.request('POST', '/payments/deposits', { body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) } });
          };
          // Created 48 h − 5h59m, 48 h − 6h and 48 h − 6h01m before "now": each lives 48 h.
          const ids: Record<string, string> = {};
          for (const [label, left, amount] of [['5h59m', 5 * HOUR_MS + 59 * MINUTE_MS, '10.00'], ['6h', 6 * HOUR_MS, '20.00'],
            ['6h01m', 6 * HOUR_MS + MINUTE_MS, '30.00']] as const) {
            clock.advance(-(48 * HOUR_MS - left));
            try {
              ids[label] = (await notify(amount, `Name${label}`, `DOC-${label}`)).body.id;
            } finally {
              clock.advance(48 * HOUR_MS - left);
            }
          }
          const list = async (query: string) => (await edges.service.request('GET', `/payments/unassigned${query}`, { headers: as })).body;
          const within6 = await list('?expiresWithin=6h');
          expect(within6.results.map((r: { id: string }) => r.id)).to.deep.equal([ids['5h59m'], ids['6h']]);
          expect(within6.results[0].hoursRemaining).to.be.within(5.98, 5.99);
          expect(within6.results[0].originanteName).to.equal('Name5h59m Edge');
          expect((await list('?expiresWithin=24h')).pagination.total).to.equal(3);
          expect((await list('?expiresWithin=')).pagination.total).to.equal(3);
          expect((await list('')).pagination.total).to.equal(3);
          expect((await list('?amountMin=20.00&amountMax=30')).results.map((r: { id: string }) => r.id)).to.deep.equal([ids['6h'], ids['6h01m']]);
          expect((await list('?search=name6h0')).results.map((r: { id: string }) => r.id)).to.deep.equal([ids['6h01m']]);
          expect((await list('?search=doc-5H')).results.map((r: { id: string }) => r.id)).to.deep.equal([ids['5h59m']]);
          expect((await list('?search=edge&limit=1&offset=1')).results.map((r: { id: string }) => r.id)).to.deep.equal([ids['6h']]);
          expect((await list('?search=%25')).pagination.total).to.equal(0);

          const widget = await edges.service.request('GET', '/accounts/unassigned', { headers: as });
          expect(widget.status).to.equal(200);
          expect(widget.body).to.include({ clientId: edges.alice.clientId, currency: 'USD', totalAmount: '60.00', count: 3 });
          expect(widget.body.urgent.map((u: { paymentId: string }) => u.paymentId)).to.deep.equal([ids['5h59m'], ids['6h']]);
          expect(widget.body.urgent[1]).to.include({ originanteName: 'Name6h Edge', amount: '20.00', currency: 'USD', hoursRemaining: 6 });
          expect(widget.body.currencies).to.have.length(1);
          const other = await edges.service.request('GET', '/accounts/unassigned?currency=ARS', { headers: as });
          expect(other.body).to.include({ currency: 'ARS', totalAmount: '0.00', count: 0 });
          expect((await edges.service.request('GET', `/accounts/unassigned?clientId=${edges.bob.clientId}`, { headers: as })).status).to.equal(404);
          expect((await edges.service.request('GET', `/payments/unassigned?clientId=${edges.bob.clientId}`, { headers: as })).status).to.equal(404);
          const bobs = await edges.service.request('GET', '/accounts/unassigned', { headers: edges.asBob });
          expect(bobs.body).to.include({ currency: null, count: 0, totalAmount: '0' });
        }
      });

      it('expires unassigned deposits once, even when the job runs twice at once, and records the refund due to the originator', async () => {
        const ids = [(await deposit()).body.id as string, (await deposit()).body.id as string];
        const assigned = (await deposit()).body.id as string;
        await post(`/payments/${assigned}/assign`, { accountId: ars.id });
        const suspense = await balance('system:ARS:suspense');
        clock.advance(48 * HOUR_MS);
        const late = await service.as(tenants.alice);
        try {
          const runs = await Promise.all([expireUnassignedDeposits(service.services), expireUnassignedDeposits(service.services)]);
          expect(runs.reduce((sum, run) => sum + run.expired, 0)).to.be.at.least(ids.length);
          for (const id of ids) {
            const types = await streamTypes(id);
            expect(types.filter((t) => t === 'PaymentExpired'), id).to.have.length(1);
            expect(types.filter((t) => t === 'DepositRefundDue'), id).to.have.length(1);
            expect((await get(`/payments/${id}`, late)).body).to.include({ status: 'EXPIRED' });
            // The refund child to the originator, from suspense, issued once: payment.refund.created.
            // The refund child is issued by the deposit's process manager after the expiry: wait for its read model.
            let children = (await get(`/payments/${id}/refund`, late)).body;
            await until(async () => (children = (await get(`/payments/${id}/refund`, late)).body).total > 0, { what: `the refund child of ${id}` });
            expect(children.total, id).to.equal(1);
            expect(children.refunds[0]).to.include({ parentPaymentId: id, status: 'RECEIVED', totalAmount: '5000.00', currency: 'ARS' });
            const refundEvents = await service.services.storage.store.readStream(refundStream(children.refunds[0].id), { limit: 100 });
            expect(refundEvents.map((e) => e.type)).to.deep.equal(['RefundCreated']);
            expect(refundEvents[0]!.data).to.deep.include({ funding: { source: 'SUSPENSE' } });
          }
          expect((await get(`/payments/${assigned}`, late)).body.status).to.equal('SETTLED');
          expect((await get('/payments/unassigned', late)).body.pagination.total).to.equal(0);
          // Until the refund is paid out, the funds stay in suspense.
          expect(await balance('system:ARS:suspense')).to.equal(suspense);
          // Paid out (the provider's word on the refund): suspense → refunds payable → out.
          const refundId = (await get(`/payments/${ids[0]}/refund`, late)).body.refunds[0].id as string;
          await endRefund(service.services, 'any', refundId, 'SETTLED', { actor: 'provider' });
          await until(async () => Number(suspense) - Number(await balance('system:ARS:suspense')) === 5000, { what: 'the refund paid from suspense' });
          const again = await expireUnassignedDeposits(service.services);
          expect(again.expired).to.equal(0);
        } finally {
          clock.advance(-48 * HOUR_MS);
        }
        await balanced();
      });
    });
  });
}
