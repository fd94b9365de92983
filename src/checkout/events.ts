/**
 * Events of checkout sessions and payment links. Streams: `checkout-session-<sessionId>` and
 * `payment-link-<linkId>`. Every event that changes a session's status carries `from` and `to`, so read models
 * and webhooks follow the transitions without re-deriving the state machine. Nothing here holds card data: a
 * session's payment is named by its id only.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { amountSchema, closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';
import { boundToNoClock, testClockIdProperty } from '../testClocks/events.ts';

export const sessionStatuses = ['ATTEMPT', 'ACTIVE', 'PROCESSING_PAYMENT', 'FINISHED', 'FAILED', 'EXPIRED'] as const;
export type SessionStatus = (typeof sessionStatuses)[number];
const sessionStatusSchema = { type: 'string', enum: sessionStatuses } as const;

const freeObject = { type: 'object' } as const;
const taxSchema = closed({ name: textSchema, type: { type: 'string', enum: ['FIXED', 'PERCENTAGE'] }, value: amountSchema, amount: amountSchema });
const itemSchema = closed({
  description: textSchema, preTaxAmount: amountSchema, totalAmount: amountSchema, tax: { oneOf: [taxSchema, { type: 'null' }] },
});
export type SessionItem = FromSchema<typeof itemSchema>;

const methodConfigSchema = closed({
  id: textSchema, type: textSchema, enabled: { type: 'boolean' }, requiredFields: { type: 'array', items: textSchema }, purchaseAmount: amountSchema,
});
const currencyConfigSchema = closed({
  currency: textSchema, product: textSchema, exchangeRate: amountSchema, paymentMethods: { type: 'array', items: methodConfigSchema },
});
export type CurrencyConfig = FromSchema<typeof currencyConfigSchema>;

/** What a session and a link are made of: computed amounts, the request's nodes as sent (they hold no card). */
const checkoutTermsProperties = {
  clientId: textSchema,
  currency: textSchema,
  items: { type: 'array', items: itemSchema },
  preTaxAmount: amountSchema,
  totalAmount: amountSchema,
  paymentMethodsAllowed: { type: 'array', items: textSchema },
  destinations: { type: 'array', items: freeObject },
  owner: freeObject,
  customer: { oneOf: [freeObject, { type: 'null' }] },
  customerRequirements: { type: 'array', items: textSchema },
  successUrl: nullableTextSchema,
  failedUrl: nullableTextSchema,
  redirectUrl: nullableTextSchema,
  /** Seconds. */
  duration: { type: 'integer', minimum: 1 },
} as const;
const checkoutTermsSchema = closed(checkoutTermsProperties);
export type CheckoutTerms = FromSchema<typeof checkoutTermsSchema>;

const transition = { sessionId: textSchema, from: sessionStatusSchema, to: sessionStatusSchema, at: instantSchema } as const;

export const sessionEventSchemas = {
  CheckoutSessionCreated: closed({
    ...checkoutTermsProperties,
    sessionId: textSchema,
    paymentLinkId: nullableTextSchema,
    checkoutToken: textSchema,
    status: { type: 'string', enum: ['ATTEMPT', 'ACTIVE'] },
    paymentConfigs: { type: 'array', items: currencyConfigSchema },
    expiresAt: instantSchema,
    createdAt: instantSchema,
    ...testClockIdProperty,
  }, ['testClockId']),
  /** The payer chose a method on a session opened from a link (ATTEMPT → ACTIVE). */
  CheckoutSessionMethodChosen: closed({ ...transition, method: textSchema }),
  /**
   * The session was taken for its payment (ATTEMPT or ACTIVE → PROCESSING_PAYMENT): recorded by the pay call before
   * it creates the payment, so that the session's stream decides between paying and expiring (DESIGN section 2).
   * Recorded by the checkout reactor instead for a payment that appeared after its reservation was released: then
   * also from EXPIRED (the payment exists, and the session follows it).
   */
  CheckoutSessionPaymentStarted: closed({ ...transition, paymentId: textSchema, method: nullableTextSchema }),
  /**
   * The payment the session was reserved for could not be created (the payer's input was refused), or did not appear
   * within CHECKOUT_RESERVATION_TIMEOUT_SECONDS (the pay call's process died or stalled in between): the session is
   * open again (PROCESSING_PAYMENT → ACTIVE; a `CheckoutSessionExpired` follows in the same append when its
   * expiresAt has passed) and `reason` says why. Only recorded while no payment of that id exists; one that appears
   * later still takes the session (`CheckoutSessionPaymentStarted`, from ACTIVE or EXPIRED).
   */
  CheckoutSessionPaymentReleased: closed({ ...transition, paymentId: textSchema, reason: textSchema }),
  /** Its payment settled. */
  CheckoutSessionFinished: closed({ ...transition, paymentId: textSchema }),
  /** Its payment failed, expired or could not be reconciled: `reason` is the payment's status. */
  CheckoutSessionFailed: closed({ ...transition, paymentId: textSchema, reason: textSchema }),
  /** expiresAt passed (EXPIRES_AT) or the client deleted it (DELETED). */
  CheckoutSessionExpired: closed({ ...transition, reason: { type: 'string', enum: ['EXPIRES_AT', 'DELETED'] } }),
  CheckoutSessionRefreshed: closed({ sessionId: textSchema, expiresAt: instantSchema, previousExpiresAt: instantSchema, at: instantSchema }),
} as const;

