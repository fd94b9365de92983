/**
 * Finishes what a process left half done of a deposit: a matched deposit's payment created and not yet received and
 * settled (`finishMatched`), an assignment, and the refund child of an expired deposit. An assignment records its request on the deposit, asks the
 * account, records the answer on the deposit and creates the companion child (`finishAssignment`); a process
 * that stopped in between leaves the request (or the answer) recorded and the rest undone. This reactor sees
 * every request and answer in the feed and runs the same steps again: the account repeats its first answer, the
 * deposit records it once, the companion is created once (deterministic ids), so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { platformAt, onClockMetadata } from '../testClocks/time.ts';
import { finishAssignment, finishMatched, isMatchedDeposit, loadDeposit, refundExpiredDeposit } from './handlers.ts';

export const DEPOSIT_REACTOR_NAME = 'deposit_process';

export function assignmentReactor(platform: Platform): Reactor {
  const metadataOf = (event: RecordedEvent) => ({ clientId: event.metadata.clientId, actor: 'deposit-process', causationId: event.id });
  const clockOf = async (paymentId: string) => (await loadDeposit(platform, paymentId)).deposit?.testClockId;
  const finish = async (event: RecordedEvent<string, { paymentId: string; at: string }>) => {
    const { paymentId, at } = event.data;
    const clockId = await clockOf(paymentId);
    await finishAssignment(clockId ? platformAt(platform, new Date(at)) : platform, paymentId, metadataOf(event));
  };
  return defineReactor<StoredEventData>({
    name: DEPOSIT_REACTOR_NAME,
    handlers: {
      async PaymentCreated(event) {
        // Any payment's creation: only a matched deposit's has steps of this process after it.
        const created = event.data;
        if (isMatchedDeposit(created, event.metadata.actor)) await finishMatched(platform, created.paymentId, created.totalAmount, metadataOf(event));
      },
      DepositAssignmentRequested: finish,
      DepositAssigned: finish,
      async DepositRefundDue(event) {
        const { paymentId } = event.data;
        // Read once: the deposit names its clock and what is due.
        const deposit = await loadDeposit(platform, paymentId);
        const clockId = deposit.deposit?.testClockId;
        // A deposit bound to a test clock: its refund child is issued at the instant it expired on that clock.
        const at = new Date(event.data.at);
        await refundExpiredDeposit(clockId ? platformAt(platform, at) : platform, paymentId, onClockMetadata(metadataOf(event), clockId, at), deposit);
      },
    },
  });
}
