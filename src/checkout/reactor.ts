/**
 * Drives sessions from their payments' events (a process manager, not a read-model check): a payment created
 * for a session moves it to PROCESSING_PAYMENT (the pay call reserved it so already, so this is a no-op for every
 * payment created since the reservation came first); its settlement to FINISHED; its failure, expiry or an unsettled
 * reconciliation to FAILED. The session's decider ignores news it already has and news of another payment, so a
 * second run of the same event changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { isRefusedMove, loadPayment } from '../payments/handlers.ts';
import { endSessionPayment, outcomeOf, startSessionPayment } from './handlers.ts';

export const CHECKOUT_REACTOR_NAME = 'checkout_sessions';

export function checkoutReactor(platform: Platform): Reactor {
  const metadataOf = (event: RecordedEvent) => ({ clientId: event.metadata.clientId, actor: 'checkout', causationId: event.id });
  /** A session that moved on first (expired, deleted) keeps its status. */
  const unlessMovedOn = async (step: () => Promise<unknown>) => {
    try {
      await step();
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
    }
  };
  const paymentEnded = (event: RecordedEvent<string, { paymentId: string; to: string }>) => unlessMovedOn(async () => {
    const { paymentId, to } = event.data;
    const ending = outcomeOf(event.type, to);
    if (!ending) return;
    const sessionId = (await loadPayment(platform, paymentId)).payment?.checkoutSessionId;
    if (sessionId) await endSessionPayment(platform, sessionId, paymentId, ending, metadataOf(event));
  });
  return defineReactor<StoredEventData>({
    name: CHECKOUT_REACTOR_NAME,
    handlers: {
      PaymentCreated: (event) => unlessMovedOn(async () => {
        const created = event.data;
        if (created.checkoutSessionId) {
          await startSessionPayment(platform, created.checkoutSessionId, created.paymentId, created.method, metadataOf(event));
        }
      }),
      PaymentSettled: paymentEnded,
      PaymentFailed: paymentEnded,
      PaymentExpired: paymentEnded,
      PaymentUnsettled: paymentEnded,
    },
  });
}
