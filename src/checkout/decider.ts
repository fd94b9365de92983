/**
 * The checkout session's state machine and the payment link's, both pure.
 *
 * Session: ATTEMPT (opened from a link, no method chosen yet) → ACTIVE (the payer chose one on the page), or
 * ACTIVE from the start (created through the API); either → PROCESSING_PAYMENT (taken for its payment, before
 * the payment is created: the pay call reserves the session first, so a session that reads EXPIRED never has a
 * payment, and one being paid cannot be expired) → FINISHED (the payment settled) or FAILED (it failed, expired or
 * could not be reconciled); a reservation whose payment could not be created is released (→ ACTIVE), and so is
 * one whose payment did not appear within the reservation timeout (its pay call's process died or stalled in
 * between): → ACTIVE, and at once → EXPIRED when its expiresAt has passed. A payment that appears after its
 * reservation was released (a stalled process that went on) wins: the session follows it whatever it became
 * meanwhile, ACTIVE or EXPIRED (the payment exists and its money moves; the session must show it). An ATTEMPT
 * or ACTIVE session whose expiresAt has passed is EXPIRED: readers see it at once, the expiry job records it,
 * and nothing can be paid on it meanwhile; DELETE records it at once. A refresh moves expiresAt to now +
 * duration while the session is not final. Only the session's own payment moves it on: a session has one
 * possible payment id (derived from the session), so every payment created for it is that one.
 *
 * Link: active until `activeUntil` (creation or activation + duration), which readers judge against the clock;
 * activation starts a new period; a deleted link is gone (not found) for every command.
 */
import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import type { CheckoutSessionCreatedData, LinkEvent, PaymentLinkCreatedData, SessionEvent, SessionStatus } from './events.ts';

/** The statuses from which a session can still be paid (until expiresAt). */
export const OPEN_STATUSES: ReadonlySet<SessionStatus> = new Set(['ATTEMPT', 'ACTIVE']);
export const FINAL_STATUSES: ReadonlySet<SessionStatus> = new Set(['FINISHED', 'FAILED', 'EXPIRED']);

/** How a payment ended, as the session hears it. */
export type PaymentOutcome = { outcome: 'SETTLED' } | { outcome: 'FAILED'; reason: string };

export type SessionCommand = (
  | { type: 'CreateSession'; session: CheckoutSessionCreatedData }
  | { type: 'ChooseMethod'; method: string; now: Date }
  /**
   * The pay call takes the session for `paymentId` before creating it: refused unless the session is open now, so
   * of a pay and an expiry (or two pays) racing, the stream lets one through.
   */
  | { type: 'ReservePayment'; paymentId: string; method: string | null; now: Date }
  /** The reserved payment could not be created: the session is open again. */
  | { type: 'ReleasePayment'; paymentId: string; reason: string; now: Date }
  /**
   * The release job's: no payment `paymentId` exists (its stream was read just before); the session is open again
   * if the reservation was recorded (`reservationRecordedAt`, the store's time of the event that reserved it) at least
   * `timeoutSeconds` before `wallNow`. Both are the wall clock's, also for a session on a test clock: the timeout
   * is about a process that died, not about the session's business time, which `now` is.
   */
  | { type: 'ReleaseStalledPayment'; paymentId: string; reservationRecordedAt: string; timeoutSeconds: number; wallNow: Date; now: Date }
  /**
   * The reactor's, for a payment created for the session (already reserved: then nothing to do; released
   * meanwhile: the session follows it all the same). `eventId`: the deterministic id the event is recorded with
   * (see handlers.ts), so a repeat is a no-op in the store too.
   */
  | { type: 'StartPayment'; paymentId: string; method: string | null; eventId: string; now: Date }
  | { type: 'EndPayment'; paymentId: string; ending: PaymentOutcome; eventId: string; now: Date }
  | { type: 'Expire'; reason: 'EXPIRES_AT' | 'DELETED'; now: Date }
  | { type: 'Refresh'; now: Date }
) & TenantScoped;

export interface SessionState {
  session: CheckoutSessionCreatedData | null;
  status: SessionStatus | null;
  expiresAt: string | null;
  paymentId: string | null;
}

const SESSION_NOT_FOUND = 'checkout session not found';

/** The status readers see: an open session past its expiresAt is EXPIRED, whether or not the job recorded it yet. */
export function effectiveStatus(status: SessionStatus, expiresAt: string | Date, now: Date): SessionStatus {
  return OPEN_STATUSES.has(status) && new Date(expiresAt).getTime() <= now.getTime() ? 'EXPIRED' : status;
}

function live(state: SessionState): CheckoutSessionCreatedData {
  if (!state.session) throw domainNotFound(SESSION_NOT_FOUND);
  return state.session;
}

/** Refuses, naming why, a session that cannot be paid now: anything but an open, unexpired session. */
/**
 * Whether a reservation recorded at `recordedAt` has waited `timeoutSeconds` for its payment at `wallNow`: the one rule of
 * its timeout, in the wall clock's time.
 */
export function reservationTimedOut(recordedAt: string, timeoutSeconds: number, wallNow: Date): boolean {
  return Date.parse(recordedAt) + timeoutSeconds * 1000 <= wallNow.getTime();
}

