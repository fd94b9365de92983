/**
 * Finishes refunds that a process left half done, and plays the sandbox provider for refunds.
 *
 * The refund reactor sees every request (`PaymentRefundRequested` on the parent) and every end of a child in
 * the feed and runs the same steps as the request or the notification did (./handlers.ts): the account repeats
 * its first answer, the parent and the child answer a repeated step with nothing. So a process that stopped
 * between two streams (after the hold, before the child; after the child's end, before the account followed)
 * is finished here, and running it twice changes nothing. Steps this process is running (a request's, the
 * autopilot's end of a child) are waited for instead, and steps it ran lately and ended well are not run again
 * (src/projection/inFlight.ts); steps that failed are run here.
 */
import type { RecordedEvent } from '../../eventstore/port.ts';
import { defineReactor, type Reactor } from '../../projection/projector.ts';
import type { Platform } from '../../platform.ts';
import type { StoredEventData } from '../../storedEvents/registry.ts';
import { DomainError } from '../../domain/errors.ts';
import { advanceRefund, endRefund, followRefundEnd, loadRefund, refundAdvance, refundEndFollowed } from './handlers.ts';
import { clockOfPayment, onClockMetadata, platformOn } from '../../testClocks/time.ts';

export const REFUND_REACTOR_NAME = 'refund_process';
export const REFUND_AUTOPILOT_NAME = 'sandbox_refund_autopilot';

export function refundReactor(platform: Platform): Reactor {
  const metadataOf = (event: RecordedEvent) => ({ clientId: event.metadata.clientId, actor: 'refunds', causationId: event.id });
  const childEnded = async (event: RecordedEvent<string, { refundId: string }>) => {
    if (await platform.inFlight.doneByAnother(refundEndFollowed(event.data.refundId))) return;
    await followRefundEnd(platform, await loadRefund(platform, event.data.refundId), metadataOf(event));
  };
  return defineReactor<StoredEventData>({
    name: REFUND_REACTOR_NAME,
    handlers: {
      async PaymentRefundRequested(event) {
        if (await platform.inFlight.doneByAnother(refundAdvance(event.data.refundId))) return;
        await advanceRefund(platform, event.data.paymentId, event.data.refundId, metadataOf(event));
      },
      RefundSettled: childEnded,
      RefundFailed: childEnded,
      RefundUnsettled: childEnded,
      RefundExpired: childEnded,
    },
  });
}

/**
 * SANDBOX_AUTOPILOT=true: the sandbox provider ends every refund child it is handed, as its triggers say
 * (a refund's `reason` containing `sandbox:refund-fail`, `sandbox:refund-unsettled` or `sandbox:refund-expire`;
 * SETTLED otherwise). A child that already ended (a notification came first) is left as it is.
 */
export function refundAutopilot(platform: Platform): Reactor {
  return defineReactor<StoredEventData>({
    name: REFUND_AUTOPILOT_NAME,
    handlers: {
      async RefundCreated(event) {
        const refund = event.data;
        const outcome = platform.provider.refundOutcome(refund);
        // The child of a payment bound to a test clock ends at the clock's time.
        const clockId = await clockOfPayment(platform, refund.parentPaymentId);
        const on = await platformOn(platform, clockId);
        const metadata = onClockMetadata({ clientId: refund.clientId, actor: 'sandbox-provider', causationId: event.id }, clockId, on.runtime.now());
        try {
          await endRefund(on, 'any', refund.refundId, outcome, metadata);
        } catch (error) {
          if (!(error instanceof DomainError && error.kind === 'failedPrecondition')) throw error;
        }
      },
    },
  });
}
