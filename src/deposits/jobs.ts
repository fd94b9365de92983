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
import { expireCompanion, expireDeposit } from './handlers.ts';

/** Deposits a run expires at most; the rest wait for the next run. */
export const DEPOSIT_EXPIRY_BATCH_SIZE = 500;

export async function expireUnassignedDeposits(
  platform: Platform, scope: TimeScope = wallClockScope(platform),
): Promise<{ expired: number; skipped: number }> {
  const due = await platform.reads.deposits.unassignedDue(scope, DEPOSIT_EXPIRY_BATCH_SIZE);
  let expired = 0;
  let skipped = 0;
  await eachDue(scope, due, async ({ paymentId, clientId, expiresAt: dueAt }) => {
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

/** Companions a run expires at most; the rest wait for the next run. */
export const COMPANION_EXPIRY_BATCH_SIZE = 500;

/**
 * The expiry of the amounts still due: companions (of underpaid deposits) still CREATED past their expiresAt, from the
 * payments read model, soonest first; each one's stream decides (one paid or cancelled meanwhile records nothing).
 * As for deposits, the scheduled job takes those bound to no test clock; an advance of a clock, that clock's (a
 * companion follows its deposit's clock).
 */
export async function expireDueCompanions(platform: Platform, scope: TimeScope = wallClockScope(platform)): Promise<{ expired: number }> {
  const due = await platform.reads.deposits.companionsDue(scope, COMPANION_EXPIRY_BATCH_SIZE);
  let expired = 0;
  await eachDue(scope, due, async ({ paymentId, clientId, expiresAt: dueAt }) => {
    if (await expireCompanion(scope.platformFor(dueAt), paymentId, scope.metadataFor(clientId, 'expiry-job', dueAt))) expired++;
  });
  return { expired };
}