/**
 * The session given back by its reservation of `paymentId`: ACTIVE, then EXPIRED at once when its expiresAt has
 * passed (so it never reads ACTIVE past its time, whether or not the expiry job comes).
 */
function released(state: SessionState, paymentId: string, reason: string, now: Date): SessionEvent[] {
  const sessionId = state.session!.sessionId;
  const at = now.toISOString();
  const events: SessionEvent[] = [{ type: 'CheckoutSessionPaymentReleased', data: {
    sessionId, from: 'PROCESSING_PAYMENT', to: 'ACTIVE', paymentId, reason, at,
  } }];
  if (new Date(state.expiresAt!).getTime() <= now.getTime()) {
    events.push({ type: 'CheckoutSessionExpired', data: { sessionId, from: 'ACTIVE', to: 'EXPIRED', reason: 'EXPIRES_AT', at } });
  }
  return events;
}

export function assertPayable(state: SessionState, now: Date): CheckoutSessionCreatedData {
  const session = live(state);
  const status = effectiveStatus(state.status!, state.expiresAt!, now);
  if (!OPEN_STATUSES.has(status)) {
    throw domainPrecondition(`checkout session ${session.sessionId} is ${status}; only an ATTEMPT or ACTIVE session can be paid`);
  }
  return session;
}

