/**
 * Gives back document numbers reserved for customers that were never created. A creation reserves the number
 * on its own stream, then records the customer on the customer's stream (src/customers/handlers.ts); a process
 * that dies between the two, or a release that fails after the creation failed, leaves the number reserved for
 * a customer that does not exist, and every later creation with it would be refused.
 *
 * Each reservation is looked at once it is ABANDONED_RESERVATION_MS old (by the time it was recorded), time
 * in which a creation in progress has long recorded its customer; the reactor waits until then, so it runs that
 * much behind the feed's head while numbers are being reserved (read-your-writes never waits for a reactor).
 * The streams decide (releaseAbandonedReservation), with deterministic ids: a reservation seen twice changes
 * nothing more.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineReactor, type Reactor } from '../projection/projector.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { releaseAbandonedReservation } from './handlers.ts';

export const DOCUMENT_NUMBERS_REACTOR_NAME = 'customer_document_numbers';

export function documentNumbersReactor(platform: Platform): Reactor {
  const graceMs = platform.config.abandonedReservationMs;
  return defineReactor<StoredEventData>({
    name: DOCUMENT_NUMBERS_REACTOR_NAME,
    handlers: {
      async CustomerDocumentNumberReserved(event, stopping) {
        const reserved = event.data;
        // Bounded by graceMs: the reservation was recorded before now (give or take the clocks' skew).
        const waitMs = Math.min(event.recordedAt.getTime() + graceMs - Date.now(), graceMs);
        if (waitMs > 0) await sleep(waitMs, undefined, { signal: stopping });
        await releaseAbandonedReservation(platform, {
          clientId: reserved.clientId, documentNumber: reserved.documentNumber, customerId: reserved.customerId,
          reservationRevision: Number(event.revision), reservationEventId: event.id,
        }, { clientId: reserved.clientId, actor: 'customers', causationId: event.id });
      },
    },
  });
}
