/**
 * Read model of refund children: one row per refund, in the interface's Refund shape (id, parentPaymentId,
 * status, totalAmount, currency, createdAt, description) plus how it is funded and why it ended. Every value
 * comes from the events (timestamps included), so a rebuild gives identical rows. The per-parent summary is
 * summed from these rows (src/payments/refunds/routes.ts).
 */
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import { defineProjector, writesNow, type Projector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { RefundStatus } from '../src/payments/refunds/events.ts';
import type { Instant } from './columns.ts';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';

/** Amounts are numeric: read back as decimal strings. */
export interface RefundsTable {
  refund_id: string;
  parent_payment_id: string;
  client_id: string;
  status: RefundStatus;
  total_amount: string;
  currency: string;
  description: string | null;
  funding_source: 'ACCOUNT' | 'SUSPENSE';
  account_id: string | null;
  end_reason: string | null;
  created_at: Instant;
  updated_at: Instant;
}
export type RefundTables = { refunds: RefundsTable };

async function setup(trx: Kysely<RefundTables>): Promise<void> {
  await sql`
    CREATE TABLE refunds (
      refund_id         text PRIMARY KEY,
      parent_payment_id text NOT NULL,
      client_id         text NOT NULL,
      status            text NOT NULL,
      total_amount      numeric NOT NULL,
      currency          text NOT NULL,
      description       text,
      funding_source    text NOT NULL,
      account_id        text,
      end_reason        text,
      created_at        timestamptz NOT NULL,
      updated_at        timestamptz NOT NULL
    )`.execute(trx);
  await sql`CREATE INDEX refunds_parent ON refunds (parent_payment_id, created_at, refund_id)`.execute(trx);
  // GET /refunds: a client's refunds by creation, optionally of one status.
  await sql`CREATE INDEX refunds_client_created ON refunds (client_id, created_at DESC, refund_id DESC)`.execute(trx);
  await sql`CREATE INDEX refunds_client_status ON refunds (client_id, status, created_at DESC, refund_id DESC)`.execute(trx);
}

async function ended(trx: Kysely<RefundTables>, d: { refundId: string; to: string; at: string; reason?: string }): Promise<void> {
  const updated = await trx.updateTable('refunds')
    // The end events' contracts record `to` as text; the refund decider only ever writes a RefundStatus there.
    .set({ status: d.to as RefundStatus, end_reason: d.reason ?? null, updated_at: d.at })
    .where('refund_id', '=', d.refundId).executeTakeFirst();
  // Every end follows its RefundCreated in the feed; a missing row means the read model is broken.
  if (Number(updated.numUpdatedRows) !== 1) throw new Error(`refunds projector: refund ${d.refundId} ended without a row`);
}

/** Rows per INSERT: 12 columns each stays far below Postgres' 65,535 parameters whatever the batch size. */
const ROWS_PER_STATEMENT = 1_000;

export const refundsProjector: Projector = defineProjector<RefundTables, StoredEventData>({
  name: 'refunds',
  version: 1,
  tables: ['refunds'],
  setup,
  handles: ['RefundCreated', 'RefundSettled', 'RefundFailed', 'RefundUnsettled', 'RefundExpired'],
  // The children created in a batch go in one statement; an end first writes the children before it (its own
  // among them), so every row changes in feed order.
  // The children created after the batch's last end are its last writes: they go with the COMMIT (`later`).
  async apply(trx, events, later) {
    let created: Insertable<RefundsTable>[] = [];
    const insertCreated = async (writes = writesNow(trx)) => {
      for (let from = 0; from < created.length; from += ROWS_PER_STATEMENT) {
        await writes.add(trx.insertInto('refunds').values(created.slice(from, from + ROWS_PER_STATEMENT)));
      }
      created = [];
    };
    for (const event of events) {
      switch (event.type) {
        case 'RefundCreated': {
          const d = event.data;
          created.push({
            refund_id: d.refundId, parent_payment_id: d.parentPaymentId, client_id: d.clientId, status: 'RECEIVED',
            total_amount: d.totalAmount, currency: d.currency, description: d.description, funding_source: d.funding.source,
            account_id: d.funding.source === 'ACCOUNT' ? d.funding.accountId : null, end_reason: null,
            created_at: d.createdAt, updated_at: d.createdAt,
          });
          break;
        }
        case 'RefundSettled': case 'RefundFailed': case 'RefundUnsettled': case 'RefundExpired':
          await insertCreated();
          await ended(trx, event.data);
          break;
      }
    }
    await insertCreated(later);
  },
});

export type RefundRow = Selectable<RefundsTable>;

/** The refunds of one parent payment, oldest first (ties broken by id). */
export async function refundsOfParent<DB extends RefundTables>(db: Kysely<DB>, parentPaymentId: string): Promise<RefundRow[]> {
  return (db as unknown as Kysely<RefundTables>).selectFrom('refunds').selectAll().where('parent_payment_id', '=', parentPaymentId)
    .orderBy('created_at').orderBy('refund_id').execute();
}

/** The refunds of one parent payment per status: their sum (numeric text) and count (text). */
export async function refundTotalsOfParent<DB extends RefundTables>(
  db: Kysely<DB>, parentPaymentId: string,
): Promise<Array<{ status: string; total: string; n: string }>> {
  const { rows } = await sql<{ status: string; total: string; n: string }>`
    SELECT status, sum(total_amount)::text AS total, count(*)::text AS n
      FROM refunds WHERE parent_payment_id = ${parentPaymentId} GROUP BY status`.execute(db);
  return rows;
}

/** The filters of a client's list of refunds: its status, and bounds on the creation time (each inclusive or not). */
export interface RefundFilters {
  status?: RefundStatus; from?: { at: Date; inclusive: boolean } | null; to?: { at: Date; inclusive: boolean } | null;
}

/** One page of a client's refunds, newest first (ties broken by id), and how many match the filters. */
export async function refundsPage<DB extends RefundTables>(
  db: Kysely<DB>, clientId: string, filters: RefundFilters, page: PageWindow,
): Promise<{ rows: RefundRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<RefundTables>, 'refunds', clientId);
  if (filters.status) filtered = filtered.where('status', '=', filters.status);
  if (filters.from) filtered = filtered.where('created_at', filters.from.inclusive ? '>=' : '>', filters.from.at);
  if (filters.to) filtered = filtered.where('created_at', filters.to.inclusive ? '<=' : '<', filters.to.at);
  return newestFirstPage(filtered, 'refund_id', page);
}
