/**
 * Finishes settlements that a process left half done. A settlement asks the destination account, then records
 * its answer on the payment (`settleReceived`); a process that stopped in between (a crash, a deploy) leaves
 * the account's answer recorded and the payment RECEIVED. This reactor sees the account's answer (and every
 * INSTANT payment's receipt) in the feed and runs the same steps again: the account repeats its first answer,
 * and a payment already settled is left alone, so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { AccountCreditedData } from '../ledger/events.ts';
import type { AccountCreditRefusedData } from '../accounts/events.ts';
import { settleReceived } from './handlers.ts';

export const SETTLEMENT_REACTOR_NAME = 'settlement';

export function settlementReactor(platform: Platform): Reactor {
  return {
    name: SETTLEMENT_REACTOR_NAME,
    handles: ['PaymentReceived', 'AccountCredited', 'AccountCreditRefused'],
    async react(event: RecordedEvent) {
      const metadata = { clientId: event.metadata.clientId, actor: 'settlement', causationId: event.id };
      if (event.type === 'PaymentReceived') {
        const { paymentId } = event.data as { paymentId: string };
        // Only INSTANT payments settle on receipt; settleReceived leaves the others to their batch.
        await settleReceived(platform, paymentId, null, metadata);
        return;
      }
      const answer = event.data as AccountCreditedData | AccountCreditRefusedData;
      await settleReceived(platform, answer.paymentId, answer.settlementBatchId, metadata);
    },
  };
}
