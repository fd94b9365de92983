/**
 * Finishes assignments that a process left half done, and issues the refund child of an expired deposit. An assignment records its request on the deposit, asks the
 * account, records the answer on the deposit and creates the companion child (`finishAssignment`); a process
 * that stopped in between leaves the request (or the answer) recorded and the rest undone. This reactor sees
 * every request and answer in the feed and runs the same steps again: the account repeats its first answer, the
 * deposit records it once, the companion is created once (deterministic ids), so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { finishAssignment, refundExpiredDeposit } from './handlers.ts';

export const DEPOSIT_REACTOR_NAME = 'deposit_process';

export function assignmentReactor(platform: Platform): Reactor {
  const metadataOf = (event: RecordedEvent) => ({ clientId: event.metadata.clientId, actor: 'deposit-process', causationId: event.id });
  const finish = async (event: RecordedEvent<string, { paymentId: string }>) => {
    await finishAssignment(platform, event.data.paymentId, metadataOf(event));
  };
  return defineReactor<StoredEventData>({
    name: DEPOSIT_REACTOR_NAME,
    handlers: {
      DepositAssignmentRequested: finish,
      DepositAssigned: finish,
      async DepositRefundDue(event) {
        await refundExpiredDeposit(platform, event.data.paymentId, metadataOf(event));
      },
    },
  });
}
