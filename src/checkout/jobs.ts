/**
 * Expiry of checkout sessions: each run takes at most EXPIRY_BATCH_SIZE open sessions past expiresAt from the read
 * model, oldest first, and asks each one's stream to expire it. The stream decides: a session refreshed, paid or
 * already expired meanwhile (by this run on another instance, say) records nothing, so overlapping runs are
 * harmless. Readers see such a session as EXPIRED before the job runs (src/checkout/records.ts). The scheduled
 * job runs it for the sessions bound to no test clock; an advance of a test clock, for that clock's sessions,
 * each expiring at its expiresAt on the clock (src/testClocks/time.ts).
 */
import type { Platform } from '../platform.ts';
import { eachDue, wallClockScope, type TimeScope } from '../testClocks/time.ts';
import { expireSession } from './handlers.ts';

/** Sessions expired per run, at most. */
export const EXPIRY_BATCH_SIZE = 500;

export async function expireDueSessions(platform: Platform, scope: TimeScope = wallClockScope(platform)): Promise<{ expired: number }> {
  const due = await platform.readModels.selectFrom('checkout_sessions').select(['session_id', 'client_id', 'expires_at'])
    .where('status', 'in', ['ATTEMPT', 'ACTIVE']).where('expires_at', '<=', scope.until)
    .where('test_clock_id', scope.clockId === null ? 'is' : '=', scope.clockId)
    .orderBy('expires_at').limit(EXPIRY_BATCH_SIZE).execute();
  await eachDue(scope, due, ({ session_id: sessionId, client_id: clientId, expires_at: dueAt }) =>
    expireSession(scope.platformFor(dueAt), 'any', sessionId, 'EXPIRES_AT', scope.metadataFor(clientId, 'checkout-expiry-job', dueAt)));
  return { expired: due.length };
}
