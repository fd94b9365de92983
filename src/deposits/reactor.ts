/**
 * Finishes what a process left half done of a deposit: a matched deposit's payment created and not yet received and
 * settled (`finishMatched`), an assignment, and the refund child of an expired deposit. An assignment records its request on the deposit, asks the
 * account, records the answer on the deposit and creates the companion child (`finishAssignment`); a process
 * that stopped in between leaves the request (or the answer) recorded and the rest undone. This reactor sees
 * every request and answer in the feed and runs the same steps again: the account repeats its first answer, the
 * deposit records it once, the companion is created once (deterministic ids), so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { PaymentCreatedData } from '../payments/events.ts';
import { platformAt, onClockMetadata } from '../testClocks/time.ts';
import type { DepositEventData } from './events.ts';
import { finishAssignment, finishMatched, isMatchedDeposit, loadDeposit, refundExpiredDeposit } from './handlers.ts';

export const DEPOSIT_REACTOR_NAME = 'deposit_process';

export function assignmentReactor(platform: Platform): Reactor {
  return {
    name: DEPOSIT_REACTOR_NAME,
    handles: ['PaymentCreated', 'DepositAssignmentRequested', 'DepositAssigned', 'DepositRefundDue'],
    async react(event: RecordedEvent) {
      const { paymentId } = event.data as { paymentId: string };
      const metadata = { clientId: event.metadata.clientId, actor: 'deposit-process', causationId: event.id };
      if (event.type === 'PaymentCreated') {
        // Any payment's creation: only a matched deposit's has steps of this process after it.
        const created = event.data as PaymentCreatedData;
        if (isMatchedDeposit(created, event.metadata.actor)) await finishMatched(platform, paymentId, created.totalAmount, metadata);
        return;
      }
      const clockId = (await loadDeposit(platform, paymentId)).deposit?.testClockId;
      if (event.type === 'DepositRefundDue') {
        // A deposit bound to a test clock: its refund child is issued at the instant it expired on that clock.
        const at = new Date((event.data as DepositEventData<'DepositRefundDue'>).at);
        await refundExpiredDeposit(clockId ? platformAt(platform, at) : platform, paymentId, onClockMetadata(metadata, clockId, at));
      } else {
        await finishAssignment(clockId ? platformAt(platform, new Date((event.data as { at: string }).at)) : platform, paymentId, metadata);
      }
    },
  };
}
