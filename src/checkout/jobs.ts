/**
 * Expiry of checkout sessions: each run takes at most JOB_BATCH_SIZE open sessions past expiresAt from the read
 * model, oldest first, and asks each one's stream to expire it. The stream decides: a session refreshed, paid or
 * already expired meanwhile (by this run on another instance, say) records nothing, so overlapping runs are
 * harmless. Readers see such a session as EXPIRED before the job runs (src/checkout/records.ts).
 */
import type { Platform } from '../platform.ts';
import { expireSession } from './handlers.ts';

/** Sessions expired per run, at most. */
export const EXPIRY_BATCH_SIZE = 500;

export async function expireDueSessions(platform: Platform): Promise<{ expired: number }> {
  const now = platform.runtime.now();
  const due = await platform.readModels.selectFrom('checkout_sessions').select(['session_id', 'client_id'])
    .where('status', 'in', ['ATTEMPT', 'ACTIVE']).where('expires_at', '<=', now)
    .orderBy('expires_at').limit(EXPIRY_BATCH_SIZE).execute();
  for (const { session_id: sessionId, client_id: clientId } of due) {
    await expireSession(platform, 'any', sessionId, 'EXPIRES_AT', { clientId, actor: 'checkout-expiry-job' });
  }
  return { expired: due.length };
}
