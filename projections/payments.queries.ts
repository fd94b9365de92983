/**
 * Queries of the payments read model: the rows routes answer with, and the lookups the payment commands and
 * jobs ask for through their port (src/payments/ports.ts), which `paymentReads` implements.
 */
import { sql, type Kysely } from 'kysely';
import { Coalescer } from '../src/db/coalescer.ts';
import { findOwned } from '../src/db/owned.ts';
import { PREPARED } from '../src/db/preparedStatements.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { PaymentEvent } from '../src/payments/events.ts';
import { EXPIRABLE_STATUSES, paymentRowOf, type PaymentRow } from './payments.ts';
import type { IdentityRow } from './identities.ts';
import type { AccountRow } from './accounts.ts';
import type { ClientRow } from './clients.ts';
import type { ReadModels } from './readModels.ts';

/** The payment's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedPayment(db: Kysely<ReadModels>, tenant: Tenant, paymentId: string): Promise<PaymentRow> {
  return findOwned(db, 'payments', tenant, 'payment_id', paymentId, 'payment');
}

/** Operators and the provider act across clients: the payment by its id alone. */
export function anyPayment(db: Kysely<ReadModels>, paymentId: string): Promise<PaymentRow> {
  return ownedPayment(db, 'any', paymentId);
}

/** The merchant a transaction pays: its identity, as the read model has it. */
export type Merchant = Pick<IdentityRow, 'identity_id' | 'name' | 'country'>;

/** The merchants of these identities (of one client), by id: one query for a page of transactions. */
export async function merchantsOf(
  db: Kysely<ReadModels>, clientId: string, identityIds: readonly (string | null)[],
): Promise<Map<string | null, Merchant>> {
  // A deposit awaiting assignment pays no identity yet (null): it has no merchant.
  const ids = [...new Set(identityIds.filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('identities').select(['identity_id', 'name', 'country'])
    .where('client_id', '=', clientId).where('identity_id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.identity_id, row]));
}

type PayerAndAccount = {
  identity: Pick<IdentityRow, 'identity_id' | 'email'> | null;
  account: Pick<AccountRow, 'account_id' | 'account_number' | 'identity_id' | 'currency' | 'status'> | null;
  thresholds: Pick<ClientRow, 'review_threshold_basic_usd' | 'review_threshold_standard_usd'> | null;
};
type PayerAndAccountQuery = { clientId: string; identityId: string; accountNumber: string | null };

/**
 * The identity and the account each create names (a payment's payer and account, a checkout session's owner and
 * credited account), both its client's, and the client's review thresholds: one statement for all the creates that
 * queued meanwhile (see Coalescer), since a create's throughput is made of its round trips. No account number: no
 * account.
 */
export function lookUpPayersAndAccounts(db: Kysely<ReadModels>): Coalescer<PayerAndAccountQuery, PayerAndAccount> {
  return new Coalescer(async (queries) => {
    const { rows } = await sql<{ n: string } & PayerAndAccount>`${sql.raw(PREPARED)}
      SELECT x.n::text AS n,
             (SELECT json_build_object('review_threshold_basic_usd', c.review_threshold_basic_usd,
                                       'review_threshold_standard_usd', c.review_threshold_standard_usd)
                FROM clients c WHERE c.client_id = x.client_id) AS thresholds,
             (SELECT json_build_object('identity_id', i.identity_id, 'email', i.email)
                FROM identities i WHERE i.client_id = x.client_id AND i.identity_id = x.identity_id) AS identity,
             (SELECT json_build_object('account_id', a.account_id, 'account_number', a.account_number,
                                       'identity_id', a.identity_id, 'currency', a.currency, 'status', a.status)
                FROM accounts a WHERE a.client_id = x.client_id AND a.account_number = x.account_number) AS account
        FROM jsonb_to_recordset(${JSON.stringify(queries.map((q, n) => ({ n, client_id: q.clientId, identity_id: q.identityId, account_number: q.accountNumber })))}::jsonb)
             AS x(n integer, client_id text, identity_id text, account_number text)`.execute(db);
    const byIndex = new Map(rows.map((row) => [Number(row.n), { identity: row.identity, account: row.account, thresholds: row.thresholds }]));
    return queries.map((_, n) => byIndex.get(n)!);
  });
}

/** The payments' port (src/payments/ports.ts) over the read models. */
export function paymentReads(db: Kysely<ReadModels>) {
  const payersAndAccounts = lookUpPayersAndAccounts(db);
  return {
    kindOf: (paymentId: string) => db.selectFrom('payments').select(['client_id', 'type', 'parent_payment_id'])
      .where('payment_id', '=', paymentId).executeTakeFirst(),

    payerAndAccount: (query: PayerAndAccountQuery) => payersAndAccounts.submit(query),

    nodeAccounts: (clientId: string, accountNumbers: readonly string[]) => db.selectFrom('accounts')
      .select(['account_number', 'currency', 'status']).where('client_id', '=', clientId)
      .where('account_number', 'in', [...accountNumbers]).execute(),

    viewOf: (events: readonly PaymentEvent[]) => paymentRowOf(events),

    async awaitingSettlement(window: { clockId: string | null; until: Date }, daysByPeriod: Readonly<Record<'T+1' | 'T+2', number>>, limit: number) {
      const settlesAt = sql<Date>`received_at + make_interval(days => CASE settlement WHEN 'T+1' THEN ${daysByPeriod['T+1']}::int
        ELSE ${daysByPeriod['T+2']}::int END)`;
      let query = db.selectFrom('payments').select(['payment_id', 'client_id', settlesAt.as('settles_at')])
        .where('status', '=', 'RECEIVED').where('settlement', '<>', 'INSTANT');
      query = window.clockId === null
        ? query.where('test_clock_id', 'is', null).orderBy('received_at')
        : query.where('test_clock_id', '=', window.clockId).where(settlesAt, '<=', window.until).orderBy(settlesAt).orderBy('payment_id');
      const rows = await query.limit(limit).execute();
      return rows.map((row) => ({ paymentId: row.payment_id, clientId: row.client_id, settlesAt: new Date(row.settles_at) }));
    },

    async payableUntilDue(window: { clockId: string | null; until: Date }, limit: number) {
      const rows = await db.selectFrom('payments').select(['payment_id', 'client_id', 'payable_until'])
        .where('status', 'in', EXPIRABLE_STATUSES).where('payable_until', '<=', window.until)
        .where('test_clock_id', window.clockId === null ? 'is' : '=', window.clockId)
        .orderBy('payable_until').limit(limit).execute();
      // payable_until <= until: never null here.
      return rows.map((row) => ({ paymentId: row.payment_id, clientId: row.client_id, payableUntil: row.payable_until! }));
    },
  };
}
