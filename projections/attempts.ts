/**
 * Read model of payment attempts: one row per attempt, with the list filters as columns and the nodes, fees
 * and exchange as JSON. Every value comes from the event, so a rebuild gives identical rows.
 */
import { sql, type ColumnType, type Insertable, type Kysely, type Selectable } from 'kysely';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';
import { defineProjector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { PaymentAttemptCreatedData, StoredAttemptNode } from '../src/attempts/events.ts';
import type { PaymentExchange, PaymentFee, SettlementPeriod } from '../src/payments/events.ts';
import type { Instant, Json } from './columns.ts';

export interface PaymentAttemptsTable {
  attempt_id: string;
  client_id: string;
  external_id: string | null;
  identity_id: string;
  identity_external_id: string | null;
  account_id: string;
  account_number: string;
  total_amount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  purchase_amount: string | null;
  purchase_currency: string | null;
  exchange: ColumnType<PaymentExchange | null, string | null, string | null>;
  origins: Json<StoredAttemptNode[]>;
  destinations: Json<StoredAttemptNode[]>;
  fees: Json<PaymentFee[]>;
  fee_amount: string;
  method: string | null;
  settlement: SettlementPeriod;
  customer_id: string | null;
  created_at: Instant;
}
export type AttemptTables = { payment_attempts: PaymentAttemptsTable };
export type AttemptRow = Selectable<PaymentAttemptsTable>;

function insertable(d: PaymentAttemptCreatedData): Insertable<PaymentAttemptsTable> {
  return {
    attempt_id: d.attemptId, client_id: d.clientId, external_id: d.externalId, identity_id: d.identityId,
    identity_external_id: d.identityExternalId, account_id: d.accountId, account_number: d.accountNumber,
    total_amount: d.totalAmount, currency: d.currency, description: d.description, product: d.product, type: d.type,
    purchase_amount: d.purchaseAmount, purchase_currency: d.purchaseCurrency, exchange: d.exchange ? JSON.stringify(d.exchange) : null,
    origins: JSON.stringify(d.origins), destinations: JSON.stringify(d.destinations), fees: JSON.stringify(d.fees),
    fee_amount: d.feeAmount, method: d.method, settlement: d.settlement, customer_id: d.customerId, created_at: d.createdAt,
  };
}

/** The row this projector writes for the attempt, as a query reads it back: what a create answers. */
export function attemptRowOf(d: PaymentAttemptCreatedData): AttemptRow {
  return {
    ...insertable(d), exchange: d.exchange, origins: d.origins, destinations: d.destinations, fees: d.fees,
    created_at: new Date(d.createdAt),
  } as AttemptRow;
}

export const attemptsProjector = defineProjector<AttemptTables, StoredEventData>({
  name: 'payment_attempts',
  version: 1,
  tables: ['payment_attempts'],
  async setup(trx) {
    await sql`
      CREATE TABLE payment_attempts (
        attempt_id           text PRIMARY KEY,
        client_id            text NOT NULL,
        external_id          text,
        identity_id          text NOT NULL,
        identity_external_id text,
        account_id           text NOT NULL,
        account_number       text NOT NULL,
        total_amount         numeric NOT NULL,
        currency             text NOT NULL,
        description          text,
        product              text,
        type                 text NOT NULL,
        purchase_amount      text,
        purchase_currency    text,
        exchange             jsonb,
        origins              jsonb NOT NULL,
        destinations         jsonb NOT NULL,
        fees                 jsonb NOT NULL,
        fee_amount           text NOT NULL,
        method               text,
        settlement           text NOT NULL,
        customer_id          text,
        created_at           timestamptz NOT NULL
      )`.execute(trx);
    // The listing order (newest first), and each filter followed by it, so a filtered page is an index range.
    await sql`CREATE INDEX payment_attempts_client_created ON payment_attempts (client_id, created_at DESC, attempt_id DESC)`.execute(trx);
    for (const column of ['identity_id', 'account_number', 'type']) {
      await sql.raw(`CREATE INDEX payment_attempts_client_${column} ON payment_attempts (client_id, ${column}, created_at DESC, attempt_id DESC)`).execute(trx);
    }
  },
  handlers: {
    async PaymentAttemptCreated(trx, event) {
      await trx.insertInto('payment_attempts').values(insertable(event.data)).execute();
    },
  },
});

/** The filters of a client's list of attempts: exact matches, and the creation time's half-open range. */
export interface AttemptFilters { identityId?: string; accountNumber?: string; type?: string; from?: Date; before?: Date }

/** One page of a client's attempts, newest first (ties broken by id), and how many match the filters. */
export async function attemptsPage<DB extends AttemptTables>(
  db: Kysely<DB>, clientId: string, filters: AttemptFilters, page: PageWindow,
): Promise<{ rows: AttemptRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<AttemptTables>, 'payment_attempts', clientId);
  if (filters.identityId) filtered = filtered.where('identity_id', '=', filters.identityId);
  if (filters.accountNumber) filtered = filtered.where('account_number', '=', filters.accountNumber);
  if (filters.type) filtered = filtered.where('type', '=', filters.type);
  if (filters.from) filtered = filtered.where('created_at', '>=', filters.from);
  if (filters.before) filtered = filtered.where('created_at', '<', filters.before);
  return newestFirstPage(filtered, 'attempt_id', page);
}
