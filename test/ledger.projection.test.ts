import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import type { AccountAdjustedData } from '../src/ledger/events.ts';
import { CURRENCY_SCALES, formatAmount, toDecimal, zeroAmount, type Decimal } from '../src/domain/money.ts';
import { assertBalanced, systemAccountId, type JournalEntry } from '../projections/ledgerPostings.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { balancesOf, createLedgerProjector } from '../projections/ledger.ts';
import { registered } from '../src/contexts.ts';
import { readModelsOf } from '../projections/readModels.ts';
import { databaseTargets } from './support/targets.ts';
import { until } from './support/until.ts';

const fast = { idlePollMs: 20, initialBackoffMs: 10, maxBackoffMs: 50, leaseTtlMs: 2_000 };
const CURRENCIES = ['USD', 'CLP', 'BTC', 'USDC'] as const;
type TestCurrency = (typeof CURRENCIES)[number];

/** A signed amount in minor units written at the currency's scale, canonical or with trailing zeros dropped. */
function amountText(minor: bigint, currency: string, trimmed: boolean): string {
  const scale = CURRENCY_SCALES[currency as keyof typeof CURRENCY_SCALES];
  const value = toDecimal(minor).dividedBy(toDecimal(10n ** BigInt(scale)));
  return trimmed ? value.toString() : formatAmount(value, currency);
}

function adjustment(accountId: string, currency: string, amount: string, adjustedAt = new Date().toISOString()): NewEvent {
  const data: AccountAdjustedData = {
    accountId, clientId: 'client-1', currency, amount, reason: 'test deposit', adjustmentId: randomUUID(), adjustedAt,
  };
  return { type: 'AccountAdjusted', data, metadata: { clientId: 'client-1', actor: 'operator' } };
}

