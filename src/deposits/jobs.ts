/**
 * The deposits' time-driven work: the expiry of deposits left unassigned past their `expiresAt`. Each run takes a
 * bounded slice of the queue from the read model and sends each deposit through its stream, which refuses one
 * that moved meanwhile (assigned, being assigned, already expired); so a run that overlaps another (on this or
 * another instance) expires nothing twice.
 */
import type { Platform } from '../platform.ts';
import { isRefusedMove } from '../payments/handlers.ts';
import { expireCompanion, expireDeposit } from './handlers.ts';

/** Deposits a run expires at most; the rest wait for the next run. */
export const DEPOSIT_EXPIRY_BATCH_SIZE = 500;

export async function expireUnassignedDeposits(platform: Platform): Promise<{ expired: number; skipped: number }> {
  const db = platform.readModels;
  const due = await db.selectFrom('deposits').select(['payment_id', 'client_id'])
    .where('status', '=', 'CREATED').where('expires_at', '<=', platform.runtime.now())
    .orderBy('expires_at').orderBy('payment_id').limit(DEPOSIT_EXPIRY_BATCH_SIZE).execute() as Array<{ payment_id: string; client_id: string }>;
  let expired = 0;
  let skipped = 0;
  for (const { payment_id: paymentId, client_id: clientId } of due) {
    try {
      await expireDeposit(platform, paymentId, { clientId, actor: 'expiry-job' });
      expired++;
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
      skipped++;
    }
  }
  return { expired, skipped };
}

/** Companions a run expires at most; the rest wait for the next run. */
export const COMPANION_EXPIRY_BATCH_SIZE = 500;

/**
 * The expiry of the amounts still due: companions (of underpaid deposits) still CREATED past their expiresAt, from the
 * payments read model, soonest first; each one's stream decides (one paid or cancelled meanwhile records nothing).
 */
export async function expireDueCompanions(platform: Platform): Promise<{ expired: number }> {
  const due = await platform.readModels.selectFrom('payments').select(['payment_id', 'client_id'])
    .where('status', '=', 'CREATED').where('type', '=', 'LOCAL_DEPOSIT').where('parent_payment_id', 'is not', null)
    .where('expires_at', '<=', platform.runtime.now()).orderBy('expires_at').limit(COMPANION_EXPIRY_BATCH_SIZE).execute();
  let expired = 0;
  for (const { payment_id: paymentId, client_id: clientId } of due) {
    if (await expireCompanion(platform, paymentId, { clientId, actor: 'expiry-job' })) expired++;
  }
  return { expired };
}
