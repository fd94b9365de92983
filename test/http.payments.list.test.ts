/**
 * GET /payments against an in-memory model: a few hundred payments of one client, created at controlled
 * times over five UTC days (day boundaries included), spread over identities, accounts, types, amounts and
 * statuses; every filter, every sort, paging, both API versions, and the 400s.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { Runtime } from '../src/domain/runtime.ts';
import { toDecimal } from '../src/domain/money.ts';
import { expireDuePayments, runSettlementBatch } from '../src/payments/jobs.ts';
import { DECLINED_CARD } from '../src/payments/sandbox/triggers.ts';
import { paymentSortFields, paymentStatusValues, paymentTypes } from '../schemas/payments.ts';

/** A REFUND is made only by POST /payments/:id/refund (a child of a SETTLED payment), never by POST /payments. */
const creatableTypes = paymentTypes.filter((type) => type !== 'REFUND');
import { quoteIdent } from '../src/db/sql.ts';
import { projectorSchemaName } from '../src/projection/projectorSchema.ts';
import { paymentsProjector } from '../projections/payments.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { providerReceipts, TEST_CARD as card } from './support/payments.ts';

const PROVIDER_SECRET = 'list-provider-secret';
const V2 = '24-04-2025';
const DAY = 86_400_000;
/** 10/03/2025 00:00:00.000 UTC: the first of the five days payments are created on. */
const BASE = Date.UTC(2025, 2, 10);
const DAYS = 5;
const PAYMENTS = 300;
const declinedCard = { ...card, number: DECLINED_CARD.number };