export const linkEventSchemas = {
  PaymentLinkCreated: closed({
    ...checkoutTermsProperties, linkId: textSchema, checkoutToken: textSchema, activeUntil: instantSchema, createdAt: instantSchema,
    ...testClockIdProperty,
  }, ['testClockId']),
  PaymentLinkActivated: closed({ linkId: textSchema, activeUntil: instantSchema, at: instantSchema }),
  PaymentLinkDeleted: closed({ linkId: textSchema, at: instantSchema }),
} as const;

type SessionData<K extends keyof typeof sessionEventSchemas> = FromSchema<(typeof sessionEventSchemas)[K]>;
type LinkData<K extends keyof typeof linkEventSchemas> = FromSchema<(typeof linkEventSchemas)[K]>;

export type CheckoutSessionCreatedData = SessionData<'CheckoutSessionCreated'>;
export type PaymentLinkCreatedData = LinkData<'PaymentLinkCreated'>;

export type SessionEvent =
  | { type: 'CheckoutSessionCreated'; data: CheckoutSessionCreatedData }
  | { type: 'CheckoutSessionMethodChosen'; data: SessionData<'CheckoutSessionMethodChosen'> }
  /** `id`, when set, is derived from the session and its payment (the reactor's, for a payment it hears of first). */
  | { type: 'CheckoutSessionPaymentStarted'; data: SessionData<'CheckoutSessionPaymentStarted'>; id?: string }
  | { type: 'CheckoutSessionPaymentReleased'; data: SessionData<'CheckoutSessionPaymentReleased'> }
  | { type: 'CheckoutSessionFinished'; data: SessionData<'CheckoutSessionFinished'>; id?: string }
  | { type: 'CheckoutSessionFailed'; data: SessionData<'CheckoutSessionFailed'>; id?: string }
  | { type: 'CheckoutSessionExpired'; data: SessionData<'CheckoutSessionExpired'> }
  | { type: 'CheckoutSessionRefreshed'; data: SessionData<'CheckoutSessionRefreshed'> };

export type LinkEvent =
  | { type: 'PaymentLinkCreated'; data: PaymentLinkCreatedData }
  | { type: 'PaymentLinkActivated'; data: LinkData<'PaymentLinkActivated'> }
  | { type: 'PaymentLinkDeleted'; data: LinkData<'PaymentLinkDeleted'> };

export const checkoutEvents = {
  schemas: { ...sessionEventSchemas, ...linkEventSchemas },
  upcasters: [
    { type: 'CheckoutSessionCreated', fromVersion: 1, upcaster: boundToNoClock },
    { type: 'PaymentLinkCreated', fromVersion: 1, upcaster: boundToNoClock },
  ],
} satisfies ContextEvents;

export const sessionStream = (sessionId: string) => `checkout-session-${sessionId}`;
export const linkStream = (linkId: string) => `payment-link-${linkId}`;
