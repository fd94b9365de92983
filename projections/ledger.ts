/**
 * The ledger: every money event becomes balanced journal entries (`entriesFor`), written in batches:
 * per batch of events, one insert into `ledger_entries`, one into `ledger_postings`, and one upsert of
 * `ledger_balances` with the deltas already summed per account and currency. All three tables are pure
 * functions of the feed (timestamps come from the events), so a rebuild gives identical rows.
 *
 * Finance-facing SQL (main schema): the tables' views `ledger_entries`, `ledger_postings`, `ledger_balances`,
 * the derived views `ledger_entry_lines`, `account_balances`, `trial_balance`, and the function
 * `ledger_balances_at(instant)`.
 */
import { sql, type Generated, type GeneratedAlways, type Kysely } from 'kysely';
import { defineProjector, type LaterWrites, type Projector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import {
  entriesFor, holdChangesFor, ledgerEventTypesOf, parseSystemAccountId, type HoldChange, type JournalEntry, type LedgerPostings,
} from './ledgerPostings.ts';
import { Decimal, formatAmount, isCurrency, toDecimal, zeroAmount, type Decimal as DecimalValue } from '../src/domain/money.ts';
import type { Instant } from './columns.ts';

export const LEDGER_PROJECTOR_NAME = 'ledger';
export const LEDGER_TABLES = ['ledger_entries', 'ledger_postings', 'ledger_balances'] as const;

const derivedViews = [
  `CREATE OR REPLACE VIEW ledger_entry_lines AS
     SELECT e.entry_id, e.occurred_at, e.currency, e.description, e.source_event_id, e.client_id,
            p.line_no, p.account_id, p.amount, p.account_id LIKE 'system:%' AS is_system
       FROM ledger_entries e
       JOIN ledger_postings p ON p.entry_id = e.entry_id`,
  `CREATE OR REPLACE VIEW account_balances AS
     SELECT account_id, currency, balance, available_funds, account_id LIKE 'system:%' AS is_system, held, updated_at
       FROM ledger_balances`,
  // Balances as they stood at an instant: every posting dated at or before it (`occurred_at`, the time of the
  // event that caused it). The search_path is fixed at creation, so finance tools call it from any session.
  `CREATE OR REPLACE FUNCTION ledger_balances_at(at timestamptz)
     RETURNS TABLE (account_id text, currency text, balance numeric, is_system boolean)
     LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
       SELECT p.account_id, p.currency, sum(p.amount), p.account_id LIKE 'system:%'
         FROM ledger_postings p JOIN ledger_entries e ON e.entry_id = p.entry_id
        WHERE e.occurred_at <= at
        GROUP BY p.account_id, p.currency
     $$`,
  `CREATE OR REPLACE VIEW trial_balance AS
     SELECT currency, sum(balance) AS balance_sum, count(*)::integer AS accounts, sum(balance) = 0 AS balanced
       FROM ledger_balances
      GROUP BY currency`,
] as const;

/** Amounts are numeric: read back as decimal strings. */
export interface LedgerEntriesTable {
  entry_id: string;
  currency: string;
  occurred_at: Instant;
  description: string;
  source_event_id: string;
  client_id: string | null;
}
export interface LedgerPostingsTable {
  entry_id: string;
  line_no: number;
  account_id: string;
  currency: string;
  amount: string;
}
export interface LedgerBalancesTable {
  account_id: string;
  currency: string;
  balance: string;
  held: Generated<string>;
  available_funds: GeneratedAlways<string>;
  updated_at: Instant;
}
export type LedgerTables = {
  ledger_entries: LedgerEntriesTable;
  ledger_postings: LedgerPostingsTable;
  ledger_balances: LedgerBalancesTable;
};

async function setup(trx: Kysely<LedgerTables>): Promise<void> {
  await sql`
    CREATE TABLE ledger_entries (
      entry_id        text PRIMARY KEY,
      currency        text NOT NULL,
      occurred_at     timestamptz NOT NULL,
      description     text NOT NULL,
      source_event_id text NOT NULL,
      client_id       text
    )`.execute(trx);
  await sql`
    CREATE TABLE ledger_postings (
      entry_id   text NOT NULL,
      line_no    integer NOT NULL,
      account_id text NOT NULL,
      currency   text NOT NULL,
      amount     numeric(38, 18) NOT NULL,
      PRIMARY KEY (entry_id, line_no)
    )`.execute(trx);
  await sql`
    CREATE TABLE ledger_balances (
      account_id      text NOT NULL,
      currency        text NOT NULL,
      balance         numeric NOT NULL,
      held            numeric NOT NULL DEFAULT 0,
      available_funds numeric GENERATED ALWAYS AS (balance - held) STORED,
      updated_at      timestamptz NOT NULL,
      PRIMARY KEY (account_id, currency)
    )`.execute(trx);
  await sql`CREATE INDEX ledger_postings_account ON ledger_postings (account_id)`.execute(trx);
  await sql`CREATE INDEX ledger_entries_occurred ON ledger_entries (occurred_at)`.execute(trx);
  await sql`CREATE INDEX ledger_entries_client ON ledger_entries (client_id, occurred_at)`.execute(trx);
}

// Postgres text cannot hold NUL; a free-text reason must not be able to stop the projection.
const storable = (text: string) => text.replace(/\u0000/g, '\uFFFD');

interface BalanceDelta {
  accountId: string;
  currency: string;
  delta: DecimalValue;
  heldDelta: DecimalValue;
  updatedAt: string;
}

/** Writes the batch's entries, postings and balances: nothing reads them back in the batch, so they go with the COMMIT. */
async function write(trx: Kysely<LedgerTables>, later: LaterWrites, entries: readonly JournalEntry[], holds: readonly HoldChange[]): Promise<void> {
  if (entries.length === 0 && holds.length === 0) return;
  const deltas = new Map<string, BalanceDelta>();
  const deltaOf = (accountId: string, currency: string, at: string) => {
    const key = `${accountId}\u0000${currency}`;
    const balance = deltas.get(key) ?? { accountId, currency, delta: new Decimal(0), heldDelta: new Decimal(0), updatedAt: at };
    if (Date.parse(at) > Date.parse(balance.updatedAt)) balance.updatedAt = at;
    deltas.set(key, balance);
    return balance;
  };
  for (const hold of holds) {
    const balance = deltaOf(hold.accountId, hold.currency, hold.at);
    balance.heldDelta = balance.heldDelta.plus(toDecimal(hold.delta));
  }
  const postings = { entryId: [] as string[], lineNo: [] as number[], accountId: [] as string[], currency: [] as string[], amount: [] as string[] };
  for (const entry of entries) {
    entry.lines.forEach((line, lineNo) => {
      postings.entryId.push(entry.entryId);
      postings.lineNo.push(lineNo);
      postings.accountId.push(line.accountId);
      postings.currency.push(entry.currency);
      postings.amount.push(line.amount);
      const balance = deltaOf(line.accountId, entry.currency, entry.occurredAt);
      balance.delta = balance.delta.plus(toDecimal(line.amount));
    });
  }

  if (entries.length > 0) {
    await later.add(sql`
      INSERT INTO ledger_entries (entry_id, currency, occurred_at, description, source_event_id, client_id)
      SELECT * FROM unnest(${entries.map((e) => e.entryId)}::text[], ${entries.map((e) => e.currency)}::text[],
                           ${entries.map((e) => e.occurredAt)}::timestamptz[], ${entries.map((e) => storable(e.description))}::text[],
                           ${entries.map((e) => e.sourceEventId)}::text[], ${entries.map((e) => e.clientId)}::text[])`.compile(trx));

    await later.add(sql`
      INSERT INTO ledger_postings (entry_id, line_no, account_id, currency, amount)
      SELECT * FROM unnest(${postings.entryId}::text[], ${postings.lineNo}::integer[], ${postings.accountId}::text[],
                           ${postings.currency}::text[], ${postings.amount}::numeric[])`.compile(trx));
  }

  // Sorted: the same rows are always written (and locked) in the same order.
  const balances = [...deltas.values()].sort((a, b) =>
    a.accountId === b.accountId ? (a.currency < b.currency ? -1 : 1) : (a.accountId < b.accountId ? -1 : 1));
  await later.add(sql`
    INSERT INTO ledger_balances AS b (account_id, currency, balance, held, updated_at)
    SELECT * FROM unnest(${balances.map((r) => r.accountId)}::text[], ${balances.map((r) => r.currency)}::text[],
                         ${balances.map((r) => formatAmount(r.delta, r.currency))}::numeric[],
                         ${balances.map((r) => r.heldDelta.toString())}::numeric[],
                         ${balances.map((r) => r.updatedAt)}::timestamptz[])
    ON CONFLICT (account_id, currency) DO UPDATE
      SET balance = b.balance + excluded.balance,
          held = b.held + excluded.held,
          updated_at = GREATEST(b.updated_at, excluded.updated_at)`.compile(trx));
}

/**
 * The ledger projector at `version`, posting what the contexts' `postings` say (every context's, gathered from
 * their manifests); tests build other versions of it to exercise rebuilds.
 */
export function createLedgerProjector(version: number, postings: LedgerPostings): Projector {
  return defineProjector<LedgerTables, StoredEventData>({
    name: LEDGER_PROJECTOR_NAME,
    version,
    handles: ledgerEventTypesOf(postings),
    tables: LEDGER_TABLES,
    setup,
    derivedViews,
    async apply(trx, events, later) {
      // entriesFor checks every entry (assertBalanced) and throws on a broken one: the batch rolls back.
      await write(trx, later, events.flatMap((event) => entriesFor(event, postings)), events.flatMap((event) => holdChangesFor(event, postings)));
    },
  });
}

/** The version in service. */
export const LEDGER_PROJECTOR_VERSION = 1;

export interface AccountBalance {
  /** Canonical decimal string at the currency's scale. */
  balance: string;
  /** `balance` less funds held (refunds in flight); canonical at the currency's scale. */
  availableFunds: string;
}

export interface BalanceRequest {
  accountId: string;
  currency: string;
}

/**
 * Balances from the ledger's read model, keyed by account id. Pass `{accountId, currency}` (an account that
 * has no postings yet reads as zero at the currency's scale: `"0.00"` USD, `"0"` CLP), or a bare account id:
 * its currency is then taken from its balance row or, for a system account, from its id; a bare id of an
 * account without postings reads as `"0"`.
 */
export async function balancesOf(db: Pick<Kysely<LedgerTables>, 'getExecutor'>, accounts: readonly (string | BalanceRequest)[]): Promise<Map<string, AccountBalance>> {
  const result = new Map<string, AccountBalance>();
  if (accounts.length === 0) return result;
  const requests = accounts.map((a) => (typeof a === 'string' ? { accountId: a, currency: null } : { accountId: a.accountId, currency: a.currency }));
  const ids = [...new Set(requests.map((r) => r.accountId))];
  const { rows } = await sql<{ account_id: string; currency: string; balance: string; available_funds: string }>`
    SELECT account_id, currency, balance::text AS balance, available_funds::text AS available_funds
      FROM ledger_balances
     WHERE account_id = ANY(${ids}::text[])`.execute(db);
  const byAccount = new Map<string, typeof rows>();
  for (const row of rows) byAccount.set(row.account_id, [...(byAccount.get(row.account_id) ?? []), row]);

  for (const request of requests) {
    const found = byAccount.get(request.accountId) ?? [];
    let currency = request.currency;
    if (currency === null) {
      if (found.length > 1) {
        throw new Error(`account ${request.accountId} has balances in ${found.map((r) => r.currency).join(', ')}; name the currency`);
      }
      currency = found[0]?.currency ?? parseSystemAccountId(request.accountId)?.currency ?? null;
    }
    const row = found.find((r) => r.currency === currency);
    if (row) {
      result.set(request.accountId, {
        balance: formatAmount(row.balance, row.currency),
        availableFunds: formatAmount(row.available_funds, row.currency),
      });
    } else {
      const zero = currency !== null && isCurrency(currency) ? zeroAmount(currency) : '0';
      result.set(request.accountId, { balance: zero, availableFunds: zero });
    }
  }
  return result;
}
