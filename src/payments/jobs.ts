/**
 * The payments' time-driven work: settlement batches and expiry. Each run takes a bounded slice of its queue
 * from the read model and sends each payment through the state machine, which refuses anything that moved
 * meanwhile; so a run that overlaps another (on this or another instance) changes nothing twice.
 */
import type { Platform } from '../platform.ts';
import { EXPIRABLE_STATUSES } from '../../projections/payments.ts';
import { expirePayment, isRefusedMove, settlePayment } from './handlers.ts';

export const JOB_BATCH_SIZE = 500;
/**
 * Payments of a settlement batch settling at once. Each is a process across its own stream and its account's;
 * those crediting one account queue on its stream and are appended together (src/eventstore/commandHandler.ts).
 */
const SETTLEMENT_CONCURRENCY = 16;

export interface SettlementBatchResult {
  batchId: string | null;
  settled: number;
  unsettled: number;
  skipped: number;
}

/**
 * One settlement batch: every RECEIVED payment whose period is not INSTANT (at most JOB_BATCH_SIZE, oldest first),
 * stamped with one id. A payment that fails stops the run (the job runs again on schedule): the others in flight
 * finish first.
 */
export async function runSettlementBatch(platform: Platform): Promise<SettlementBatchResult> {
  const db = platform.readModels;
  const due = await db.selectFrom('payments').select(['payment_id', 'client_id'])
    .where('status', '=', 'RECEIVED').where('settlement', '<>', 'INSTANT')
    .orderBy('received_at').limit(JOB_BATCH_SIZE).execute() as Array<{ payment_id: string; client_id: string }>;
  const result: SettlementBatchResult = { batchId: null, settled: 0, unsettled: 0, skipped: 0 };
  if (due.length === 0) return result;
  const batchId = platform.runtime.newId();
  result.batchId = batchId;
  // Started oldest first, SETTLEMENT_CONCURRENCY at a time.
  let next = 0;
  let failure: { error: unknown } | null = null;
  await Promise.all(Array.from({ length: Math.min(SETTLEMENT_CONCURRENCY, due.length) }, async () => {
    for (let i = next++; i < due.length && !failure; i = next++) {
      const { payment_id: paymentId, client_id: clientId } = due[i]!;
      try {
        const status = await settlePayment(platform, paymentId, batchId, { clientId, actor: 'settlement-batch', correlationId: batchId });
        if (status === 'SETTLED') result.settled++;
        else if (status === 'UNSETTLED') result.unsettled++;
        else result.skipped++;
      } catch (error) {
        failure ??= { error };
      }
    }
  }));
  if (failure) throw (failure as { error: unknown }).error;
  return result;
}

/** Expires every payment whose `expiresAt` or quote has passed before it was received. */
export async function expireDuePayments(platform: Platform): Promise<{ expired: number; skipped: number }> {
  const db = platform.readModels;
  const now = platform.runtime.now();
  const due = await db.selectFrom('payments').select(['payment_id', 'client_id'])
    .where('status', 'in', EXPIRABLE_STATUSES).where('payable_until', '<=', now)
    .orderBy('payable_until').limit(JOB_BATCH_SIZE).execute() as Array<{ payment_id: string; client_id: string }>;
  let expired = 0;
  let skipped = 0;
  for (const { payment_id: paymentId, client_id: clientId } of due) {
    try {
      await expirePayment(platform, paymentId, { clientId, actor: 'expiry-job' });
      expired++;
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
      skipped++;
    }
  }
  return { expired, skipped };
}
