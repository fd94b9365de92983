/**
 * The refund ceiling and the account's funds under concurrency: two service instances over one database, and in
 * each round 50 refund requests of random amounts (some omitting the amount: all that is left) on one SETTLED
 * parent, sent at once through both instances, then a second wave of requests racing the provider's ends of the
 * refunds accepted in the first. Whatever the interleaving:
 * - every request answers 201 or 422 (a 409 for contention is sent again, as its Retry-After invites);
 * - the refunds accepted never sum above the parent's totalAmount, nor above what the account had available;
 * - each 422 names its reason (what is left to refund, or the account's available funds);
 * - the summary's maxRefundable equals parentAmount − (totalRefunded + totalInProgress) from the children;
 * - the account's balance and held funds are exactly what its refunds say; the trial balance is zero.
 * Then every read model, rebuilt from the log, equals the one built live (refunds and balances included).
 *
 * REFUND_ROUNDS (default 20 per target) sets how many rounds; REFUND_SEED replays one.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { providerReceipts } from './support/payments.ts';
import { expectRebuildEqualsLive } from './support/rebuild.ts';
import { waitForNewestEvent } from './support/newestEvent.ts';
import { refundNotificationSignature } from '../src/payments/refunds/routes.ts';

const PROVIDER_SECRET = 'refund-race-secret';
const ROUNDS = Number(process.env.REFUND_ROUNDS ?? 20);
const SEED = process.env.REFUND_SEED === undefined ? undefined : Number(process.env.REFUND_SEED);
const REQUESTS = 50;
const SECOND_WAVE = 10;
/** Sends of one request refused for contention before the test gives up on it. */
const MAX_SENDS = 20;

interface Round {
  total: number;
  /** What the account pays out before the refunds, so its funds may be below the parent's total. */
  payout: number;
  amounts: Array<number | null>;
  secondWave: Array<number | null>;
  ends: Array<'SETTLED' | 'FAILED' | 'UNSETTLED' | 'EXPIRED' | null>;
}

const amountOrRest = (max: number) => fc.option(fc.integer({ min: 1, max }), { nil: null, freq: 10 });
const roundArbitrary: fc.Arbitrary<Round> = fc.integer({ min: 50, max: 5000 }).chain((total) => fc.record({
  total: fc.constant(total),
  payout: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: total - 1 })),
  amounts: fc.array(amountOrRest(Math.max(1, Math.ceil(total / 8))), { minLength: REQUESTS, maxLength: REQUESTS }),
  secondWave: fc.array(amountOrRest(Math.max(1, Math.ceil(total / 4))), { minLength: SECOND_WAVE, maxLength: SECOND_WAVE }),
  ends: fc.array(fc.constantFrom('SETTLED' as const, 'FAILED' as const, 'UNSETTLED' as const, 'EXPIRED' as const, null), { minLength: REQUESTS, maxLength: REQUESTS }),
}));