/** A clock the test sets to the instant it wants the next command stamped with. */
function settableClock(): Runtime & { set(ms: number): void } {
  let current = BASE;
  return { now: () => new Date(current), newId: () => randomUUID(), set: (ms) => { current = ms; } };
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure replays identically. */
function seeded(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
}

const ddmmyyyy = (ms: number) => {
  const d = new Date(ms);
  return `${String(d.getUTCDate()).padStart(2, '0')}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${d.getUTCFullYear()}`;
};
/** The model's own reading of a dd/mm/yyyy bound: the UTC day's first millisecond. */
const dayStart = (text: string) => {
  const [d, m, y] = text.split('/').map(Number);
  return Date.UTC(y!, m! - 1, d!);
};

type Outcome =
  | 'created' | 'authorized' | 'captured' | 'received' | 'batched' | 'declined'
  | 'review' | 'reviewRejected' | 'reviewApproved' | 'expired' | 'unsettled';

interface Account { id: string; accountNumber: string; currency: string; identityId: string }

interface Plan {
  index: number;
  externalId: string;
  account: Account;
  type: string;
  method: string | null;
  amount: string;
  createdAt: number;
  expiresAt: number | null;
  outcome: Outcome;
  expectedStatus: string;
  description?: string;
}

interface Model {
  id: string;
  plan: Plan;
  /** The latest flat record a POST answered for this payment. */
  lastAnswer: Record<string, any>;
  /** True when nothing changed the payment after `lastAnswer` (no batch, no expiry job). */
  answerIsCurrent: boolean;
  /** GET /payments/:id once everything has happened. */
  detail: Record<string, any>;
}

const lifecycleKeys = [
  'status', 'accountNumber', 'totalAmount', 'currency', 'settlement', 'createdAt', 'updatedAt', 'expiresAt', 'authorizedAt',
  'capturedAt', 'receivedAt', 'settledAt', 'expiredAt', 'unsettledAt', 'unsettledReason', 'failedAt', 'failureReason',
  'settlementBatchId', 'customerId', 'checkoutSessionId', 'reviewDocuments',
] as const;

/** The v1 flat record the model expects: what never changes from the POST answers, the lifecycle from the detail. */
function expectedFlat(m: Model): Record<string, unknown> {
  const lifecycle = Object.fromEntries(lifecycleKeys.map((k) => [k, m.detail[k]]));
  return { ...m.lastAnswer, ...lifecycle };
}

const methodsByCurrency: Record<string, Array<string | null>> = {
  USD: [null, 'CARD', 'CARD', 'ACH', 'FEDNOW'],
  BRL: [null, 'CARD', 'CARD', 'PIX', 'PIX'],
  CLP: [null, 'CARD', 'ETPAY', 'WEBPAY'],
};
const amountsByCurrency: Record<string, string[]> = {
  // equal numeric values across currencies on purpose (10.00 USD, 10.00 BRL, 25.50 …), and repeats within one
  USD: ['10.00', '10.00', '25.50', '99.99', '250.00', '1.00', '640.10'],
  BRL: ['10.00', '25.50', '120.00', '999.90', '5.00'],
  CLP: ['1000', '5000', '5000', '25000', '99990', '640'],
};
const bigAmount: Record<string, string> = { USD: '1500.00', BRL: '9000.00', CLP: '2000000' };

function originOf(method: string | null): unknown[] | undefined {
  switch (method) {
    case null: return undefined;
    case 'CARD': return [{ type: 'CARD', card }];
    case 'ACH': return [{ type: 'ACH', ach: { routingNumber: '021000021', accountNumber: '000123456789', accountHolder: 'Jane Doe' } }];
    case 'FEDNOW': return [{ type: 'FEDNOW', fedNow: { routingNumber: '021000021', accountNumber: '000123456789' } }];
    case 'PIX': return [{ type: 'PIX', pix: { key: 'payer@example.com' } }];
    case 'ETPAY': return [{ type: 'ETPAY', etpay: { bank: 'Banco Ejemplo' } }];
    case 'WEBPAY': return [{ type: 'WEBPAY', webpay: { email: 'payer@example.com' } }];
    default: throw new Error(`no origin for ${method}`);
  }
}

const settlementOf = (method: string | null) => (method === 'CARD' || method === 'ACH' ? 'T+2' : method === 'WEBPAY' ? 'T+1' : 'INSTANT');

for (const target of databaseTargets()) {
  describe(`payments listing over HTTP against a model: ${target.name}`, function () {
    this.timeout(300_000);
    let database: Database;
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    const clock = settableClock();
    const identities: string[] = [];
    const accounts: Account[] = [];
    let bobIdentity: string;
    let bobAccount: Account;
    const bobIds = new Set<string>();
    const models: Model[] = [];
    const byId = new Map<string, Model>();

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers: Record<string, string | undefined> = asAlice) =>
      service.request('GET', path, { headers });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const ok = (response: ApiResponse, what: string) => {
      expect(response.status, `${what}: ${response.text}`).to.equal(200);
      return response.body as Record<string, any>;
    };

    // ---- the model ------------------------------------------------------------------------------------------

    type Query = Record<string, string | number | undefined>;
    const queryString = (query: Query) => {
      const parts = Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`);
      return parts.length ? `?${parts.join('&')}` : '';
    };

    function sortKey(m: Model, field: string): string | number | null {
      switch (field) {
        case 'createdAt': return Date.parse(m.detail.createdAt);
        case 'updatedAt': return Date.parse(m.detail.updatedAt);
        case 'expiresAt': return m.detail.expiresAt === null ? null : Date.parse(m.detail.expiresAt);
        case 'totalAmount': return m.detail.totalAmount;
        case 'status': return m.detail.status;
        case 'type': return m.detail.type;
        case 'externalId': return m.detail.externalId;
        default: throw new Error(`no sort field ${field}`);
      }
    }
    const order = (a: string | number, b: string | number, numericText: boolean) => {
      if (numericText) return toDecimal(a as string).comparedTo(toDecimal(b as string));
      return a < b ? -1 : a > b ? 1 : 0;
    };
    /** The documented order: the field, then the id in the same direction; absent values last either way. */
    function comparator(sort: string) {
      const [field, direction] = sort.split(':') as [string, 'asc' | 'desc'];
      const sign = direction === 'asc' ? 1 : -1;
      return (a: Model, b: Model) => {
        const ka = sortKey(a, field);
        const kb = sortKey(b, field);
        if (ka === null && kb !== null) return 1;
        if (kb === null && ka !== null) return -1;
        const byField = ka === null || kb === null ? 0 : order(ka, kb, field === 'totalAmount');
        if (byField !== 0) return sign * byField;
        return sign * order(a.id, b.id, false);
      };
    }

    function expected(query: Query): Model[] {
      const from = query.startDate ? dayStart(String(query.startDate)) : -Infinity;
      const before = query.endDate ? dayStart(String(query.endDate)) + DAY : Infinity;
      return models.filter((m) => {
        const d = m.detail;
        const created = Date.parse(d.createdAt);
        return (query.identityId === undefined || d.identityId === query.identityId)
          && (query.type === undefined || d.type === query.type)
          && (query.accountNumber === undefined || d.accountNumber === query.accountNumber)
          && (query.status === undefined || d.status === query.status)
          && (query.checkoutSessionId === undefined || d.checkoutSessionId === query.checkoutSessionId)
          && created >= from && created < before;
      }).sort(comparator(String(query.sort ?? 'createdAt:desc')));
    }

    const versionHeaders = (version: 1 | 2) => ({ ...asAlice, ...(version === 2 ? { 'service-api-version': V2 } : {}) });

    /**
     * A listing (limit 500) checked against the model in both versions; answers what the service listed (the v2
     * records), so that a caller's further assertions are about the service's answer.
     */
    async function checkListing(query: Query, label = JSON.stringify(query)): Promise<Array<Record<string, any>>> {
      const want = expected(query);
      let listed: Array<Record<string, any>> = [];
      for (const version of [1, 2] as const) {
        const answer = ok(await get(`/payments${queryString({ ...query, limit: 500 })}`, versionHeaders(version)), label);
        expect(answer.pagination, `${label} v${version}`).to.deep.equal({ count: want.length, next: want.length, previous: 0, total: want.length });
        expect(answer.results.map((r: { id: string }) => r.id), `${label} v${version} ids`).to.deep.equal(want.map((m) => m.id));
        expect(answer.results, `${label} v${version} records`).to.deep.equal(
          want.map((m) => (version === 2 ? m.detail : expectedFlat(m))));
        if (version === 2) listed = answer.results;
      }
      return listed;
    }

    // ---- the data ---------------------------------------------------------------------------------------------

    before(async function () {
      database = await target.open();
      // The POST answers feed the model, so they must be read-your-writes: wait for the read models as long as
      // the service allows (on a shared Postgres cluster, a transaction open anywhere holds the feed back).
      service = await startTestService(database, {
        runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET, READ_YOUR_WRITES_TIMEOUT_MS: '60000' },
      });
      // Tokens are stamped by the same clock: issue them at the latest instant the test will set, so that
      // every earlier instant is within their life.
      clock.set(BASE + 7 * DAY);
      const alice = await service.createClient('Alice');
      asAlice = await service.as(alice);
      asBob = await service.as(await service.createClient('Bob'));
      clock.set(BASE - DAY);

      const identity = async (headers: Record<string, string>, name: string, country: string) => {
        const response = await post('/identities', { type: 'ORGANIZATION', name, country, email: `${name.toLowerCase()}@example.com` }, headers);
        expect(response.status, response.text).to.equal(201);
        return response.body.id as string;
      };
      const open = async (headers: Record<string, string>, identityId: string, currency: string): Promise<Account> => {
        const response = await post('/accounts', { identityId, type: 'CHECKING', currency }, headers);
        expect(response.status, response.text).to.equal(201);
        return { id: response.body.id, accountNumber: response.body.accountNumber, currency, identityId };
      };
      identities.push(await identity(asAlice, 'Shop', 'BRA'), await identity(asAlice, 'Tienda', 'CHL'));
      accounts.push(
        await open(asAlice, identities[0]!, 'USD'), await open(asAlice, identities[0]!, 'BRL'),
        await open(asAlice, identities[1]!, 'CLP'), await open(asAlice, identities[1]!, 'USD'),
      );
      bobIdentity = await identity(asBob, 'Bobshop', 'BRA');
      bobAccount = await open(asBob, bobIdentity, 'USD');

      // ---- the plans: times over five days (both edges of every day, shared instants), then outcomes --------
      const random = seeded(20250310);
      const instants: number[] = [];
      for (let d = 0; d < DAYS; d++) {
        const start = BASE + d * DAY;
        instants.push(start, start, start + DAY - 1, start + DAY - 1, start + 1, start + DAY - 2);
      }
      const shared = Array.from({ length: 8 }, () => BASE + random.int(DAYS * DAY));
      while (instants.length < PAYMENTS) {
        instants.push(random.next() < 0.15 ? random.pick(shared) : BASE + random.int(DAYS * DAY));
      }
      const plans: Plan[] = instants.map((createdAt, index) => {
        const account = accounts[random.int(accounts.length)]!;
        const method = random.pick(methodsByCurrency[account.currency]!);
        const roll = random.next();
        let outcome: Outcome;
        if (roll < 0.08) outcome = 'review';
        else if (roll < 0.13) outcome = 'reviewRejected';
        else if (roll < 0.16) outcome = 'reviewApproved';
        else if (roll < 0.24) outcome = 'expired';
        else if (roll < 0.45) outcome = 'created';
        else if (method === 'CARD') outcome = random.pick(['authorized', 'captured', 'received', 'batched', 'declined'] as const);
        else if (method === null || settlementOf(method) === 'INSTANT') outcome = random.pick(['received', 'received', 'unsettled'] as const);
        else outcome = random.pick(['received', 'batched'] as const);
        const instantReceived = settlementOf(method) === 'INSTANT';
        const expectedStatus: Record<Outcome, string> = {
          created: 'CREATED', authorized: 'AUTHORIZED', captured: 'CAPTURED', declined: 'FAILED', review: 'REQUIRES_REVIEW',
          reviewRejected: 'FAILED', reviewApproved: 'CREATED', expired: 'EXPIRED', unsettled: 'UNSETTLED', batched: 'SETTLED',
          received: instantReceived ? 'SETTLED' : 'RECEIVED',
        };
        const long = random.next() < 0.3 ? createdAt + 40 * DAY + random.int(DAY) : null;
        return {
          index,
          // unique, in an order unrelated to creation; only letters and digits so any collation agrees
          externalId: `ord${String((index * 7919) % 100_003).padStart(6, '0')}`,
          account, method, type: random.pick(creatableTypes), createdAt, outcome,
          amount: outcome.startsWith('review') ? bigAmount[account.currency]! : random.pick(amountsByCurrency[account.currency]!),
          expiresAt: outcome === 'expired' ? createdAt + 3_600_000 : long,
          expectedStatus: expectedStatus[outcome],
          ...(outcome === 'unsettled' ? { description: 'sandbox:unsettled' } : random.next() < 0.3 ? { description: `order ${index}` } : {}),
        };
      });

      const later = (plan: Plan, minutes: number) => clock.set(plan.createdAt + minutes * 60_000);
      const batched: Model[] = [];
      /** Received only after the settlement batch has run, so they stay RECEIVED. */
      const receiveAfterBatch: Model[] = [];
      for (const plan of plans) {
        clock.set(plan.createdAt);
        const origins = plan.outcome === 'declined' ? [{ type: 'CARD', card: declinedCard }] : originOf(plan.method);
        const body = {
          externalId: plan.externalId, identityId: plan.account.identityId, accountNumber: plan.account.accountNumber,
          totalAmount: plan.amount, currency: plan.account.currency, type: plan.type,
          ...(origins ? { origins } : {}),
          ...(plan.expiresAt !== null ? { expiresAt: new Date(plan.expiresAt).toISOString() } : {}),
          ...(plan.description ? { description: plan.description } : {}),
          ...(plan.index % 11 === 0 ? { identityExternalId: `idx-${plan.index}` } : {}),
        };
        let answer = ok(await post('/payments', body), `create #${plan.index}`);
        const model: Model = { id: answer.id, plan, lastAnswer: answer, answerIsCurrent: true, detail: {} };
        models.push(model);
        byId.set(model.id, model);
        const isCard = plan.method === 'CARD';
        switch (plan.outcome) {
          case 'authorized': case 'captured': case 'received': case 'batched': case 'declined':
            if (isCard) {
              later(plan, 1);
              answer = ok(await post(`/payments/${model.id}/authorized`), `authorize #${plan.index}`);
              if (plan.outcome === 'authorized' || plan.outcome === 'declined') break;
              later(plan, 2);
              answer = ok(await post(`/payments/${model.id}/captured`), `capture #${plan.index}`);
              if (plan.outcome === 'captured') break;
            }
            if (plan.outcome === 'received' && settlementOf(plan.method) !== 'INSTANT') {
              receiveAfterBatch.push(model);
              break;
            }
            later(plan, 3);
            answer = ok(await received(model.id), `receive #${plan.index}`);
            if (plan.outcome === 'batched') batched.push(model);
            break;
          case 'unsettled':
            later(plan, 3);
            answer = ok(await received(model.id), `receive #${plan.index}`);
            break;
          case 'reviewRejected': case 'reviewApproved':
            later(plan, 5);
            answer = ok(await service.operator('POST', `/operator/payments/${model.id}/review`,
              { decision: plan.outcome === 'reviewRejected' ? 'REJECTED' : 'APPROVED' }), `review #${plan.index}`);
            break;
          default:
            break;
        }
        model.lastAnswer = answer;
        // created at the instant set, whatever the real time is
        expect(answer.createdAt).to.equal(new Date(plan.createdAt).toISOString());
      }

      // A settlement batch for the `batched` ones, then the payments that stay RECEIVED, then the expiry job.
      // The batch and the job change payments without a POST answering.
      clock.set(BASE + DAYS * DAY + 3_600_000);
      const batch = await runSettlementBatch(service.services);
      expect(batch).to.include({ settled: batched.length, unsettled: 0, skipped: 0 });
      for (const m of batched) m.answerIsCurrent = false;
      for (const m of receiveAfterBatch) {
        clock.set(BASE + DAYS * DAY + 5_400_000 + m.plan.index);
        m.lastAnswer = ok(await received(m.id), `receive #${m.plan.index}`);
        expect(m.lastAnswer.status).to.equal('RECEIVED');
      }
      clock.set(BASE + DAYS * DAY + 2 * 3_600_000);
      const expiry = await expireDuePayments(service.services);
      const expiring = models.filter((m) => m.plan.outcome === 'expired');
      expect(expiry.expired).to.equal(expiring.length);
      for (const m of expiring) m.answerIsCurrent = false;

      // Bob: same instants and externalIds as some of Alice's; none may ever show in her listings.
      for (const plan of plans.slice(0, 12)) {
        clock.set(plan.createdAt);
        const answer = ok(await post('/payments', {
          externalId: plan.externalId, identityId: bobIdentity, accountNumber: bobAccount.accountNumber,
          totalAmount: '10.00', currency: 'USD', type: plan.type,
        }, asBob), 'bob create');
        bobIds.add(answer.id);
      }

      // The model's view of each payment: the detailed shape as GET /payments/:id answers it.
      for (let i = 0; i < models.length; i += 25) {
        await Promise.all(models.slice(i, i + 25).map(async (m) => {
          m.detail = ok(await get(`/payments/${m.id}`), `detail of #${m.plan.index}`);
        }));
      }
      for (const m of models) {
        expect(m.detail.status, `status of #${m.plan.index} (${m.plan.outcome}, ${m.plan.method})`).to.equal(m.plan.expectedStatus);
      }
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('the data set is what the filters need: every status moved to, ties, both edges of every day', () => {
      const statuses = new Set(models.map((m) => m.detail.status));
      for (const status of ['CREATED', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'EXPIRED', 'UNSETTLED', 'REQUIRES_REVIEW', 'FAILED']) {
        expect(statuses, status).to.include(status);
      }
      expect(new Set(models.map((m) => m.detail.type)).size).to.be.at.least(8);
      const times = models.map((m) => m.detail.createdAt as string);
      expect(new Set(times).size, 'shared creation instants').to.be.lessThan(times.length);
      for (let d = 0; d < DAYS; d++) {
        expect(times).to.include(new Date(BASE + d * DAY).toISOString());
        expect(times).to.include(new Date(BASE + (d + 1) * DAY - 1).toISOString());
      }
      expect(models.some((m) => m.detail.expiresAt !== null) && models.some((m) => m.detail.expiresAt === null)).to.equal(true);
      // the derivation of the expected v1 record agrees with the records POST answered
      for (const m of models.filter((x) => x.answerIsCurrent)) expect(expectedFlat(m), m.id).to.deep.equal(m.lastAnswer);
    });

    it('lists everything, newest first by default, in both versions', async () => {
      const all = await checkListing({});
      expect(all).to.have.length(PAYMENTS);
      for (const id of bobIds) expect(all.map((r) => r.id)).not.to.include(id);
      const empty = ok(await get('/payments?limit=500', { ...asAlice, 'service-api-version': '' }), 'empty version header');
      expect(empty.results).to.deep.equal(expected({}).map(expectedFlat));
    });

    it('each filter alone matches the model', async () => {
      for (const identityId of identities) expect(await checkListing({ identityId })).not.to.be.empty;
      for (const account of accounts) expect(await checkListing({ accountNumber: account.accountNumber })).not.to.be.empty;
      for (const type of paymentTypes) await checkListing({ type });
      for (const status of paymentStatusValues) await checkListing({ status });
      expect(await checkListing({ status: 'REFUNDED' })).to.deep.equal([]);
      expect(await checkListing({ status: 'PENDING' })).to.deep.equal([]);
      expect(await checkListing({ checkoutSessionId: 'cs_none' })).to.deep.equal([]);
      // another client's identity or account number filters to nothing, never to its payments
      expect(await checkListing({ identityId: bobIdentity })).to.deep.equal([]);
      expect(await checkListing({ accountNumber: bobAccount.accountNumber })).to.deep.equal([]);
      const bobs = ok(await get(`/payments?limit=500`, asBob), 'bob list');
      expect(new Set(bobs.results.map((r: { id: string }) => r.id))).to.deep.equal(bobIds);
    });

    it('filters combine (and sort and page together)', async () => {
      const random = seeded(7);
      for (let i = 0; i < 25; i++) {
        const query: Query = {};
        if (random.next() < 0.5) query.identityId = random.pick(identities);
        if (random.next() < 0.4) query.accountNumber = random.pick(accounts).accountNumber;
        if (random.next() < 0.4) query.type = random.pick(paymentTypes);
        if (random.next() < 0.5) query.status = random.pick(['CREATED', 'SETTLED', 'FAILED', 'RECEIVED', 'REQUIRES_REVIEW', 'EXPIRED']);
        if (random.next() < 0.5) query.startDate = ddmmyyyy(BASE + random.int(3) * DAY);
        if (random.next() < 0.5) query.endDate = ddmmyyyy(BASE + (2 + random.int(3)) * DAY);
        query.sort = `${random.pick(paymentSortFields)}:${random.pick(['asc', 'desc'])}`;
        await checkListing(query);
      }
      const a = accounts[0]!;
      const some = await checkListing({ identityId: a.identityId, accountNumber: a.accountNumber, status: 'SETTLED', sort: 'totalAmount:asc' });
      expect(some.length).to.be.greaterThan(0);
      // an account of one identity with the other identity: nothing
      expect(await checkListing({ identityId: identities[1]!, accountNumber: a.accountNumber })).to.deep.equal([]);
    });

    for (const field of paymentSortFields) {
      for (const direction of ['asc', 'desc'] as const) {
        it(`sorts by ${field}:${direction}, ties by id the same way, absent values last`, async () => {
          const sorted = await checkListing({ sort: `${field}:${direction}` });
          expect(sorted).to.have.length(PAYMENTS);
          if (field === 'expiresAt') {
            const firstNull = sorted.findIndex((r) => r.expiresAt === null);
            expect(firstNull).to.be.greaterThan(0);
            expect(sorted.slice(firstNull).every((r) => r.expiresAt === null)).to.equal(true);
          }
        });
      }
    }

    it('ties are really broken by id: payments created at the same instant come in id order, both ways', async () => {
      const instant = new Date(BASE + DAY).toISOString();
      const sharing = models.filter((m) => m.detail.createdAt === instant).map((m) => m.id);
      expect(sharing.length).to.be.at.least(2);
      const asc = ok(await get(`/payments?sort=createdAt:asc&limit=500&startDate=${ddmmyyyy(BASE + DAY)}&endDate=${ddmmyyyy(BASE + DAY)}`), 'asc');
      const firstIds = asc.results.slice(0, sharing.length).map((r: { id: string }) => r.id);
      expect(firstIds).to.deep.equal([...sharing].sort());
      const desc = ok(await get(`/payments?sort=createdAt:desc&limit=500&startDate=${ddmmyyyy(BASE + DAY)}&endDate=${ddmmyyyy(BASE + DAY)}`), 'desc');
      expect(desc.results.slice(-sharing.length).map((r: { id: string }) => r.id)).to.deep.equal([...sharing].sort().reverse());
    });

    it('pages (limit and offset) concatenate to the whole ordered list, with the pagination right', async () => {
      for (const [limit, query] of [[7, {}], [50, { sort: 'totalAmount:asc' }], [13, { status: 'CREATED', sort: 'expiresAt:desc' }],
        [1, { identityId: identities[1]!, type: 'P2P' }], [500, { sort: 'updatedAt:asc' }]] as Array<[number, Query]>) {
        const want = expected(query).map((m) => m.id);
        const total = want.length;
        for (const version of [1, 2] as const) {
          const headers = versionHeaders(version);
          const got: string[] = [];
          for (let offset = 0; ; offset += limit) {
            const page = ok(await get(`/payments${queryString({ ...query, limit, offset })}`, headers), `page ${offset}`);
            const count = Math.min(limit, Math.max(total - offset, 0));
            expect(page.pagination, `limit ${limit} offset ${offset}`).to.deep.equal({
              count, next: Math.min(offset + limit, total), previous: Math.max(offset - limit, 0), total,
            });
            got.push(...page.results.map((r: { id: string }) => r.id));
            if (offset + limit >= total) break;
          }
          expect(got, `limit ${limit} ${JSON.stringify(query)}`).to.deep.equal(want);
        }
      }
      // an offset past the end: an empty page that still counts the whole
      const past = ok(await get(`/payments?offset=${PAYMENTS + 10}`, asAlice), 'past the end');
      expect(past.results).to.deep.equal([]);
      expect(past.pagination).to.include({ count: 0, total: PAYMENTS });
      // the last partial page
      const last = ok(await get(`/payments?limit=40&offset=280`), 'last page');
      expect(last.pagination).to.deep.equal({ count: 20, next: PAYMENTS, previous: 240, total: PAYMENTS });
      expect(last.results.map((r: { id: string }) => r.id)).to.deep.equal(expected({}).slice(280).map((m) => m.id));
    });

    it('limit defaults to 50 and may be at most 500', async () => {
      const first = ok(await get('/payments'), 'default');
      expect(first.pagination).to.deep.equal({ count: 50, next: 50, previous: 0, total: PAYMENTS });
      expect(first.results).to.deep.equal(expected({}).slice(0, 50).map(expectedFlat));
      const second = ok(await get('/payments?offset=50'), 'default, second page');
      expect(second.results.map((r: { id: string }) => r.id)).to.deep.equal(expected({}).slice(50, 100).map((m) => m.id));
      expect(ok(await get('/payments?limit=500'), '500').pagination.count).to.equal(PAYMENTS);
      for (const bad of ['limit=501', 'limit=0', 'limit=-1', 'limit=abc', 'limit=2.5', 'offset=-1', 'offset=x']) {
        const response = await get(`/payments?${bad}`);
        expect(response.status, bad).to.equal(400);
        expect(response.body, bad).to.include({ statusCode: 400, error: 'invalidParam' });
        expect(response.body.message, bad).to.include(bad.split('=')[0]);
      }
    });

    it('startDate and endDate bound whole UTC days, both inclusive, to the millisecond', async () => {
      for (let d = 0; d < DAYS; d++) {
        const day = ddmmyyyy(BASE + d * DAY);
        const one = await checkListing({ startDate: day, endDate: day });
        const instants = one.map((r) => r.createdAt as string);
        expect(instants, `first instant of ${day}`).to.include(new Date(BASE + d * DAY).toISOString());
        expect(instants, `last instant of ${day}`).to.include(new Date(BASE + (d + 1) * DAY - 1).toISOString());
        expect(instants, `the instant before ${day}`).not.to.include(new Date(BASE + d * DAY - 1).toISOString());
        expect(instants, `the instant after ${day}`).not.to.include(new Date(BASE + (d + 1) * DAY).toISOString());
        await checkListing({ startDate: day });
        await checkListing({ endDate: day });
      }
      const days = Array.from({ length: DAYS }, (_, d) => ddmmyyyy(BASE + d * DAY));
      const sum = (await Promise.all(days.map((day) => get(`/payments?limit=1&startDate=${day}&endDate=${day}`))))
        .reduce((n, r) => n + (r.body.pagination.total as number), 0);
      expect(sum, 'the days partition the payments').to.equal(PAYMENTS);
      expect(await checkListing({ startDate: days[1]!, endDate: days[3]! })).not.to.be.empty;
      expect(await checkListing({ endDate: ddmmyyyy(BASE - DAY) })).to.deep.equal([]);
      expect(await checkListing({ startDate: ddmmyyyy(BASE + DAYS * DAY) })).to.deep.equal([]);
      expect(await checkListing({ startDate: ddmmyyyy(BASE - 30 * DAY), endDate: ddmmyyyy(BASE + 30 * DAY) })).to.have.length(PAYMENTS);
      // a leap day is a real date
      expect(ok(await get('/payments?startDate=29/02/2024&endDate=29/02/2024', asAlice), 'leap day').pagination.total).to.equal(0);
    });

    it('a startDate after the endDate is a 400', async () => {
      const response = await get(`/payments?startDate=${ddmmyyyy(BASE + 2 * DAY)}&endDate=${ddmmyyyy(BASE + DAY)}`);
      expect(response.status).to.equal(400);
      expect(response.body).to.include({ statusCode: 400, error: 'invalidParam' });
      expect(response.body.message).to.match(/startDate/);
    });

    for (const [parameter, value] of [
      ['startDate', '2024-01-01'], ['startDate', '31/02/2024'], ['endDate', '1/1/2024'], ['endDate', '29/02/2023'],
      ['startDate', '00/01/2024'], ['endDate', '01/13/2024'], ['startDate', '10/03/2025T00:00'], ['endDate', ''],
    ] as const) {
      it(`a bad date (${parameter}=${value || 'empty'}) is a 400 with the error payload`, async () => {
        const response = await get(`/payments?${parameter}=${encodeURIComponent(value)}`);
        expect(response.status).to.equal(400);
        expect(Object.keys(response.body).sort()).to.deep.equal(['error', 'message', 'statusCode']);
        expect(response.body).to.include({ statusCode: 400, error: 'invalidParam' });
        expect(response.body.message).to.include(parameter);
      });
    }

    it('a bad sort, an unknown parameter or a bad filter value is a 400', async () => {
      for (const bad of ['sort=createdAt', 'sort=createdAt:up', 'sort=amount:asc', 'sort=createdAt:ASC', 'sort=id:asc', 'sort=',
        'color=red', 'cursor=0', 'page=2', 'status=DONE', 'type=GIFT', 'identityId=no%20such', 'accountNumber=']) {
        const response = await get(`/payments?${bad}`);
        expect(response.status, bad).to.equal(400);
        expect(response.body, bad).to.include({ statusCode: 400, error: 'invalidParam' });
        expect(response.body.message, bad).to.include(bad.split('=')[0]);
      }
    });

    it('v1 results are the flat records, v2 results exactly GET /payments/:id, for the same payment', async () => {
      const v1 = ok(await get('/payments?limit=500&sort=externalId:asc'), 'v1');
      const v2 = ok(await get('/payments?limit=500&sort=externalId:asc', { ...asAlice, 'service-api-version': V2 }), 'v2');
      expect(v1.results.map((r: { id: string }) => r.id)).to.deep.equal(v2.results.map((r: { id: string }) => r.id));
      for (const [i, record] of (v2.results as Array<Record<string, any>>).entries()) {
        const m = byId.get(record.id)!;
        expect(record, `v2 ${record.id}`).to.deep.equal(m.detail);
        expect(v1.results[i], `v1 ${record.id}`).to.deep.equal(expectedFlat(m));
        if (m.answerIsCurrent) expect(v1.results[i], `v1 ${record.id} as POST answered`).to.deep.equal(m.lastAnswer);
      }
      // the two shapes really differ
      expect(v1.results[0]).to.have.property('identityExternalId');
      expect(v2.results[0]).to.have.property('destinationAmount');
      expect(v2.results[0]).not.to.have.property('identityExternalId');
      // refundedAt is in both (the interface's Payment has it)
      expect(v2.results[0]).to.have.property('refundedAt');
    });

    it('a bad service-api-version header is a 400', async () => {
      for (const bad of ['2025-04-24', '25-04-2025', 'v2', '2', '24-04-2025x']) {
        const response = await get('/payments', { ...asAlice, 'service-api-version': bad });
        expect(response.status, bad).to.equal(400);
        expect(response.body, bad).to.include({ statusCode: 400, error: 'invalidParam' });
        expect(response.body.message, bad).to.include('service-api-version');
      }
    });

    // An empty page fits both documented page shapes (v1 and v2); the contract must still accept it.
    it('an empty page satisfies the documented 200 schema', async () => {
      for (const headers of [asAlice, { ...asAlice, 'service-api-version': V2 }]) {
        const response = await get('/payments?status=REFUNDED', headers);
        expect(response.status).to.equal(200);
        expect(response.body).to.deep.equal({ pagination: { count: 0, next: 0, previous: 0, total: 0 }, results: [] });
      }
    });

    // An upgrade serves the version before the kept counts while the new one builds: its lists count their matches.
    it('totals stay exact while the serving read model keeps no counts', async () => {
      const view = `${quoteIdent(database.schema)}.payment_counts`;
      await database.query(`DROP VIEW ${view}`);
      try {
        await checkListing({});
        await checkListing({ status: 'SETTLED' });
        await checkListing({ accountNumber: accounts[0]!.accountNumber });
      } finally {
        await database.query(`CREATE VIEW ${view} AS SELECT * FROM ${quoteIdent(projectorSchemaName(database.schema, paymentsProjector))}.payment_counts`);
      }
    });
  });
}
