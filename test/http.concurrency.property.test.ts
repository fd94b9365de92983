/**
 * Randomized concurrency: two service instances over one database, and in each round a random mix of
 * settlements, refunds, closes, blocks, unblocks, adjustments and identity adoptions on shared objects, started in an
 * order fast-check's scheduler picks (so a failing round replays from its seed) and then left to race.
 * After each round the rules that span objects must hold, whatever the interleaving:
 * - no money entered a closed or blocked account (a credit is only ever recorded while the account is ACTIVE);
 * - no account was closed holding money;
 * - every account's ledger balance is the sum of its own stream's movements;
 * - every currency's trial balance is zero;
 * - no identity is its own ancestor;
 * - every answer is 2xx, 404 (an object closed by an earlier operation), 409 or 422; never a 5xx.
 * Then every read model, rebuilt from the log by a version bump, equals the one the service built live.
 *
 * ROUNDS (default 100 per target) sets how many rounds; CONCURRENCY_SEED replays one.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { Database } from '../src/db/database.ts';
import { accountStream, type AccountEvent } from '../src/accounts/events.ts';
import { Decimal, toDecimal } from '../src/domain/money.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { providerReceipts } from './support/payments.ts';
import { until } from './support/until.ts';
import { expectRebuildEqualsLive } from './support/rebuild.ts';
import { waitForNewestEvent } from './support/newestEvent.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const ROUNDS = Number(process.env.ROUNDS ?? 100);
const SEED = process.env.CONCURRENCY_SEED === undefined ? undefined : Number(process.env.CONCURRENCY_SEED);
const ACCOUNTS = 3;
const PAYMENTS = 4;
const IDENTITIES = 4;

type Operation =
  | { kind: 'settle'; payment: number; via: number }
  | { kind: 'close' | 'block' | 'unblock'; account: number; via: number }
  | { kind: 'adjust'; account: number; amount: number; via: number }
  | { kind: 'refund'; payment: number; amount: number; via: number }
  | { kind: 'adopt'; parent: number; child: number; via: number };

const via = fc.integer({ min: 0, max: 1 });
const account = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), payment: fc.integer({ min: 0, max: PAYMENTS - 1 }), via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('close' as const, 'block' as const, 'unblock' as const), account, via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('adjust' as const), account, amount: fc.integer({ min: -1500, max: 1500 }).filter((n) => n !== 0), via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('refund' as const), payment: fc.integer({ min: 0, max: PAYMENTS - 1 }), amount: fc.integer({ min: 1, max: 1200 }), via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('adopt' as const), parent: fc.integer({ min: 0, max: IDENTITIES - 1 }), child: fc.integer({ min: 0, max: IDENTITIES - 1 }), via }) },
);

for (const target of databaseTargets()) {
  describe(`randomized concurrency across two service instances: ${target.name}`, function () {
    this.timeout(600_000);
    let database: Database;
    let services: TestService[];
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;
    const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET };

    const call = (service: TestService, method: string, path: string, body?: unknown) => service.request(method, path, { headers, body });
    const ok = (answer: ApiResponse, status: number) => {
      expect(answer.status, answer.text).to.equal(status);
      return answer.body;
    };

    before(async () => {
      database = await target.open();
      const first = await startTestService(database, { env });
      services = [first, await startTestService(database, { env })];
      headers = await first.as(await first.createClient('Chaos'));
      identityId = ok(await call(first, 'POST', '/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' }), 201).id;
    });
    after(async () => {
      for (const service of services ?? []) await service.close();
      await database?.close();
    });

    /** Replays one account's stream and checks its rules; answers the sum of its movements. */
    async function checkAccountStream(accountId: string): Promise<Decimal> {
      const events = await services[0]!.services.storage.store.readStream(accountStream(accountId), { limit: 10_000 });
      let status = 'ACTIVE';
      let closed = false;
      let balance = new Decimal(0);
      let held = new Decimal(0);
      for (const { type, data } of events as unknown as AccountEvent[]) {
        const credit = type === 'AccountCredited' || (type === 'AccountAdjusted' && toDecimal(data.amount).greaterThan(0));
        if (credit) expect(!closed && status === 'ACTIVE', `${type} on a ${closed ? 'closed' : status} account ${accountId}`).to.equal(true);
        if (type === 'AccountClosed') expect(balance.isZero() && held.isZero(), `account ${accountId} closed holding ${balance}`).to.equal(true);
        if (type === 'AccountStatusChanged') status = data.to;
        if (type === 'AccountClosed') closed = true;
        if (type === 'AccountAdjusted') balance = balance.plus(toDecimal(data.amount));
        if (type === 'AccountCredited') balance = balance.plus(toDecimal(data.netAmount));
        if (type === 'AccountHoldDebited') balance = balance.minus(toDecimal(data.amount));
        if (type === 'AccountFundsHeld') held = held.plus(toDecimal(data.amount));
        if (type === 'AccountHoldReleased' || type === 'AccountHoldDebited') held = held.minus(toDecimal(data.amount));
        expect(balance.minus(held).isNegative(), `account ${accountId} went below zero`).to.equal(false);
      }
      return balance;
    }

    async function round(operations: Operation[], scheduler: fc.Scheduler): Promise<void> {
      const [one] = services as [TestService, TestService];
      const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, () => call(one, 'POST', '/accounts', { identityId, type: 'CHECKING', currency: 'CLP' })))
        .then((answers) => answers.map((a) => ok(a, 201) as { id: string; accountNumber: string }));
      // Some money to start with, so debits and closes have something to refuse.
      await Promise.all(accounts.map((a, i) => i === 0 ? null : one.operator('POST', `/operator/accounts/${a.id}/adjustments`, { amount: '500', reason: 'seed' })));
      const payments = await Promise.all(Array.from({ length: PAYMENTS }, (_, i) => call(one, 'POST', '/payments', {
        externalId: `chaos-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: accounts[i % ACCOUNTS]!.accountNumber,
        totalAmount: '1000', currency: 'CLP',
      }))).then((answers) => answers.map((a) => ok(a, 200) as { id: string }));
      const identities = await Promise.all(Array.from({ length: IDENTITIES }, (_, i) => call(one, 'POST', '/identities', { type: 'USER', name: `U${i}`, country: 'CHL' })))
        .then((answers) => answers.map((a) => ok(a, 201).id as string));

      const perform = (op: Operation): Promise<ApiResponse> => {
        const service = services[op.via]!;
        switch (op.kind) {
          case 'settle': return providerReceipts(() => service, PROVIDER_SECRET)(payments[op.payment]!.id);
          case 'close': return call(service, 'DELETE', `/accounts/${accounts[op.account]!.id}`);
          case 'block': return call(service, 'PATCH', `/accounts/${accounts[op.account]!.id}`, { status: 'BLOCKED' });
          case 'unblock': return call(service, 'PATCH', `/accounts/${accounts[op.account]!.id}`, { status: 'ACTIVE' });
          case 'adjust': return service.operator('POST', `/operator/accounts/${accounts[op.account]!.id}/adjustments`, { amount: String(op.amount), reason: 'chaos' });
          case 'refund': return call(service, 'POST', `/payments/${payments[op.payment]!.id}/refund`, { amount: String(op.amount) });
          case 'adopt': return call(service, 'POST', `/identities/${identities[op.parent]}/children`, { children: [identities[op.child]] });
        }
      };
      // The scheduler picks the order in which the operations start; they then race each other.
      const answers = operations.map((op) => scheduler.schedule(Promise.resolve(op), `${op.kind}`).then(perform));
      await scheduler.waitAll();
      const results = await Promise.all(answers);
      results.forEach((answer, i) => {
        expect(answer.status, `${JSON.stringify(operations[i])} answered ${answer.status} ${answer.text}`).to.be.oneOf([200, 201, 404, 409, 422]);
      });

      // Every payment the provider notified ends settled or unsettled, as its account answered.
      for (const [i, payment] of payments.entries()) {
        if (!operations.some((op, j) => op.kind === 'settle' && op.payment === i && results[j]!.status === 200)) continue;
        await until(async () => {
          const events = (await call(one, 'GET', `/payments/${payment.id}/events`)).body.events as Array<{ type: string }>;
          // Refunds of the payment are recorded on its stream after its settlement.
          return events.some((event) => ['PaymentSettled', 'PaymentUnsettled'].includes(event.type));
        }, { what: `payment ${payment.id} settled or unsettled` });
      }
      // The ledger's read model follows each account's own stream exactly.
      await waitForNewestEvent(one.services, 30_000);
      for (const { id } of accounts) {
        const expected = await checkAccountStream(id);
        await until(async () => {
          const row = (await database.query<{ balance: string }>('SELECT balance::text FROM account_balances WHERE account_id = $1', [id])).rows[0];
          return toDecimal(row?.balance ?? '0').equals(expected);
        }, { what: `ledger balance of ${id} equals the sum of its stream (${expected})` });
      }
      const unbalanced = (await database.query('SELECT currency, balance_sum::text FROM trial_balance WHERE NOT balanced')).rows;
      expect(unbalanced, 'trial balance').to.deep.equal([]);
      // No identity is its own ancestor.
      const parents = new Map((await database.query<{ identity_id: string; parent_id: string | null }>(
        'SELECT identity_id, parent_id FROM identities WHERE identity_id = ANY($1::text[])', [identities])).rows.map((r) => [r.identity_id, r.parent_id]));
      for (const start of identities) {
        const seen = new Set<string>();
        for (let at: string | null | undefined = start; at; at = parents.get(at)) {
          expect(seen.has(at), `identity cycle through ${at}`).to.equal(false);
          seen.add(at);
        }
      }
    }

    it(`holds every cross-object rule over ${ROUNDS} random interleavings`, async () => {
      await fc.assert(fc.asyncProperty(fc.array(operation, { minLength: 4, maxLength: 14 }), fc.scheduler(), round),
        { numRuns: ROUNDS, ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true });
    });

    it('rebuilds every read model from the log into rows identical to those built live', async () => {
      const [one, two] = services as [TestService, TestService];
      await waitForNewestEvent(one.services, 60_000);
      await expectRebuildEqualsLive(database, async () => {
        await one.close();
        await two.close();
        services = [];
      });
    });
  });
}
