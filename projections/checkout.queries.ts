/**
 * Queries of the checkout read model: the rows routes answer with, and the checkout's port
 * (src/checkout/ports.ts), which `checkoutReads` implements.
 */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import { domainNotFound } from '../src/domain/errors.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { CheckoutSessionRow, PaymentLinkRow } from './checkout.ts';
import type { ReadModels } from './readModels.ts';
import { lookUpPayersAndAccounts } from './payments.queries.ts';

export function ownedSession(db: Kysely<ReadModels>, tenant: Tenant, sessionId: string): Promise<CheckoutSessionRow> {
  return findOwned(db, 'checkout_sessions', tenant, 'session_id', sessionId, 'checkout session');
}

/** A link the tenant may see and that is not deleted (a deleted link is not found). */
export async function ownedLink(db: Kysely<ReadModels>, tenant: Tenant, linkId: string): Promise<PaymentLinkRow> {
  const row = await findOwned(db, 'payment_links', tenant, 'link_id', linkId, 'payment link');
  if (row.deleted) throw domainNotFound(`payment link ${linkId} not found`);
  return row;
}

export async function sessionByToken(db: Kysely<ReadModels>, token: string, clientId?: string): Promise<CheckoutSessionRow> {
  let query = db.selectFrom('checkout_sessions').selectAll().where('checkout_token', '=', token);
  if (clientId !== undefined) query = query.where('client_id', '=', clientId);
  const row = await query.executeTakeFirst();
  if (!row) throw domainNotFound('checkout session not found');
  return row;
}

/** The link of a token, deleted or not (the hosted page shows a deleted link as deactivated). */
export async function linkByToken(db: Kysely<ReadModels>, token: string, clientId?: string): Promise<PaymentLinkRow> {
  let query = db.selectFrom('payment_links').selectAll().where('checkout_token', '=', token);
  if (clientId !== undefined) query = query.where('client_id', '=', clientId);
  const row = await query.executeTakeFirst();
  if (!row) throw domainNotFound('payment link not found');
  return row;
}

/** The checkout's port (src/checkout/ports.ts) over the read models. */
export function checkoutReads(db: Kysely<ReadModels>) {
  const ownersAndAccounts = lookUpPayersAndAccounts(db);
  return {
    async ownerAndAccount(query: { clientId: string; identityId: string; accountNumber: string | null }) {
      const { identity, account } = await ownersAndAccounts.submit(query);
      return {
        owner: identity !== null,
        account: account && { identity_id: account.identity_id, account_number: account.account_number, currency: account.currency, status: account.status },
      };
    },

    account: (clientId: string, accountNumber: string) => db.selectFrom('accounts')
      .select(['identity_id', 'account_number', 'currency', 'status'])
      .where('client_id', '=', clientId).where('account_number', '=', accountNumber).executeTakeFirst(),

    async expiring(window: { clockId: string | null; until: Date }, limit: number) {
      const rows = await db.selectFrom('checkout_sessions').select(['session_id', 'client_id', 'expires_at'])
        .where('status', 'in', ['ATTEMPT', 'ACTIVE']).where('expires_at', '<=', window.until)
        .where('test_clock_id', window.clockId === null ? 'is' : '=', window.clockId)
        .orderBy('expires_at').limit(limit).execute();
      return rows.map((row) => ({ sessionId: row.session_id, clientId: row.client_id, expiresAt: row.expires_at }));
    },

    async stalledReservations(cutoff: Date, limit: number) {
      const rows = await db.selectFrom('checkout_sessions as s').select(['s.session_id', 's.client_id', 's.payment_id'])
        .where('s.status', '=', 'PROCESSING_PAYMENT').where('s.payment_started_at', '<=', cutoff)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('payments as p').select('p.payment_id').whereRef('p.payment_id', '=', 's.payment_id'))))
        .orderBy('s.payment_started_at').limit(limit).execute();
      return rows.map((row) => ({ sessionId: row.session_id, clientId: row.client_id, paymentId: row.payment_id }));
    },
  };
}
