/** The deposits' port (src/deposits/ports.ts) over the read models: the expiry jobs' queues. */
import type { Kysely } from 'kysely';
import type { ReadModels } from './readModels.ts';

export function depositReads(db: Kysely<ReadModels>) {
  return {
    async unassignedDue(window: { clockId: string | null; until: Date }, limit: number) {
      const rows = await db.selectFrom('deposits').select(['payment_id', 'client_id', 'expires_at'])
        .where('status', '=', 'CREATED').where('expires_at', '<=', window.until)
        .where('test_clock_id', window.clockId === null ? 'is' : '=', window.clockId)
        .orderBy('expires_at').orderBy('payment_id').limit(limit).execute();
      return rows.map((row) => ({ paymentId: row.payment_id, clientId: row.client_id, expiresAt: row.expires_at }));
    },

    async companionsDue(window: { clockId: string | null; until: Date }, limit: number) {
      const rows = await db.selectFrom('payments').select(['payment_id', 'client_id', 'expires_at'])
        .where('status', '=', 'CREATED').where('type', '=', 'LOCAL_DEPOSIT').where('parent_payment_id', 'is not', null)
        .where('expires_at', '<=', window.until).where('test_clock_id', window.clockId === null ? 'is' : '=', window.clockId)
        .orderBy('expires_at').limit(limit).execute();
      // expires_at <= until: never null here.
      return rows.map((row) => ({ paymentId: row.payment_id, clientId: row.client_id, expiresAt: row.expires_at! }));
    },
  };
}
