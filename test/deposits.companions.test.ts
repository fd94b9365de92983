/**
 * The amount still due of an underpaid deposit (its UNDERPAID companion child) over HTTP: paid by a later deposit
 * assigned to it, cancelled through POST /payments/{id}/cancel, expired 48 hours after its creation; each end with
 * its webhook events and a ledger that stays balanced; and a payment a stopped process left half done, finished by
 * the deposits' reactor.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { handleCommand } from '../src/eventstore/commandHandler.ts';
import { paymentIdFor, paymentStream } from '../src/payments/events.ts';
import { paymentDecider } from '../src/payments/decider.ts';
import { depositDecider } from '../src/deposits/decider.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { expireDueCompanions } from '../src/deposits/jobs.ts';
import { databaseTargets } from './support/targets.ts';
import type { ApiResponse, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const HOUR_MS = 60 * 60 * 1000;

/** A clock that stands still until the test moves it. */
function frozenClock(): Runtime & { advance(ms: number): void } {
  let nowMs = Date.now();
  return { now: () => new Date(nowMs), newId: () => randomUUID(), advance: (ms) => { nowMs += ms; } };
}

for (const target of databaseTargets()) {
  describe(`the amount still due of an underpaid deposit: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let tenants: TwoTenants;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let identityId: string;
    let ars: { id: string; accountNumber: string };
    const clock = frozenClock();
    let sequence = 0;

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const deposit = async (amount: string): Promise<string> => {
      const body = {
        clientId: tenants.alice.clientId, depositId: `due-${++sequence}`, reference: `0000003100${String(sequence).padStart(12, '0')}`,
        amount, currency: 'ARS' as const, originator: { firstName: 'Juan', lastName: 'Pérez', documentType: 'CUIT', documentNumber: '20-1-9' },
      };
      const answer = await service.request('POST', '/payments/deposits', {
        body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) }, headers: { 'user-agent': 'provider' } });
      expect(answer.status, answer.text).to.equal(201);
      return answer.body.id as string;
    };
    const assign = (id: string, body: Record<string, string>) => post(`/payments/${id}/assign`, { accountId: ars.id, ...body });
    /** A deposit of 3000.00 assigned against 4500.00: its companion holds the 1500.00 still due. */
    const underpaid = async (): Promise<{ deposit: string; companion: string }> => {
      const id = await deposit('3000.00');
      const answer = await assign(id, { expectedAmount: '4500.00' });
      expect(answer.body, answer.text).to.include({ status: 'SETTLED', reconciliationStatus: 'UNDERPAID' });
      return { deposit: id, companion: answer.body.relatedPaymentId as string };
    };
    const balance = async (accountId: string) => (await database.query<{ balance: string }>(
      'SELECT balance::text FROM account_balances WHERE account_id = $1', [accountId])).rows[0]?.balance ?? '0';
    const balanced = async () => {
      const rows = (await database.query<{ currency: string; balance_sum: string; balanced: boolean }>(
        'SELECT currency, balance_sum::text, balanced FROM trial_balance')).rows;
      for (const row of rows) expect(row, `trial balance of ${row.currency}`).to.include({ balanced: true });
      for (const row of rows) expect(Number(row.balance_sum), `trial balance of ${row.currency}`).to.equal(0);
    };
    /** The webhook events of one payment, as GET /events gives them: type and the status the payload carries. */
    const webhooksOf = async (paymentId: string) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = (await get(`/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).body;
        for (const event of page.results) {
          if (event.payload.transaction?.id === paymentId) seen.push(`${event.eventType}:${event.payload.transaction.status}`);
        }
        if (!page.hasMore) return seen;
        cursor = page.next;
      }
    };
    const streamTypes = async (paymentId: string) =>
      (await service.services.storage.store.readStream(paymentStream(paymentId), { limit: 100 })).map((e) => e.type);
    /** Lines of the ledger whose entry names the payment. */
    const ledgerLinesOf = async (paymentId: string) => Number((await database.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM ledger_entry_lines WHERE description LIKE '%' || $1 || '%'`, [paymentId])).rows[0]!.n);

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ database, service, asAlice, asBob } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Tienda', country: 'ARG' })).body.id;
      const account = await post('/accounts', { identityId, type: 'CHECKING', currency: 'ARS' });
      ars = { id: account.body.id, accountNumber: account.body.accountNumber };
    });
    after(async () => {
      await tenants?.close();
    });

    it('is CREATED, due 48 hours after its creation; a later deposit assigned to it pays it (SETTLED, payment.settled), with that deposit’s money', async () => {
      const { companion } = await underpaid();
      const due = (await get(`/payments/${companion}`)).body;
      expect(due).to.include({ status: 'CREATED', totalAmount: '1500.00', type: 'LOCAL_DEPOSIT' });
      expect(Date.parse(due.expiresAt) - Date.parse(due.createdAt)).to.equal(48 * HOUR_MS);
      const later = await deposit('1500.00');
      const [accountBefore, suspenseBefore] = [Number(await balance(ars.id)), Number(await balance('system:ARS:suspense'))];
      const paid = await assign(later, { companionId: companion });
      expect(paid.status, paid.text).to.equal(200);
      // Reconciled against the amount still due.
      expect(paid.body).to.include({ status: 'SETTLED', reconciliationStatus: 'PAID', relatedPaymentId: null });
      expect((await get(`/payments/${companion}`)).body).to.include({ status: 'SETTLED' });
      expect((await get(`/payments/${companion}`)).body.settledAt).to.be.a('string');
      expect(await streamTypes(companion)).to.deep.equal(['DepositCompanionCreated', 'DepositCompanionPaid', 'PaymentSettled']);
      expect(await webhooksOf(companion)).to.deep.equal(['transaction.status_changed:SETTLED', 'payment.settled:SETTLED']);

      // The money is the later deposit's: its assignment moved it from suspense to the account, once; the companion posts nothing.
      expect(Number(await balance(ars.id)) - accountBefore).to.equal(1500);
      expect(suspenseBefore - Number(await balance('system:ARS:suspense'))).to.equal(1500);
      expect(await ledgerLinesOf(`Assignment of payment ${later}`)).to.equal(2);
      expect(await ledgerLinesOf(companion)).to.equal(0);
      await balanced();

      // Paid once: another deposit naming it is refused, naming why, and nothing is recorded.
      const again = await assign(await deposit('1500.00'), { companionId: companion });
      expect(again.status).to.equal(422);
      expect(again.body.message).to.match(/^companionId: payment .* is SETTLED; only a companion holding the amount still due/);
    });

    it('refuses to pay a companion that is not an amount due, none, or one owed to another account, naming why', async () => {
      const { deposit: first, companion } = await underpaid();
      const over = await assign(await deposit('3000.00'), { expectedAmount: '2000.00' });
      expect(over.body.reconciliationStatus).to.equal('OVERPAID');
      const later = await deposit('1500.00');
      const refusal = async (body: Record<string, string>, status: number, message: RegExp) => {
        const answer = await assign(later, body);
        expect(answer.status, answer.text).to.equal(status);
        expect(answer.body.message).to.match(message);
      };
      await refusal({ companionId: over.body.relatedPaymentId }, 422, /OVERPAID/);
      await refusal({ companionId: first }, 422, /is a deposit; only a companion holding the amount still due/);
      await refusal({ companionId: randomUUID() }, 404, /not found/);
      const other = await post('/accounts', { identityId, type: 'CHECKING', currency: 'ARS' });
      await refusal({ companionId: companion, accountId: other.body.id }, 422, /is owed to account .*; assign the deposit there/);
      expect((await get(`/payments/${later}`)).body.status).to.equal('CREATED');
      // Bob's deposit cannot name Alice's companion: not found.
      expect((await post(`/payments/${companion}/cancel`, undefined, asBob)).status).to.equal(404);
    });

    it('is cancelled through POST /payments/{id}/cancel: CANCELLED, transaction.status_changed, nothing posted; anything else is 422 naming why', async () => {
      const { deposit: parent, companion } = await underpaid();
      const accountBefore = await balance(ars.id);
      const cancelled = await post(`/payments/${companion}/cancel`);
      expect(cancelled.status, cancelled.text).to.equal(200);
      expect(cancelled.body).to.include({ id: companion, status: 'CANCELLED' });
      expect((await get(`/payments/${companion}`)).body.status).to.equal('CANCELLED');
      expect((await get(`/payments?status=CANCELLED`)).body.results.map((p: { id: string }) => p.id)).to.include(companion);
      expect(await webhooksOf(companion)).to.deep.equal(['transaction.status_changed:CANCELLED']);
      expect(await balance(ars.id)).to.equal(accountBefore);
      expect(await ledgerLinesOf(companion)).to.equal(0);
      await balanced();

      const refused = async (id: string, message: RegExp) => {
        const answer = await post(`/payments/${id}/cancel`);
        expect(answer.status, answer.text).to.equal(422);
        expect(answer.body).to.include({ error: 'failedPrecondition' });
        expect(answer.body.message).to.match(message);
      };
      await refused(companion, /is CANCELLED; only a CREATED companion holding the amount still due \(UNDERPAID\) can be cancelled/);
      await refused(parent, /is a deposit; only a deposit's companion holding the amount still due/);
      const over = await assign(await deposit('3000.00'), { expectedAmount: '2000.00' });
      await refused(over.body.relatedPaymentId, /OVERPAID/);
      expect((await post(`/payments/${randomUUID()}/cancel`)).status).to.equal(404);
      // A cancelled amount is no longer due: a deposit naming it is refused.
      const late = await assign(await deposit('1500.00'), { companionId: companion });
      expect(late.status).to.equal(422);
      expect(late.body.message).to.match(/is CANCELLED/);
    });

    it('expires 48 hours after its creation: EXPIRED, payment.expired, nothing posted', async () => {
      const { companion } = await underpaid();
      const run = async (ms: number) => {
        // The clock goes back after the run, so that the tokens stay good.
        clock.advance(ms);
        try {
          return await expireDueCompanions(service.services);
        } finally {
          clock.advance(-ms);
        }
      };
      await run(48 * HOUR_MS - 60_000);
      expect((await get(`/payments/${companion}`)).body.status).to.equal('CREATED');
      expect((await run(48 * HOUR_MS)).expired).to.be.at.least(1);
      const expired = (await get(`/payments/${companion}`)).body;
      expect(expired.status).to.equal('EXPIRED');
      expect(await webhooksOf(companion)).to.deep.equal(['transaction.status_changed:EXPIRED', 'payment.expired:EXPIRED']);
      expect(await ledgerLinesOf(companion)).to.equal(0);
      await balanced();
      // Once: the next run finds nothing of it, and it can no longer be cancelled.
      expect((await run(49 * HOUR_MS)).expired).to.equal(0);
      const cancel = await post(`/payments/${companion}/cancel`);
      expect(cancel.status).to.equal(422);
      expect(cancel.body.message).to.match(/is EXPIRED/);
    });

    it('a payment a stopped process left half done (the request recorded, nothing after) is finished by the deposits’ reactor', async () => {
      const { companion } = await underpaid();
      const later = await deposit('1500.00');
      // What a process that died right after recording the request leaves: the reactor takes it from there.
      await handleCommand(service.services.storage.store, paymentStream(later), depositDecider, {
        type: 'RequestAssignment', tenant: { clientId: tenants.alice.clientId }, now: clock.now(), expectedAmount: '1500.00', companionId: companion,
        target: { accountId: ars.id, accountNumber: ars.accountNumber, identityId },
      }, { clientId: tenants.alice.clientId });
      await until(async () => (await get(`/payments/${companion}`)).body.status === 'SETTLED', { what: 'the companion paid by the reactor' });
      expect((await get(`/payments/${later}`)).body).to.include({ status: 'SETTLED', reconciliationStatus: 'PAID' });
      await until(async () => (await webhooksOf(companion)).length === 2, { what: 'the companion’s webhooks' });
      await balanced();
    });

    it('a matched deposit a stopped process left created (not received, not settled) is finished by the deposits’ reactor', async () => {
      const clientId = tenants.alice.clientId;
      const paymentId = paymentIdFor(clientId, `sandbox:stopped-${randomUUID()}`);
      const before = Number(await balance(ars.id));
      // What receiveDeposit records for a deposit that names an ACTIVE account, before a process that died there.
      await handleCommand(service.services.storage.store, paymentStream(paymentId), paymentDecider, {
        type: 'CreatePayment', tenant: { clientId }, now: clock.now(), screening: { outcome: 'CLEAR' },
        payment: {
          paymentId, clientId, externalId: `stopped-${paymentId}`, identityId, identityExternalId: null, identityEmail: null, accountId: ars.id,
          accountNumber: ars.accountNumber, totalAmount: '2000.00', currency: 'ARS', description: 'Deposit to a matched account', product: null,
          type: 'LOCAL_DEPOSIT', purchaseAmount: null, purchaseCurrency: null, exchange: null, origins: [], destinations: [], fees: [],
          feeAmount: '0.00', flow: 'PUSH', method: null, settlement: 'INSTANT', expiresAt: null, customerId: null, checkoutSessionId: null,
        },
      }, { clientId, actor: 'provider' }, { expectNewStream: true });
      await until(async () => (await get(`/payments/${paymentId}`)).body.status === 'SETTLED', { what: 'the matched deposit settled by the reactor' });
      await until(async () => Number(await balance(ars.id)) - before === 2000, { what: 'the account credited' });
      await balanced();
    });
  });
}