export const sessionDecider: Decider<SessionCommand, SessionEvent, SessionState> = {
  initialState: { session: null, status: null, expiresAt: null, paymentId: null },

  // Long as a switch with one case per command of the session stream: the state machine reads whole in one place.
  decide(command, state) {
    refuseOtherTenants(command.tenant, state.session?.clientId ?? null, SESSION_NOT_FOUND);
    switch (command.type) {
      case 'CreateSession':
        if (state.session) throw domainConflict(`checkout session ${command.session.sessionId} already exists`);
        return [{ type: 'CheckoutSessionCreated', data: command.session }];
      case 'ChooseMethod': {
        const session = assertPayable(state, command.now);
        if (!session.paymentMethodsAllowed.includes(command.method)) {
          throw domainInvalid(`method: ${command.method} is not allowed here (paymentMethodsAllowed: ${session.paymentMethodsAllowed.join(', ')})`);
        }
        if (state.status !== 'ATTEMPT') return [];
        return [{ type: 'CheckoutSessionMethodChosen', data: {
          sessionId: session.sessionId, from: 'ATTEMPT', to: 'ACTIVE', method: command.method, at: command.now.toISOString(),
        } }];
      }
      case 'ReservePayment': {
        const session = assertPayable(state, command.now);
        return [{ type: 'CheckoutSessionPaymentStarted', data: {
          sessionId: session.sessionId, from: state.status!, to: 'PROCESSING_PAYMENT', paymentId: command.paymentId,
          method: command.method, at: command.now.toISOString(),
        } }];
      }
      case 'ReleasePayment': {
        live(state);
        if (state.paymentId !== command.paymentId || state.status !== 'PROCESSING_PAYMENT') return [];
        return released(state, command.paymentId, command.reason, command.now);
      }
      case 'ReleaseStalledPayment': {
        live(state);
        // Released already, by this job on another process or by the pay call; or followed by its payment.
        if (state.paymentId !== command.paymentId || state.status !== 'PROCESSING_PAYMENT') return [];
        if (!reservationTimedOut(command.reservationRecordedAt, command.timeoutSeconds, command.wallNow)) return [];
        return released(state, command.paymentId, `no payment ${command.paymentId} appeared within ${command.timeoutSeconds} s of the `
          + `reservation (recorded ${command.reservationRecordedAt}); the session was released`, command.now);
      }
      case 'StartPayment': {
        const session = live(state);
        if (state.paymentId === command.paymentId) return [];
        if (state.status === 'PROCESSING_PAYMENT' || state.status === 'FINISHED' || state.status === 'FAILED') {
          // Held by, or ended with, another payment: one a session can never have (its payment id is derived from it).
          throw domainPrecondition(`checkout session ${session.sessionId} is ${state.status} with payment ${state.paymentId}`);
        }
        // Open, or EXPIRED after its reservation was released: the payment exists, so the session follows it.
        return [{ type: 'CheckoutSessionPaymentStarted', id: command.eventId, data: {
          sessionId: session.sessionId, from: state.status!, to: 'PROCESSING_PAYMENT', paymentId: command.paymentId,
          method: command.method, at: command.now.toISOString(),
        } }];
      }
      case 'EndPayment': {
        const session = live(state);
        // Another payment's news (or news heard twice) leaves the session as it is.
        if (state.paymentId !== command.paymentId || state.status !== 'PROCESSING_PAYMENT') return [];
        const base = { sessionId: session.sessionId, from: state.status, paymentId: command.paymentId, at: command.now.toISOString() } as const;
        return command.ending.outcome === 'SETTLED'
          ? [{ type: 'CheckoutSessionFinished', id: command.eventId, data: { ...base, to: 'FINISHED' } }]
          : [{ type: 'CheckoutSessionFailed', id: command.eventId, data: { ...base, to: 'FAILED', reason: command.ending.reason } }];
      }
      case 'Expire': {
        const session = live(state);
        const status = state.status!;
        if (status === 'EXPIRED') return [];
        if (!OPEN_STATUSES.has(status)) {
          if (command.reason === 'EXPIRES_AT') return [];
          throw domainPrecondition(`checkout session ${session.sessionId} is ${status}; only an ATTEMPT or ACTIVE session can be expired`);
        }
        if (command.reason === 'EXPIRES_AT' && new Date(state.expiresAt!).getTime() > command.now.getTime()) return [];
        return [{ type: 'CheckoutSessionExpired', data: {
          sessionId: session.sessionId, from: status, to: 'EXPIRED', reason: command.reason, at: command.now.toISOString(),
        } }];
      }
      case 'Refresh': {
        const session = live(state);
        const status = effectiveStatus(state.status!, state.expiresAt!, command.now);
        if (FINAL_STATUSES.has(status)) {
          throw domainPrecondition(`checkout session ${session.sessionId} is ${status}; only a session that is not final can be refreshed`);
        }
        const expiresAt = new Date(command.now.getTime() + session.duration * 1000).toISOString();
        return [{ type: 'CheckoutSessionRefreshed', data: {
          sessionId: session.sessionId, expiresAt, previousExpiresAt: state.expiresAt!, at: command.now.toISOString(),
        } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'CheckoutSessionCreated':
        return { session: event.data, status: event.data.status, expiresAt: event.data.expiresAt, paymentId: null };
      case 'CheckoutSessionMethodChosen':
        return { ...state, status: event.data.to };
      case 'CheckoutSessionPaymentStarted':
        return { ...state, status: event.data.to, paymentId: event.data.paymentId };
      case 'CheckoutSessionPaymentReleased':
        return { ...state, status: event.data.to, paymentId: null };
      case 'CheckoutSessionFinished':
      case 'CheckoutSessionFailed':
      case 'CheckoutSessionExpired':
        return { ...state, status: event.data.to };
      case 'CheckoutSessionRefreshed':
        return { ...state, expiresAt: event.data.expiresAt };
    }
  },
};

export type LinkCommand = (
  | { type: 'CreateLink'; link: PaymentLinkCreatedData }
  | { type: 'Activate'; now: Date }
  | { type: 'Delete'; now: Date }
) & TenantScoped;

export interface LinkState {
  link: PaymentLinkCreatedData | null;
  activeUntil: string | null;
  deleted: boolean;
}

const LINK_NOT_FOUND = 'payment link not found';

/** Whether a link opens sessions at `now`. */
export function linkActive(state: Pick<LinkState, 'deleted' | 'activeUntil'>, now: Date): boolean {
  return !state.deleted && state.activeUntil !== null && new Date(state.activeUntil).getTime() > now.getTime();
}

function liveLink(state: LinkState): PaymentLinkCreatedData {
  if (!state.link || state.deleted) throw domainNotFound(LINK_NOT_FOUND);
  return state.link;
}

export const linkDecider: Decider<LinkCommand, LinkEvent, LinkState> = {
  initialState: { link: null, activeUntil: null, deleted: false },

  decide(command, state) {
    refuseOtherTenants(command.tenant, state.link?.clientId ?? null, LINK_NOT_FOUND);
    switch (command.type) {
      case 'CreateLink':
        if (state.link) throw domainConflict(`payment link ${command.link.linkId} already exists`);
        return [{ type: 'PaymentLinkCreated', data: command.link }];
      case 'Activate': {
        const link = liveLink(state);
        const activeUntil = new Date(command.now.getTime() + link.duration * 1000).toISOString();
        return [{ type: 'PaymentLinkActivated', data: { linkId: link.linkId, activeUntil, at: command.now.toISOString() } }];
      }
      case 'Delete': {
        const link = liveLink(state);
        return [{ type: 'PaymentLinkDeleted', data: { linkId: link.linkId, at: command.now.toISOString() } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'PaymentLinkCreated':
        return { link: event.data, activeUntil: event.data.activeUntil, deleted: false };
      case 'PaymentLinkActivated':
        return { ...state, activeUntil: event.data.activeUntil };
      case 'PaymentLinkDeleted':
        return { ...state, deleted: true };
    }
  },
};

/**
 * `checkout-session-<sessionId>`: a creation and a payment's reservation hand their wait to the HTTP edge (which
 * records the answer meanwhile); the other moves wait for the read models they touch; the release job's, for none.
 */
export const sessionStreamType = streamType('checkout-session-', { decider: sessionDecider, readModels: {
  CreateSession: 'alongside', ReservePayment: 'alongside', ChooseMethod: 'written', ReleasePayment: 'written', StartPayment: 'written',
  EndPayment: 'written', Expire: 'written', Refresh: 'written', ReleaseStalledPayment: 'none',
} });

/** `payment-link-<linkId>`: a creation hands its wait to the HTTP edge; a change waits for every read model. */
export const linkStreamType = streamType('payment-link-', { decider: linkDecider, readModels: {
  CreateLink: 'alongside', Activate: 'all', Delete: 'all',
} });
