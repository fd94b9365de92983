/**
 * The payments' time-driven work: settlement batches and expiry. Each run takes a bounded slice of its queue
 * from the read model and sends each payment through the state machine, which refuses anything that moved
 * meanwhile; so a run that overlaps another (on this or another instance) changes nothing twice. The scheduled
 * jobs run them for the payments bound to no test clock, with the wall clock's time; an advance of a test clock
 * runs them for that clock's payments, each effect at the instant it fell due on the clock
 * (src/testClocks/time.ts).
 */
import type { Platform } from '../platform.ts';
import { eachDue, wallClockScope, type TimeScope } from '../testClocks/time.ts';
import { expirePayment, isRefusedMove, SETTLEMENT_EVENT_TYPES, settlePayment } from './handlers.ts';
import { comparePositions, type Position } from '../eventstore/position.ts';
import type { SettlementPeriod } from './events.ts';

export const JOB_BATCH_SIZE = 500;
/**
 * Payments of a settlement batch settling at once. Each is a process across its own stream and its account's;
 * those crediting one account queue on its stream and are appended together (src/eventstore/commandHandler.ts).
 */
const SETTLEMENT_CONCURRENCY = 16;

/**
 * Whole days of 24 hours from a payment's receipt to its settlement, per settlement period, on a test clock
 * (calendar days: the sandbox keeps no business-day calendar). Without a clock, the sandbox compresses them: a
 * T+1 or T+2 payment settles in the next settlement batch (SETTLEMENT_CRON).
 */
export const SETTLEMENT_DAYS: Readonly<Record<SettlementPeriod, number>> = { INSTANT: 0, 'T+1': 1, 'T+2': 2 };

export interface SettlementBatchResult {
  batchId: string | null;
  settled: number;
  unsettled: number;
  skipped: number;
}

/**
 * One settlement batch, stamped with one id: on the wall clock, every RECEIVED payment whose period is not
 * INSTANT (at most JOB_BATCH_SIZE, oldest first); on a test clock, those of its payments whose settlement date
 * (receipt + SETTLEMENT_DAYS) the clock has reached, each settled at that date. SETTLEMENT_CONCURRENCY at a time;
 * a payment that fails stops the run (the job runs again on schedule): the others in flight finish first.
 *
 * On the wall clock the batch waits for the read models once, at its end, for the furthest settlement (so the next
 * run's queue no longer holds what this one settled), not after each payment: a wait of each held its slot of
 * SETTLEMENT_CONCURRENCY for the projectors' next transaction, which bounded the batch to about 250 payments a
 * second under load. A payment's status is read from its stream, which needs no wait. A clock's advance waits once
 * for all its effects already (src/testClocks/handlers.ts).
 */
export async function runSettlementBatch(platform: Platform, scope: TimeScope = wallClockScope(platform)): Promise<SettlementBatchResult> {
  const due = await platform.reads.payments.awaitingSettlement(scope, SETTLEMENT_DAYS, JOB_BATCH_SIZE);
  const result: SettlementBatchResult = { batchId: null, settled: 0, unsettled: 0, skipped: 0 };
  if (due.length === 0) return result;
  const batchId = platform.runtime.newId();
  result.batchId = batchId;
  let furthest: Position | null = null;
  const settling = (on: Platform): Platform => (scope.clockId !== null ? on : {
    ...on,
    readYourWrites: async (position) => {
      if (position && (!furthest || comparePositions(position, furthest) > 0)) furthest = position;
    },
  });
  await eachDue(scope, due, async ({ paymentId, clientId, settlesAt: dueAt }) => {
    const status = await settlePayment(settling(scope.platformFor(dueAt)), paymentId, batchId,
      { ...scope.metadataFor(clientId, 'settlement-batch', dueAt), correlationId: batchId });
    if (status === 'SETTLED') result.settled++;
    else if (status === 'UNSETTLED') result.unsettled++;
    else result.skipped++;
  }, Math.max(scope.concurrency, SETTLEMENT_CONCURRENCY));
  await platform.readYourWrites(furthest, SETTLEMENT_EVENT_TYPES);
  return result;
}

/** Expires every payment whose `expiresAt` or quote has passed before it was received (at that instant, on a test clock). */
export async function expireDuePayments(platform: Platform, scope: TimeScope = wallClockScope(platform)): Promise<{ expired: number; skipped: number }> {
  const due = await platform.reads.payments.payableUntilDue(scope, JOB_BATCH_SIZE);
  let expired = 0;
  let skipped = 0;
  await eachDue(scope, due, async ({ paymentId, clientId, payableUntil: dueAt }) => {
    try {
      await expirePayment(scope.platformFor(dueAt), paymentId, scope.metadataFor(clientId, 'expiry-job', dueAt));
      expired++;
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
      skipped++;
    }
  });
  return { expired, skipped };
}