for (const target of databaseTargets()) {
  describe(`refunds of one parent from two service instances at once: ${target.name}`, function () {
    this.timeout(900_000);
    let database: Database;
    let services: TestService[];
    let headers: Record<string, string>;
    let identityId: string;
    let sequence = 0;

    const env = { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET };
    const ok = (answer: ApiResponse, status: number) => {
      expect(answer.status, answer.text).to.equal(status);
      return answer.body;
    };
    /** A request sent until it is decided: a 409 (contention: nothing applied) is sent again. */
    async function decided(send: () => Promise<ApiResponse>): Promise<ApiResponse> {
      for (let sends = 1; ; sends++) {
        const answer = await send();
        if (answer.status !== 409 || sends >= MAX_SENDS) return answer;
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
      }
    }
    const refund = (via: number, paymentId: string, amount: number | null) => decided(() =>
      services[via]!.request('POST', `/payments/${paymentId}/refund`, { headers, body: amount === null ? {} : { amount: String(amount) } }));
    const notify = (via: number, refundId: string, outcome: string) => decided(() => services[via]!.request('POST', '/refunds/notifications',
      { headers: { 'user-agent': 'provider' }, body: { refundId, outcome, signature: refundNotificationSignature(PROVIDER_SECRET, refundId, outcome) } }));

    before(async () => {
      database = await target.open();
      const first = await startTestService(database, { env });
      services = [first, await startTestService(database, { env })];
      headers = await first.as(await first.createClient('Refunder'));
      identityId = ok(await first.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' } }), 201).id;
    });
    after(async () => {
      for (const service of services ?? []) await service.close();
      await database?.close();
    });

    async function round(r: Round): Promise<void> {
      const [one] = services as [TestService, TestService];
      const get = (path: string) => one.request('GET', path, { headers });
      const account = ok(await one.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'CLP' } }), 201);
      const payment = ok(await one.request('POST', '/payments', { headers, body: { externalId: `refund-race-${++sequence}`, identityId,
        type: 'PURCHASE', accountNumber: account.accountNumber, totalAmount: String(r.total), currency: 'CLP' } }), 200);
      expect(ok(await providerReceipts(() => one, PROVIDER_SECRET)(payment.id), 200).status).to.equal('SETTLED');
      if (r.payout > 0) {
        ok(await one.operator('POST', `/operator/accounts/${account.id}/adjustments`, { amount: String(-r.payout), reason: 'payout' }), 201);
      }
      const funds = r.total - r.payout;

      const first = await Promise.all(r.amounts.map((amount, i) => refund(i % 2, payment.id, amount)));
      const accepted = first.filter((a) => a.status === 201);
      for (const answer of first) {
        expect(answer.status, answer.text).to.be.oneOf([201, 422]);
        if (answer.status === 422) expect(answer.body.message).to.match(/left to refund|nothing left to refund|available; it cannot pay out/);
      }
      const acceptedSum = accepted.reduce((sum, a) => sum + Number(a.body.totalAmount), 0);
      expect(acceptedSum, 'refunds accepted vs the parent’s total').to.be.at.most(r.total);
      expect(acceptedSum, 'refunds accepted vs the account’s funds').to.be.at.most(funds);

      // Ends of the accepted refunds race a second wave of requests.
      const ends = accepted.flatMap((a, i) => (r.ends[i] ? [{ id: a.body.id as string, outcome: r.ends[i]! }] : []));
      const [ended, second] = await Promise.all([
        Promise.all(ends.map((end, i) => notify(i % 2, end.id, end.outcome))),
        Promise.all(r.secondWave.map((amount, i) => refund((i + 1) % 2, payment.id, amount))),
      ]);
      for (const answer of ended) expect(answer.status, answer.text).to.equal(200);
      for (const answer of second) expect(answer.status, answer.text).to.be.oneOf([201, 422]);

      await waitForNewestEvent(one.services, 30_000);
      const children = ok(await get(`/payments/${payment.id}/refund`), 200).refunds as Array<{ id: string; status: string; totalAmount: string }>;
      const created = [...accepted, ...second.filter((a) => a.status === 201)].map((a) => a.body.id as string).sort();
      expect(children.map((c) => c.id).sort(), 'a child per accepted request, no other').to.deep.equal(created);
      const sumOf = (statuses: string[]) => children.filter((c) => statuses.includes(c.status)).reduce((sum, c) => sum + Number(c.totalAmount), 0);
      const refunded = sumOf(['SETTLED']);
      const inProgress = sumOf(['RECEIVED']);
      expect(refunded + inProgress, 'refunds reserved vs the parent’s total').to.be.at.most(r.total);
      expect(refunded + inProgress, 'refunds reserved vs the account’s funds').to.be.at.most(funds);
      const summary = ok(await get(`/payments/${payment.id}/refunds`), 200);
      expect(summary).to.deep.include({
        parentAmount: String(r.total), totalRefunded: String(refunded), totalInProgress: String(inProgress),
        totalFailed: String(sumOf(['FAILED', 'UNSETTLED', 'EXPIRED'])), maxRefundable: String(r.total - refunded - inProgress),
      });

      // The ledger: the account paid the settled refunds out and holds the ones in progress.
      const row = (await database.query<{ balance: string; held: string }>(
        'SELECT balance::text, held::text FROM account_balances WHERE account_id = $1', [account.id])).rows[0]!;
      expect([Number(row.balance), Number(row.held)], 'the account’s balance and held funds').to.deep.equal([funds - refunded, inProgress]);
      const unbalanced = (await database.query('SELECT currency, balance_sum::text FROM trial_balance WHERE NOT balanced')).rows;
      expect(unbalanced, 'trial balance').to.deep.equal([]);
    }

    it(`never refunds more than the parent took or the account had, over ${ROUNDS} rounds of ${REQUESTS} concurrent requests`, async () => {
      await fc.assert(fc.asyncProperty(roundArbitrary, round), { numRuns: ROUNDS, ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true });
    });

    it('rebuilds every read model from the log, refunds and balances included, into rows identical to those built live', async () => {
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
