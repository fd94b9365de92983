/**
 * Finishes assignments that a process left half done. An assignment records its request on the deposit, asks the
 * account, records the answer on the deposit and creates the companion child (`finishAssignment`); a process
 * that stopped in between leaves the request (or the answer) recorded and the rest undone. This reactor sees
 * every request and answer in the feed and runs the same steps again: the account repeats its first answer, the
 * deposit records it once, the companion is created once (deterministic ids), so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import { finishAssignment } from './handlers.ts';

export const ASSIGNMENT_REACTOR_NAME = 'deposit_assignment';

export function assignmentReactor(platform: Platform): Reactor {
  return {
    name: ASSIGNMENT_REACTOR_NAME,
    handles: ['DepositAssignmentRequested', 'DepositAssigned'],
    async react(event: RecordedEvent) {
      const { paymentId } = event.data as { paymentId: string };
      await finishAssignment(platform, paymentId, { clientId: event.metadata.clientId, actor: 'deposit-assignment', causationId: event.id });
    },
  };
}
