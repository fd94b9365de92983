/**
 * Finishes settlements that a process left half done. A settlement asks the destination account, then records
 * its answer on the payment (`settleReceived`); a process that stopped in between (a crash, a deploy) leaves
 * the account's answer recorded and the payment RECEIVED. This reactor sees the account's answer (and every
 * INSTANT payment's receipt) in the feed and runs the same steps again: the account repeats its first answer,
 * and a payment already settled is left alone, so running it twice changes nothing.
 */
import type { RecordedEvent } from '../eventstore/port.ts';
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { settleReceived } from './handlers.ts';

export const SETTLEMENT_REACTOR_NAME = 'settlement';

export function settlementReactor(platform: Platform): Reactor {
  const metadataOf = (event: RecordedEvent) => ({ clientId: event.metadata.clientId, actor: 'settlement', causationId: event.id });
  const answered = async (event: RecordedEvent<string, { paymentId: string; settlementBatchId: string | null }>) => {
    await settleReceived(platform, event.data.paymentId, event.data.settlementBatchId, metadataOf(event));
  };
  return defineReactor<StoredEventData>({
    name: SETTLEMENT_REACTOR_NAME,
    handlers: {
      async PaymentReceived(event) {
        // Only INSTANT payments settle on receipt; settleReceived leaves the others to their batch.
        await settleReceived(platform, event.data.paymentId, null, metadataOf(event));
      },
      AccountCredited: answered,
      AccountCreditRefused: answered,
    },
  });
}
