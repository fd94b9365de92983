/**
 * Read model of deposits without a destination: one row per unassigned deposit with what the list of deposits
 * awaiting assignment filters and searches on (originator names and document number, amount, expiry) and what
 * the unassigned balance widget sums. Every value comes from the events, so a rebuild gives identical rows.
 *
 * The deposits (and their companion children) are payments too: the payments projector writes their rows in
 * `payments` (projections/payments.ts).
 */
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import { defineProjector, type LaterWrites, type Projector } from '../src/projection/projector.ts';
import type { RecordedStoredEvent, StoredEventData } from '../src/storedEvents/registry.ts';
import type { Instant, NullableInstant } from './columns.ts';
import { judgedAt } from './testClocks.ts';
import { scopedTo, type PageWindow } from '../src/db/owned.ts';

export interface DepositsTable {
  payment_id: string;
  client_id: string;
  external_id: string;
  provider_deposit_id: string;
  reference: string;
  total_amount: string;
  currency: string;
  status: 'CREATED' | 'SETTLED' | 'EXPIRED';
  originator_first_name: string;
  originator_last_name: string | null;
  originator_document_type: string | null;
  originator_document_number: string;
  customer_id: string | null;
  created_at: Instant;
  expires_at: Instant;
  updated_at: Instant;
  account_id: string | null;
  expected_amount: string | null;
  reconciliation_status: string | null;
  related_payment_id: string | null;
  settled_at: NullableInstant;
  expired_at: NullableInstant;
  refund_payment_id: string | null;
  /** The test clock the deposit was created under (its 48 h and 6 h windows follow that clock), or null. */
  test_clock_id: string | null;
}

export type DepositTables = { deposits: DepositsTable };
export type DepositRow = Selectable<DepositsTable>;

async function setup(trx: Kysely<DepositTables>): Promise<void> {
  await sql`
    CREATE TABLE deposits (
      payment_id                 text PRIMARY KEY,
      client_id                  text NOT NULL,
      external_id                text NOT NULL,
      provider_deposit_id        text NOT NULL,
      reference                  text NOT NULL,
      total_amount               numeric NOT NULL,
      currency                   text NOT NULL,
      status                     text NOT NULL,
      originator_first_name      text NOT NULL,
      originator_last_name       text,
      originator_document_type   text,
      originator_document_number text NOT NULL,
      customer_id                text,
      created_at                 timestamptz NOT NULL,
      expires_at                 timestamptz NOT NULL,
      updated_at                 timestamptz NOT NULL,
      account_id                 text,
      expected_amount            text,
      reconciliation_status      text,
      related_payment_id         text,
      settled_at                 timestamptz,
      expired_at                 timestamptz,
      refund_payment_id          text,
      test_clock_id              text
    )`.execute(trx);
  // The list and the widget: a client's deposits awaiting assignment, soonest expiry first.
  await sql`CREATE INDEX deposits_client_pending ON deposits (client_id, currency, expires_at, payment_id) WHERE status = 'CREATED'`.execute(trx);
  // The expiry job's queue.
  await sql`CREATE INDEX deposits_pending_expiry ON deposits (expires_at) WHERE status = 'CREATED'`.execute(trx);
  // A test clock's deposits, for the expiries its advances run.
  await sql`CREATE INDEX deposits_test_clock ON deposits (test_clock_id, expires_at) WHERE status = 'CREATED' AND test_clock_id IS NOT NULL`.execute(trx);
}

/** Rows per statement of a batch (each column a parameter, or one JSON document: well within Postgres's bounds). */
const ROWS_PER_STATEMENT = 1_000;

/** Columns an event after the deposit's receipt may set, with their types as the UPDATE reads them from JSON. */
const changeColumns: ReadonlyArray<[keyof DepositsTable, string]> = [
  ['status', 'text'], ['account_id', 'text'], ['expected_amount', 'text'], ['reconciliation_status', 'text'],
  ['related_payment_id', 'text'], ['settled_at', 'timestamptz'], ['expired_at', 'timestamptz'], ['updated_at', 'timestamptz'],
  ['refund_payment_id', 'text'],
];

