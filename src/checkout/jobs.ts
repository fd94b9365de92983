/**
 * The checkout's time-driven work.
 *
 * Expiry of checkout sessions: each run takes at most EXPIRY_BATCH_SIZE open sessions past expiresAt from the read
 * model, oldest first, and asks each one's stream to expire it. The stream decides: a session refreshed, paid or
 * already expired meanwhile (by this run on another instance, say) records nothing, so overlapping runs are
 * harmless. Readers see such a session as EXPIRED before the job runs (src/checkout/records.ts). The scheduled
 * job runs it for the sessions bound to no test clock; an advance of a test clock, for that clock's sessions,
 * each expiring at its expiresAt on the clock (src/testClocks/time.ts).
 */
import type { Platform } from '../platform.ts';
import { eachDue, wallClockScope, type TimeScope } from '../testClocks/time.ts';
import { expireSession, releaseStalledReservation } from './handlers.ts';

/** Sessions expired per run, at most. */
export const EXPIRY_BATCH_SIZE = 500;

/** Stalled reservations looked at per run, at most; the rest wait for the next run. */
export const RELEASE_BATCH_SIZE = 500;
/**
 * When the release job runs: every 5 seconds, so a reservation is given back at most about 5 s (plus a run) after
 * its timeout. A run is one indexed query that finds nothing on a healthy service.
 */
export const RELEASE_CRON = '*/5 * * * * *';

export async function expireDueSessions(platform: Platform, scope: TimeScope = wallClockScope(platform)): Promise<{ expired: number }> {
  const due = await platform.reads.checkout.expiring(scope, EXPIRY_BATCH_SIZE);
  await eachDue(scope, due, ({ sessionId, clientId, expiresAt: dueAt }) =>
    expireSession(scope.platformFor(dueAt), 'any', sessionId, 'EXPIRES_AT', scope.metadataFor(clientId, 'checkout-expiry-job', dueAt)));
  return { expired: due.length };
}

/**
 * Release of stalled reservations: sessions reserved for a payment (PROCESSING_PAYMENT) for at least
 * CHECKOUT_RESERVATION_TIMEOUT_SECONDS whose payment the read model does not have, oldest first, at most
 * RELEASE_BATCH_SIZE per run. Each is decided on streams: the payment's is read (a payment that exists keeps its
 * session), then the session's stream releases it once, whichever process asks first; the others record nothing.
 */
export async function releaseStalledReservations(platform: Platform): Promise<{ released: number }> {
  const cutoff = new Date(platform.runtime.now().getTime() - platform.config.checkoutReservationTimeoutSeconds * 1000);
  const due = await platform.reads.checkout.stalledReservations(cutoff, RELEASE_BATCH_SIZE);
  let released = 0;
  for (const { sessionId, clientId, paymentId } of due) {
    if (paymentId && await releaseStalledReservation(platform, sessionId, paymentId, { clientId, actor: 'checkout-release-job' })) released++;
  }
  return { released };
}
