/**
 * The sandbox provider's autopilot (SANDBOX_AUTOPILOT=true): a reactor that plays the rails. A card payment
 * is authorized (or declined), captured and received; a push-rail payment is marked PENDING and waits for the
 * payer (a signed notification); a quote that is already over expires. It reads the payment's current state
 * on every event it sees and takes the one next step, through the same handlers as the API; a step the state
 * machine refuses (someone moved first, or a re-run) is skipped, so running it twice changes nothing. It plays
 * the provider for every client, so it acts on any client's payment.
 */
import { defineReactor, type Reactor } from '../../projection/projector.ts';
import type { RecordedEvent } from '../../eventstore/port.ts';
import type { Platform } from '../../platform.ts';
import type { StoredEventData } from '../../storedEvents/registry.ts';
import { expiryOf } from '../decider.ts';
import { onClockMetadata, platformOn } from '../../testClocks/time.ts';
import {
  authorizePayment, capturePayment, expirePayment, isRefusedMove, loadPayment, markPaymentPending, receivePayment,
} from '../handlers.ts';

export const AUTOPILOT_NAME = 'sandbox_autopilot';

export function sandboxAutopilot(platform: Platform): Reactor {
  const nextStep = async (event: RecordedEvent<string, { paymentId: string }>) => {
    const { paymentId } = event.data;
    const state = await loadPayment(platform, paymentId);
    const payment = state.payment;
    if (!payment) return;
    // A payment bound to a test clock: its steps keep their real pace, but happen at the clock's time.
    const on = await platformOn(platform, payment.testClockId);
    const metadata = onClockMetadata({ clientId: payment.clientId, actor: 'sandbox-provider', causationId: event.id }, payment.testClockId,
      on.runtime.now());
    const expiry = expiryOf(payment);
    try {
      if (expiry && Date.parse(expiry.at) <= on.runtime.now().getTime()) {
        await expirePayment(on, paymentId, metadata);
      } else if (payment.flow === 'CARD') {
        if (state.status === 'CREATED') await authorizePayment(on, 'any', paymentId, metadata, state);
        else if (state.status === 'AUTHORIZED') await capturePayment(on, 'any', paymentId, metadata);
        else if (state.status === 'CAPTURED') await receivePayment(on, 'any', paymentId, metadata);
      } else if (state.status === 'CREATED') {
        await markPaymentPending(on, 'any', paymentId, metadata);
      }
    } catch (error) {
      if (!isRefusedMove(error)) throw error;
    }
  };
  return defineReactor<StoredEventData>({
    name: AUTOPILOT_NAME,
    handlers: { PaymentCreated: nextStep, PaymentAuthorized: nextStep, PaymentCaptured: nextStep, PaymentReviewApproved: nextStep },
  });
}
