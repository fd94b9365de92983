/**
 * The deposits' time-driven work: the expiry of deposits left unassigned past their `expiresAt`. Each run takes a
 * bounded slice of the queue from the read model and sends each deposit through its stream, which refuses one
 * that moved meanwhile (assigned, being assigned, already expired); so a run that overlaps another (on this or
 * another instance) expires nothing twice. The scheduled job runs it for the deposits bound to no test clock,
 * with the wall clock's time; an advance of a test clock runs it for that clock's deposits, each expiring at its
 * `expiresAt` on the clock (src/testClocks/time.ts).
 */
import type { Platform } from '../platform.ts';
import { isRefusedMove } from '../payments/handlers.ts';
import { eachDue, wallClockScope, type TimeScope } from '../testClocks/time.ts';
import { expireDeposit } from './handlers.ts';

/** Deposits a run expires at most; the rest wait for the next run. */
export const DEPOSIT_EXPIRY_BATCH_SIZE = 500;

export async function expireUnassignedDeposits(
  platform: Platform, scope: TimeScope = wallClockScope(platform),
): Promise<{ expired: number; skipped: number }> {
  const db = platform.readModels;
  const due = await db.selectFrom('deposits').select(['payment_id', 'client_id', 'expires_at'])
    .where('status', '=', 'CREATED').where('expires_at', '<=', scope.until)
    .where('test_clock_id', scope.clockId === null ? 'is' : '=', scope.clockId)
    .orderBy('expires_at').orderBy('payment_id').limit(DEPOSIT_EXPIRY_BATCH_SIZE).execute();
  let expired = 0;
  let skipped = 0;
  await eachDue(scope, due, async ({ payment_id: paymentId, client_id: clientId, expires_at: dueAt }) => {
    try {
      await expireDeposit(scope.platformFor(dueAt), paymentId, scope.metadataFor(clientId, 'expiry-job', dueAt));
      expired++;
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
      skipped++;
    }
  });
  return { expired, skipped };
}