for (const target of databaseTargets()) {
  describe(`ledger projection: ${target.name}`, () => {
    let database: Database;
    let store: PostgresEventStore;
    /** The daemon serving the ledger now, and its version; a rebuild replaces both. */
    let serving: ProjectionDaemon;
    let version = 1;

    const startLedger = (v: number) => {
      const daemon = new ProjectionDaemon(database, store, fast).addProjector(createLedgerProjector(v, registered.postings));
      daemon.start();
      return daemon;
    };
    /**
     * The newest position this suite appended. (Not `headPosition()`: on Postgres the readable head stays behind
     * any transaction still open anywhere in the cluster, so it can lag what was just appended.)
     */
    let appended: Position | null = null;
    const catchUp = async () => {
      if (appended) expect(await serving.waitFor(appended, 30_000)).to.equal(true);
    };
    const append = async (accountId: string, events: NewEvent[]) => {
      const result = await store.append(`account-${accountId}`, events, 'any');
      if (!appended || comparePositions(result.position, appended) > 0) appended = result.position;
      return result;
    };

    /** Everything the ledger wrote, in a stable order, as text. */
    async function snapshot() {
      const entries = (await database.query(`SELECT entry_id, currency, occurred_at, description, source_event_id, client_id
        FROM ledger_entries ORDER BY entry_id`)).rows;
      const postings = (await database.query(`SELECT entry_id, line_no, account_id, currency, amount::text
        FROM ledger_postings ORDER BY entry_id, line_no`)).rows;
      const balances = (await database.query(`SELECT account_id, currency, balance::text, held::text, available_funds::text, updated_at
        FROM ledger_balances ORDER BY account_id, currency`)).rows;
      return { entries, postings, balances };
    }

    /** Replaces the serving version by a rebuild from position zero; resolves once the new version serves. */
    async function rebuild(): Promise<void> {
      await serving.stop();
      version += 1;
      serving = startLedger(version);
      await until(async () => (await serving.status()).some((s) => s.name === 'ledger' && s.version === version && s.status === 'active'));
      await catchUp();
    }

    /** The invariants that must hold over the whole ledger at any caught-up moment. */
    async function checkInvariants(): Promise<void> {
      // every entry balances: at least two non-zero lines summing to zero, and each entry has its lines
      const unbalanced = await database.query(`SELECT entry_id, sum(amount)::text AS total, count(*)::int AS lines
        FROM ledger_postings GROUP BY entry_id HAVING sum(amount) <> 0 OR count(*) < 2 OR bool_or(amount = 0)`);
      expect(unbalanced.rows).to.deep.equal([]);
      const orphans = await database.query(`SELECT e.entry_id, p.entry_id AS posting_entry FROM ledger_entries e
        FULL JOIN (SELECT DISTINCT entry_id FROM ledger_postings) p ON p.entry_id = e.entry_id
        WHERE e.entry_id IS NULL OR p.entry_id IS NULL`);
      expect(orphans.rows).to.deep.equal([]);
      const mixed = await database.query(`SELECT p.entry_id FROM ledger_postings p JOIN ledger_entries e USING (entry_id)
        WHERE p.currency <> e.currency`);
      expect(mixed.rows).to.deep.equal([]);

      // per currency, all balances sum to exactly zero
      const trial = (await database.query<{ currency: string; balance_sum: string; accounts: number; balanced: boolean }>(
        `SELECT currency, balance_sum::text, accounts, balanced FROM trial_balance ORDER BY currency`)).rows;
      const counts = (await database.query<{ currency: string; n: number }>(
        `SELECT currency, count(*)::int AS n FROM ledger_balances GROUP BY currency ORDER BY currency`)).rows;
      expect(trial.map((r) => [r.currency, r.accounts])).to.deep.equal(counts.map((r) => [r.currency, r.n]));
      for (const row of trial) {
        expect(toDecimal(row.balance_sum).isZero(), `${row.currency} sums to ${row.balance_sum}`).to.equal(true);
        expect(row.balanced).to.equal(true);
      }

      // each account's balance is the sum of its postings, and available funds its balance less holds
      const drift = await database.query(`SELECT account_id, currency, b.balance::text, p.total::text
        FROM ledger_balances b
        FULL JOIN (SELECT account_id, currency, sum(amount) AS total FROM ledger_postings GROUP BY account_id, currency) p
          USING (account_id, currency)
       WHERE b.balance IS DISTINCT FROM p.total OR b.available_funds IS DISTINCT FROM b.balance - b.held`);
      expect(drift.rows).to.deep.equal([]);
    }

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
      serving = startLedger(version);
    });
    after(async () => {
      await serving?.stop();
      await store?.close();
      await database?.close();
    });

    it('posts an adjustment as a balanced entry, visible through the finance views and balancesOf', async () => {
      const a = randomUUID();
      const b = randomUUID();
      const first = adjustment(a, 'USD', '100.5', '2025-03-01T10:00:00.000Z');
      await append(a, [first, adjustment(a, 'USD', '-30', '2025-03-01T11:00:00.000Z')]);
      await append(b, [adjustment(b, 'CLP', '1500', '2025-03-02T09:30:00.000Z')]);
      await catchUp();

      const lines = (await database.query(`SELECT entry_id, occurred_at, currency, description, source_event_id, client_id,
          line_no, account_id, amount::text, is_system
        FROM ledger_entry_lines WHERE account_id = $1 OR entry_id IN (SELECT entry_id FROM ledger_postings WHERE account_id = $1)
        ORDER BY occurred_at, line_no`, [a])).rows;
      expect(lines).to.have.length(4);
      const [recorded] = await store.readStream(`account-${a}`);
      expect(lines[0]).to.deep.include({
        currency: 'USD', source_event_id: recorded!.id, client_id: 'client-1', line_no: 0, account_id: a,
        amount: '100.500000000000000000', is_system: false,
      });
      expect(lines[0]!.description).to.match(/^Adjustment [0-9a-f-]{36}: test deposit$/);
      expect(lines[0]!.occurred_at.toISOString()).to.equal('2025-03-01T10:00:00.000Z');
      expect(lines[1]).to.deep.include({ line_no: 1, account_id: 'system:USD:adjustments', amount: '-100.500000000000000000', is_system: true });

      const balances = (await database.query(`SELECT account_id, currency, balance::text, available_funds::text, is_system, held::text, updated_at
        FROM account_balances WHERE account_id = ANY($1) ORDER BY account_id`, [[a, b]])).rows;
      expect(balances).to.deep.equal([
        { account_id: a, currency: 'USD', balance: '70.50', available_funds: '70.50', is_system: false, held: '0',
          updated_at: new Date('2025-03-01T11:00:00.000Z') },
        { account_id: b, currency: 'CLP', balance: '1500', available_funds: '1500', is_system: false, held: '0',
          updated_at: new Date('2025-03-02T09:30:00.000Z') },
      ].sort((x, y) => (x.account_id < y.account_id ? -1 : 1)));

      const result = await balancesOf(readModelsOf(database), [
        { accountId: a, currency: 'USD' }, { accountId: b, currency: 'CLP' }, { accountId: 'never-posted', currency: 'BTC' },
        'system:CLP:adjustments', 'system:EUR:fees', 'unknown-bare-id',
      ]);
      expect(Object.fromEntries(result)).to.deep.equal({
        [a]: { balance: '70.50', availableFunds: '70.50' },
        [b]: { balance: '1500', availableFunds: '1500' },
        'never-posted': { balance: '0.00000000', availableFunds: '0.00000000' },
        'system:CLP:adjustments': (await balancesOf(readModelsOf(database), [{ accountId: 'system:CLP:adjustments', currency: 'CLP' }]))
          .get('system:CLP:adjustments'),
        'system:EUR:fees': { balance: '0.00', availableFunds: '0.00' },
        'unknown-bare-id': { balance: '0', availableFunds: '0' },
      });
      expect((await balancesOf(readModelsOf(database), [a])).get(a)).to.deep.equal({ balance: '70.50', availableFunds: '70.50' });
      expect((await balancesOf(readModelsOf(database), [])).size).to.equal(0);

      const trial = (await database.query(`SELECT currency, balance_sum::text, accounts, balanced FROM trial_balance
        WHERE currency IN ('USD', 'CLP') ORDER BY currency`)).rows;
      expect(trial.map((r) => [r.currency, toDecimal(r.balance_sum).isZero(), r.balanced])).to.deep.equal([['CLP', true, true], ['USD', true, true]]);
      await checkInvariants();
    });

    it('available funds are the balance less holds', async () => {
      const a = randomUUID();
      await append(a, [adjustment(a, 'USD', '50')]);
      await catchUp();
      // Holds arrive with refunds; the column is there, and available_funds follows it.
      const schema = (await serving.status()).find((s) => s.name === 'ledger' && s.status === 'active')!.schemaName!;
      await database.query(`UPDATE "${schema}".ledger_balances SET held = 12.5 WHERE account_id = $1`, [a]);
      expect((await balancesOf(readModelsOf(database), [{ accountId: a, currency: 'USD' }])).get(a)).to.deep.equal({
        balance: '50.00', availableFunds: '37.50' });
      await database.query(`UPDATE "${schema}".ledger_balances SET held = 0 WHERE account_id = $1`, [a]);
    });

    it('invariants hold over random adjustments, and a rebuild from zero gives identical balances (property)', async function () {
      // Up to 12 runs, each a rebuild of the whole feed from zero. Past its bound mocha would go on to the next
      // test while the runs went on: two rebuild loops swapping `serving` and the views under each other.
      this.timeout(300_000);
      const script = fc.record({
        accounts: fc.array(fc.constantFrom(...CURRENCIES), { minLength: 1, maxLength: 5 }),
        steps: fc.array(fc.record({
          account: fc.nat(),
          minor: fc.bigInt({ min: -(10n ** 13n), max: 10n ** 13n }).filter((n) => n !== 0n),
          trimmed: fc.boolean(),
          minutes: fc.integer({ min: 0, max: 60 * 24 * 365 }),
          catchUp: fc.boolean(),
          batch: fc.integer({ min: 1, max: 3 }),
        }), { minLength: 1, maxLength: 25 }),
      });
      await fc.assert(fc.asyncProperty(script, async ({ accounts, steps }) => {
        const ids = accounts.map(() => randomUUID());
        const expected = new Map<string, Decimal>(ids.map((id) => [id, toDecimal('0')]));
        for (const step of steps) {
          const index = step.account % ids.length;
          const id = ids[index]!;
          const currency: TestCurrency = accounts[index]!;
          const events = Array.from({ length: step.batch }, (_, i) => {
            const minor = i % 2 === 0 ? step.minor : -step.minor / 2n || 1n;
            expected.set(id, expected.get(id)!.plus(toDecimal(amountText(minor, currency, false))));
            const at = new Date(Date.UTC(2025, 0, 1) + (step.minutes + i) * 60_000).toISOString();
            return adjustment(id, currency, amountText(minor, currency, step.trimmed), at);
          });
          const { position } = await append(id, events);
          if (step.catchUp) expect(await serving.waitFor(position, 30_000)).to.equal(true);
        }
        await catchUp();
        await checkInvariants();

        // each account's balance is what its adjustments add up to (untouched accounts read zero at scale)
        const balances = await balancesOf(readModelsOf(database), ids.map((accountId, i) => ({ accountId, currency: accounts[i]! })));
        ids.forEach((id, i) => {
          const amount = formatAmount(expected.get(id)!, accounts[i]!);
          expect(balances.get(id)).to.deep.equal({ balance: amount, availableFunds: amount });
        });

        // every entry of this run, read back from the finance view, passes assertBalanced
        const lines = (await database.query<{ entry_id: string; occurred_at: Date; currency: string; description: string;
          source_event_id: string; client_id: string | null; account_id: string; amount: string }>(
          `SELECT entry_id, occurred_at, currency, description, source_event_id, client_id, account_id, amount::text
             FROM ledger_entry_lines
            WHERE entry_id IN (SELECT entry_id FROM ledger_postings WHERE account_id = ANY($1))
            ORDER BY entry_id, line_no`, [ids])).rows;
        const entries = new Map<string, JournalEntry>();
        for (const line of lines) {
          const entry = entries.get(line.entry_id) ?? {
            entryId: line.entry_id, currency: line.currency, occurredAt: line.occurred_at.toISOString(), description: line.description,
            sourceEventId: line.source_event_id, clientId: line.client_id, lines: [],
          };
          entries.set(line.entry_id, { ...entry, lines: [...entry.lines, { accountId: line.account_id, amount: formatAmount(line.amount, line.currency) }] });
        }
        expect(entries.size).to.equal(steps.reduce((n, s) => n + s.batch, 0));
        for (const entry of entries.values()) {
          assertBalanced(entry);
          expect(entry.lines.map((l) => l.accountId)).to.include(systemAccountId(entry.currency, 'adjustments'));
        }

        // a rebuild from position zero (the next version) writes exactly the same rows
        const before = await snapshot();
        await rebuild();
        expect(await snapshot()).to.deep.equal(before);
        await checkInvariants();
      }), { numRuns: target.name === 'pglite' ? 8 : 12 });
    });

    it('catches up a long feed from position zero in batches, exactly', async function () {
      this.timeout(300_000);
      const accounts = Array.from({ length: 40 }, (_, i) => ({ id: randomUUID(), currency: CURRENCIES[i % CURRENCIES.length]! }));
      const expected = new Map<string, Decimal>(accounts.map((a) => [a.id, toDecimal('0')]));
      await serving.stop();
      let total = 0;
      for (let round = 0; round < 30; round++) {
        await Promise.all(accounts.slice(0, 10).map(async (_, k) => {
          const account = accounts[(round * 10 + k) % accounts.length]!;
          const events = Array.from({ length: 10 }, (__, i) => {
            const minor = BigInt((round * 7919 + k * 104_729 + i * 1_299_709) % 2_000_001) - 1_000_000n || 1n;
            const amount = amountText(minor, account.currency, false);
            expected.set(account.id, expected.get(account.id)!.plus(toDecimal(amount)));
            return adjustment(account.id, account.currency, amount);
          });
          total += events.length;
          await append(account.id, events);
        }));
      }
      expect(total).to.equal(3000);
      const started = performance.now();
      await rebuild();
      const ms = performance.now() - started;
      expect(ms, 'catch-up time').to.be.below(120_000);
      await checkInvariants();
      const balances = await balancesOf(readModelsOf(database), accounts.map((a) => ({ accountId: a.id, currency: a.currency })));
      for (const account of accounts) {
        const amount = formatAmount(expected.get(account.id)!, account.currency);
        expect(balances.get(account.id)).to.deep.equal({ balance: amount, availableFunds: amount });
      }
    });

    it('stops on a malformed money event instead of skipping it', async () => {
      const isolated = await target.open();
      const isolatedStore = new PostgresEventStore(isolated);
      const daemon = new ProjectionDaemon(isolated, isolatedStore, fast).addProjector(createLedgerProjector(1, registered.postings));
      try {
        const a = randomUUID();
        await isolatedStore.append(`account-${a}`, [adjustment(a, 'USD', '1.001'), adjustment(a, 'USD', '5')], 'no_stream');
        daemon.start();
        const runner = daemon.projectionRunners[0]!;
        await until(() => runner.state === 'failing');
        await until(async () => (await daemon.status()).some((s) => s.name === 'ledger' && s.lastError !== null));
        const [state] = await daemon.status();
        expect(state!.checkpoint).to.equal(null);
        expect(state!.lastError).to.match(/decimals/);
        expect((await isolated.query('SELECT count(*)::int AS n FROM ledger_postings')).rows).to.deep.equal([{ n: 0 }]);
        expect(zeroAmount('USD')).to.equal((await balancesOf(readModelsOf(isolated), [{ accountId: a, currency: 'USD' }])).get(a)!.balance);
      } finally {
        await daemon.stop();
        await isolatedStore.close();
        await isolated.close();
      }
    });
  });
}