/**
 * A batch in a few statements: each deposit's events are folded in memory, in feed order (a deposit received in the
 * batch is inserted as its last event leaves it), then one INSERT of the new rows and one UPDATE of the others
 * (a PaymentExpired of a payment that is no deposit matches no row).
 */
async function apply(trx: Kysely<DepositTables>, events: readonly RecordedStoredEvent[], later: LaterWrites): Promise<void> {
  const created = new Map<string, Insertable<DepositsTable>>();
  const changed = new Map<string, Partial<Record<keyof DepositsTable, unknown>>>();
  const change = (paymentId: string, columns: Partial<Record<keyof DepositsTable, unknown>>) => {
    const row = created.get(paymentId);
    if (row) Object.assign(row, columns);
    else changed.set(paymentId, { ...changed.get(paymentId), ...columns });
  };
  for (const event of events) {
    switch (event.type) {
      case 'DepositReceived': {
        const d = event.data;
        created.set(d.paymentId, {
          payment_id: d.paymentId, client_id: d.clientId, external_id: d.externalId, provider_deposit_id: d.providerDepositId,
          reference: d.reference, total_amount: d.totalAmount, currency: d.currency, status: 'CREATED',
          originator_first_name: d.originator.firstName, originator_last_name: d.originator.lastName,
          originator_document_type: d.originator.documentType, originator_document_number: d.originator.documentNumber,
          customer_id: d.customerId, created_at: d.createdAt, expires_at: d.expiresAt, updated_at: d.createdAt,
          test_clock_id: d.testClockId ?? null,
        });
        break;
      }
      case 'DepositAssigned': {
        const d = event.data;
        change(d.paymentId, {
          status: 'SETTLED', account_id: d.accountId, expected_amount: d.expectedAmount, reconciliation_status: d.reconciliationStatus,
          related_payment_id: d.relatedPaymentId, settled_at: d.at, updated_at: d.at,
        });
        break;
      }
      case 'PaymentExpired': {
        // Any payment's expiry: only a deposit has a row here.
        const d = event.data;
        change(d.paymentId, { status: 'EXPIRED', expired_at: d.at, updated_at: d.at });
        break;
      }
      case 'DepositRefundDue': {
        const d = event.data;
        change(d.paymentId, { refund_payment_id: d.refundPaymentId });
        break;
      }
    }
  }
  // Nothing in the batch reads its writes back (a change is folded into a row created in the same batch, and the
  // others change rows of earlier batches): they go with the COMMIT, the new rows first.
  const rows = [...created.values()];
  for (let from = 0; from < rows.length; from += ROWS_PER_STATEMENT) {
    await later.add(trx.insertInto('deposits').values(rows.slice(from, from + ROWS_PER_STATEMENT)));
  }
  const changes = [...changed].map(([paymentId, columns]) => ({ ...columns, payment_id: paymentId }));
  const assignments = changeColumns.map(([column, type]) =>
    `${column} = CASE WHEN x.change ? '${column}' THEN (x.change->>'${column}')::${type} ELSE d.${column} END`).join(', ');
  for (let from = 0; from < changes.length; from += ROWS_PER_STATEMENT) {
    await later.add(sql`UPDATE deposits d SET ${sql.raw(assignments)}
      FROM jsonb_array_elements(${JSON.stringify(changes.slice(from, from + ROWS_PER_STATEMENT))}::jsonb) AS x(change)
     WHERE d.payment_id = x.change->>'payment_id'`.compile(trx));
  }
}

export const depositsProjector: Projector = defineProjector<DepositTables, StoredEventData>({
  name: 'deposits',
  version: 2,
  tables: ['deposits'],
  handles: ['DepositReceived', 'DepositAssigned', 'PaymentExpired', 'DepositRefundDue'],
  setup,
  apply,
});

