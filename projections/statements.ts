/**
 * Account statements and balances at a past instant, for finance: read from the ledger's postings (a pure
 * function of the feed), dated by the events that caused them (`occurred_at`).
 *
 * A statement covers the half-open range [from, to): its opening balance is every posting before `from`, its
 * closing balance the opening plus its lines, so the statement of [a, b) and that of [b, c) join exactly. Lines are
 * in (occurred_at, entry, line) order, each with the balance after it. They are read in pages, so a range of any
 * length costs bounded memory: callers get them through `forEachLine`.
 */
import { sql, type Kysely } from 'kysely';
import type { ReadModels } from './readModels.ts';
import { Decimal, formatAmount, toDecimal } from '../src/domain/money.ts';

/** Postings read per round trip while a statement is written. */
const STATEMENT_PAGE_ROWS = 1_000;

export interface StatementLine {
  entryId: string;
  lineNo: number;
  occurredAt: string;
  description: string;
  /** Signed: positive into the account. */
  amount: string;
  balanceAfter: string;
  /** The payment the movement belongs to, when it belongs to one. */
  paymentId: string | null;
  /** The stored event the entry was posted from (`GET /payments/:id/events` shows it). */
  eventId: string;
}

export interface StatementHeader {
  accountId: string;
  currency: string;
  from: string;
  to: string;
  openingBalance: string;
}

/** The balance of `accountId` from every posting that occurred before `instant` (or at it, when `inclusive`). */
export async function balanceAt(
  db: Kysely<ReadModels>, accountId: string, currency: string, instant: Date, inclusive: boolean,
): Promise<string> {
  const row = await db.selectFrom('ledger_postings as p')
    .innerJoin('ledger_entries as e', 'e.entry_id', 'p.entry_id')
    .select(sql<string | null>`sum(p.amount)::text`.as('total'))
    .where('p.account_id', '=', accountId)
    .where('p.currency', '=', currency)
    .where('e.occurred_at', inclusive ? '<=' : '<', instant)
    .executeTakeFirst();
  return formatAmount(toDecimal(row?.total ?? '0'), currency);
}

/**
 * Writes the statement of [from, to): `header` once, then every line in order through `line`; answers the
 * closing balance (the opening plus the lines). Without a transaction around it (a long statement must not hold
 * the embedded database's single connection): a posting the ledger records meanwhile, for an instant inside the
 * range and behind the page being read, is missing from this statement (a later one of the same range shows
 * it); the lines printed always add up to the closing balance.
 */
export async function writeStatement(
  db: Kysely<ReadModels>, accountId: string, currency: string, from: Date, to: Date,
  sink: { header(header: StatementHeader): void | Promise<void>; line(line: StatementLine): void | Promise<void> },
): Promise<string> {
  const opening = await balanceAt(db, accountId, currency, from, false);
  await sink.header({ accountId, currency, from: from.toISOString(), to: to.toISOString(), openingBalance: opening });
  let running = toDecimal(opening);
  let after: { occurredAt: Date; entryId: string; lineNo: number } | null = null;
  for (;;) {
    let query = db.selectFrom('ledger_postings as p')
      .innerJoin('ledger_entries as e', 'e.entry_id', 'p.entry_id')
      .select(['e.entry_id', 'p.line_no', 'e.occurred_at', 'e.description', 'e.source_event_id',
        sql<string>`p.amount::text`.as('amount'),
        // A spent hold names no payment, only its hold: a refund's hold has the refund child's id (a payment too).
        sql<string | null>`(SELECT COALESCE(ev.data->>'paymentId', (SELECT r.refund_id FROM refunds r WHERE r.refund_id = ev.data->>'holdId'))
                              FROM events ev WHERE ev.id::text = e.source_event_id)`.as('payment_id')])
      .where('p.account_id', '=', accountId)
      .where('p.currency', '=', currency)
      .where('e.occurred_at', '>=', from)
      .where('e.occurred_at', '<', to);
    if (after) {
      const cursor = after;
      query = query.where((eb) => eb(sql`(e.occurred_at, e.entry_id, p.line_no)`, '>',
        sql`(${cursor.occurredAt}::timestamptz, ${cursor.entryId}, ${cursor.lineNo})`));
    }
    const rows = await query.orderBy('e.occurred_at').orderBy('e.entry_id').orderBy('p.line_no').limit(STATEMENT_PAGE_ROWS).execute();
    for (const row of rows) {
      running = running.plus(toDecimal(row.amount));
      await sink.line({
        entryId: row.entry_id, lineNo: row.line_no, occurredAt: row.occurred_at.toISOString(), description: row.description,
        amount: formatAmount(toDecimal(row.amount), currency), balanceAfter: formatAmount(running, currency),
        paymentId: row.payment_id, eventId: row.source_event_id,
      });
    }
    if (rows.length < STATEMENT_PAGE_ROWS) break;
    const last = rows[rows.length - 1]!;
    after = { occurredAt: last.occurred_at, entryId: last.entry_id, lineNo: last.line_no };
  }
  const closing = formatAmount(running, currency);
  return closing;
}

/** CSV columns of a statement line, in order (RFC 4180 quoting). */
export const STATEMENT_CSV_COLUMNS = ['occurredAt', 'entryId', 'lineNo', 'description', 'amount', 'balanceAfter', 'paymentId', 'eventId'] as const;

export function csvField(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function statementCsvRow(line: StatementLine): string {
  return `${STATEMENT_CSV_COLUMNS.map((column) => csvField(line[column])).join(',')}\r\n`;
}