/** A deposit's row with the instant it is judged at (`judged_at`): its test clock's time, else the query's now. */
export type JudgedDepositRow = DepositRow & { judged_at: Date };

/**
 * `expires_at` at most `ms` after the instant the row is judged at: its test clock's time for a deposit bound to
 * one, `now` otherwise.
 */
const expiringWithin = (now: Date, ms: number) => sql<Date>`${judgedAt(now)} + make_interval(secs => ${ms / 1000}::double precision)`;

/** `text` as a LIKE pattern matching it anywhere, its wildcards taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A client's deposits awaiting assignment (CREATED). */
function awaiting<DB extends DepositTables>(db: Kysely<DB>, clientId: string) {
  return scopedTo(db as unknown as Kysely<DepositTables>, 'deposits', clientId).where('status', '=', 'CREATED');
}

/** The filters of the list of deposits awaiting assignment; amounts are decimal strings, `search` matches the originator. */
export interface AwaitingFilters { expiresWithinMs?: number; amountMin?: string; amountMax?: string; search?: string }

/** One page of a client's deposits awaiting assignment, soonest expiry first (ties broken by id), and how many match. */
export async function awaitingAssignmentPage<DB extends DepositTables>(
  db: Kysely<DB>, clientId: string, filters: AwaitingFilters, now: Date, page: PageWindow,
): Promise<{ rows: JudgedDepositRow[]; total: number }> {
  let filtered = awaiting(db, clientId);
  if (filters.expiresWithinMs !== undefined) filtered = filtered.where('expires_at', '<=', expiringWithin(now, filters.expiresWithinMs));
  if (filters.amountMin) filtered = filtered.where('total_amount', '>=', sql<string>`${filters.amountMin}::numeric`);
  if (filters.amountMax) filtered = filtered.where('total_amount', '<=', sql<string>`${filters.amountMax}::numeric`);
  if (filters.search) {
    const pattern = containing(filters.search);
    filtered = filtered.where((eb) => eb.or([
      eb('originator_first_name', 'ilike', pattern), eb('originator_last_name', 'ilike', pattern), eb('originator_document_number', 'ilike', pattern),
    ]));
  }
  const [rows, count] = await Promise.all([
    filtered.select(judgedAt(now).as('judged_at')).orderBy('expires_at').orderBy('payment_id').limit(page.limit).offset(page.offset)
      .execute() as Promise<JudgedDepositRow[]>,
    filtered.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst(),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/** How many deposits of a client await assignment in each currency that has any, alphabetical. */
export async function awaitingPerCurrency<DB extends DepositTables>(db: Kysely<DB>, clientId: string): Promise<Array<{ currency: string; n: string }>> {
  return await awaiting(db, clientId).clearSelect()
    .select(['currency', sql<string>`count(*)::text`.as('n')]).groupBy('currency').orderBy('currency').execute() as Array<{ currency: string; n: string }>;
}

/**
 * What of a client's awaits assignment in one currency: the total (numeric text) and count of them all, and those expiring
 * within `urgentWithinMs` of the instant each is judged at, soonest first, at most `maxUrgent` (rows).
 */
export async function awaitingInCurrency<DB extends DepositTables>(
  db: Kysely<DB>, clientId: string, currency: string, now: Date, urgentWithinMs: number, maxUrgent: number,
): Promise<{ total: string; count: number; urgent: JudgedDepositRow[] }> {
  const pending = awaiting(db, clientId).where('currency', '=', currency);
  const [sum, urgent] = await Promise.all([
    pending.clearSelect().select([sql<string>`coalesce(sum(total_amount), 0)::text`.as('total'), sql<string>`count(*)::text`.as('n')]).executeTakeFirst(),
    pending.where('expires_at', '<=', expiringWithin(now, urgentWithinMs)).select(judgedAt(now).as('judged_at'))
      .orderBy('expires_at').orderBy('payment_id').limit(maxUrgent).execute() as Promise<JudgedDepositRow[]>,
  ]);
  return { total: sum!.total, count: Number(sum!.n), urgent };
}
