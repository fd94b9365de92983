/**
 * Commands on checkout sessions and payment links: check the request against the catalog and the client's own
 * identities, accounts and customers, compute the amounts, and run the deciders on the streams. Paying a
 * session first takes the session for its payment on the session's stream (which decides whether it can still be
 * paid), then creates the payment through the payments context (with `checkoutSessionId`); the checkout reactor
 * moves the session on from the payment's events.
 */
import { randomBytes } from 'node:crypto';
import type { CreateCheckoutSession, PayCheckoutSession } from '../../schemas/checkout.ts';
import type { CreatePayment } from '../../schemas/payments.ts';
import { ranBefore } from '../eventstore/commandHandler.ts';
import { runCommand, streamState } from '../eventstore/streams.ts';
import { failpoint } from '../failpoints.ts';
import { deterministicId, createdId } from '../eventstore/deterministicId.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { recordedAllAs } from '../eventstore/typedEvents.ts';
import { DomainError, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { visibleTo, type Tenant } from '../domain/tenancy.ts';
import { formatAmount, toDecimal, zeroAmount } from '../domain/money.ts';
import type { Platform } from '../platform.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { customerOfClient } from '../customers/handlers.ts';
import { amountIn, createPayment, loadPayment } from '../payments/handlers.ts';
import type { PaymentView } from '../payments/ports.ts';
import { paymentIdFor } from '../payments/events.ts';
import { validateNodes } from '../payments/nodes.ts';
import type { PaymentNodeInput } from '../../schemas/paymentNodes.ts';
import { checkAllowedMethods, computeTotals, payableConfigs, paymentConfigsFor } from './amounts.ts';
import type { CreditedAccount } from './ports.ts';
import {
  assertPayable, linkActive, linkStreamType, sessionStreamType, type LinkState, type PaymentOutcome, type SessionState,
} from './decider.ts';
import { linkStream, sessionStream, type CheckoutSessionCreatedData, type CheckoutTerms, type SessionStatus } from './events.ts';
import { creatingOn } from '../testClocks/binding.ts';
import { isOnAClock, onClockMetadata, platformOn } from '../testClocks/time.ts';

/** A session opened from a link lasts this long (seconds), or the link's own duration when shorter. */
export const LINK_SESSION_DURATION_SECONDS = 1_800;
/** A session's latest events read to find the one that reserved it (the reservation is among its last few). */
const RESERVATION_LOOKBACK_EVENTS = 100;
/** Characters of a refusal kept as the reason a session's reservation was released. */
const MAX_RELEASE_REASON_CHARS = 500;
/** Random bytes of a checkout token (base64url: 32 characters). */
const CHECKOUT_TOKEN_BYTES = 24;

const newToken = () => randomBytes(CHECKOUT_TOKEN_BYTES).toString('base64url');

export function loadSession(platform: Platform, sessionId: string): Promise<SessionState> {
  return streamState(platform, sessionStreamType, sessionStream(sessionId));
}

export function loadLink(platform: Platform, linkId: string): Promise<LinkState> {
  return streamState(platform, linkStreamType, linkStream(linkId));
}

type CheckoutDestination = CreateCheckoutSession['destinations'][number];

/** A destination as the payment's destination node: an ACCOUNT node of the account credited, with its part of the total. */
function destinationNode(destination: CheckoutDestination, amount: string, currency: string): PaymentNodeInput {
  const { name, externalId, metadata, account } = destination;
  return {
    type: 'ACCOUNT', amount, currency,
    ...(name !== undefined ? { name } : {}), ...(externalId !== undefined ? { externalId } : {}), ...(metadata ? { metadata } : {}),
    account: { ...account! },
  } as PaymentNodeInput;
}

/**
 * The destinations receive what the payer pays, so their amounts (each positive, at the currency's scale) add
 * up to the session's totalAmount. A session's payment credits one account: every destination is an ACCOUNT
 * destination naming that account (one of the client's, ACTIVE, in the session's currency); several split the
 * total into labelled parts (name, externalId, metadata), each within the catalog's ACCOUNT limits, as the
 * payment's destination nodes will be. Anything else is refused (400 naming the destination), never dropped.
 */
function checkDestinations(platform: Platform, input: CreateCheckoutSession, totalAmount: string): string {
  const { currency, destinations } = input;
  let sum = toDecimal(zeroAmount(currency));
  destinations.forEach((destination, n) => {
    const at = `destinations[${n}]`;
    sum = sum.plus(toDecimal(amountIn(`${at}.amount`, destination.amount, currency)));
    if (destination.type !== 'ACCOUNT') {
      throw domainInvalid(`${at}.type: a checkout pays your own accounts only (ACCOUNT destinations); it makes no ${destination.type} payout`);
    }
    if (!destination.account) throw domainInvalid(`${at}.account: required for an ACCOUNT destination`);
    const first = destinations[0]!.account!.accountNumber;
    if (destination.account.accountNumber !== first) {
      throw domainInvalid(`${at}.account.accountNumber: a session's payment credits one account (${first}, named by destinations[0]); `
        + 'destinations may split its amount into parts, not between accounts');
    }
    if (destination.account.currency !== currency) {
      throw domainInvalid(`${at}.account.currency: ${destination.account.currency}; the session is in ${currency}`);
    }
  });
  if (!sum.equals(toDecimal(totalAmount))) {
    throw domainInvalid(`destinations: their amounts add up to ${formatAmount(sum, currency)} ${currency}; they must add up to the `
      + `session's totalAmount, ${totalAmount} ${currency}, what the payer pays`);
  }
  validateNodes(platform.catalog, destinations.map((d) => destinationNode(d, d.amount, currency)), 'destinations', { currency, amount: totalAmount });
  return destinations[0]!.account!.accountNumber;
}

/** The account the destinations credit (see checkDestinations), as the read models have it. */
function checkCreditedAccount(accountNumber: string, account: CreditedAccount | null, currency: string): void {
  if (!account) throw domainNotFound(`account ${accountNumber} not found`);
  if (account.currency !== currency) {
    throw domainInvalid(`destinations[0].account.currency: account ${accountNumber} holds ${account.currency}; the session is in ${currency}`);
  }
  if (account.status !== 'ACTIVE') throw domainPrecondition(`account ${accountNumber} is ${account.status}; it cannot be paid`);
}

/**
 * The destination nodes of a session's payment: the session's destinations, which add up to its total. A session
 * recorded before destinations were held to that (parts of other types or accounts, or amounts that do not add up)
 * pays its first ACCOUNT destination the whole total, as it always did, in one node.
 */
export function paymentDestinations(session: Pick<CheckoutTerms, 'destinations' | 'currency' | 'totalAmount'>): PaymentNodeInput[] {
  const destinations = session.destinations as CheckoutDestination[];
  const first = destinations.find((d) => d.type === 'ACCOUNT' && d.account)!;
  const parts = destinations.every((d) => d.type === 'ACCOUNT' && d.account?.accountNumber === first.account!.accountNumber)
    && destinations.reduce((sum, d) => sum.plus(toDecimal(d.amount)), toDecimal('0')).equals(toDecimal(session.totalAmount));
  return parts
    ? destinations.map((d) => destinationNode(d, formatAmount(d.amount, session.currency), session.currency))
    : [destinationNode(first, session.totalAmount, session.currency)];
}

/**
 * The terms of a session or link, checked: amounts from the items, pay-in methods, the owner (one of the
 * client's identities), the destinations (see checkDestinations), the customer (one of the client's).
 */
async function checkedTerms(platform: Platform, clientId: string, input: CreateCheckoutSession): Promise<CheckoutTerms> {
  const { currency } = input;
  const totals = computeTotals(input.items, currency, input);
  checkAllowedMethods(platform.catalog, input.paymentMethodsAllowed);
  payableConfigs(platform.catalog, currency, totals.totalAmount, input.paymentMethodsAllowed);
  // The owner, the destinations' account and the customer are looked up at once (the first two in one statement
  // batched across creates); a problem is told in that order, as if they had been looked up one after the other.
  let accountNumber: string | null = null;
  let destinationsRefused: unknown = null;
  try {
    accountNumber = checkDestinations(platform, input, totals.totalAmount);
  } catch (error) {
    destinationsRefused = error;
  }
  const customerId = input.customer?.id;
  const [found, customerFound] = await Promise.allSettled([
    platform.reads.checkout.ownerAndAccount({ clientId, identityId: input.owner.identityId, accountNumber }),
    customerId ? customerOfClient(platform, clientId, customerId) : Promise.resolve(true),
  ]);
  if (found.status === 'rejected') throw found.reason;
  if (!found.value.owner) throw domainNotFound(`identity ${input.owner.identityId} not found`);
  if (destinationsRefused !== null) throw destinationsRefused;
  checkCreditedAccount(accountNumber!, found.value.account, currency);
  if (customerFound.status === 'rejected') throw customerFound.reason;
  if (!customerFound.value) throw domainNotFound(`customer ${customerId} not found`);
  const customer = input.customer ? { ...input.customer, ...(input.customer.email ? { email: input.customer.email.toLowerCase() } : {}) } : null;
  return {
    clientId, currency, ...totals, paymentMethodsAllowed: [...input.paymentMethodsAllowed], destinations: input.destinations,
    owner: input.owner, customer, customerRequirements: [...(input.customerRequirements ?? [])],
    successUrl: input.successUrl ?? null, failedUrl: input.failedUrl ?? null, redirectUrl: input.redirectUrl ?? null, duration: input.duration,
  };
}

/** A new session as it was recorded, and the read models catching up with it (handed on to the HTTP edge). */
export interface CreatedSession {
  session: CheckoutSessionCreatedData;
  readModels: Promise<void>;
}

async function openSession(
  wallPlatform: Platform, terms: CheckoutTerms, link: { linkId: string } | null, wallMetadata: EventMetadata, clock: SessionClock,
): Promise<CreatedSession> {
  const sessionId = createdId(wallPlatform.runtime, wallMetadata, 'checkout session');
  const { platform, metadata, clockId } = clock.inherited
    ? { platform: await platformOn(wallPlatform, clock.testClockId), metadata: wallMetadata, clockId: clock.testClockId }
    : await creatingOn(wallPlatform, terms.clientId, clock.testClockId, 'checkout_session', sessionId, wallMetadata);
  const now = platform.runtime.now();
  const duration = link ? Math.min(terms.duration, LINK_SESSION_DURATION_SECONDS) : terms.duration;
  const { events, readModels } = await runCommand(platform, sessionStreamType, sessionStream(sessionId), {
    type: 'CreateSession', tenant: { clientId: terms.clientId },
    session: {
      ...terms, duration, sessionId, paymentLinkId: link?.linkId ?? null, checkoutToken: newToken(),
      status: link ? 'ATTEMPT' : 'ACTIVE',
      paymentConfigs: paymentConfigsFor(platform.catalog, terms.currency, terms.totalAmount, terms.paymentMethodsAllowed),
      expiresAt: new Date(now.getTime() + duration * 1000).toISOString(), createdAt: now.toISOString(),
      ...(clockId ? { testClockId: clockId } : {}),
    },
  }, clockId ? onClockMetadata(metadata, clockId, now) : metadata, { expectNewStream: true });
  // The creation, as this run or the request's first run (the same Idempotency-Key) recorded it.
  const created = events.find((event) => event.type === 'CheckoutSessionCreated');
  if (!created) throw new Error(`checkout session ${sessionId}: its creation recorded no CheckoutSessionCreated`);
  return { session: created.data, readModels };
}

/**
 * The test clock a new session follows: the one its request named (`Test-Clock`: bound to it, and counted), or
 * its link's (`inherited`: it follows the link's clock without counting).
 */
export interface SessionClock {
  testClockId: string | null;
  inherited?: boolean;
}

/** The platform at the time of the session's clock (unchanged when it has none, or the platform is on a clock already). */
async function onSessionClock(platform: Platform, sessionId: string): Promise<Platform> {
  if (isOnAClock(platform)) return platform;
  return platformOn(platform, (await loadSession(platform, sessionId)).session?.testClockId);
}

async function onLinkClock(platform: Platform, linkId: string): Promise<Platform> {
  if (isOnAClock(platform)) return platform;
  return platformOn(platform, (await loadLink(platform, linkId)).link?.testClockId);
}

export async function createSession(
  platform: Platform, clientId: string, input: CreateCheckoutSession, metadata: EventMetadata, testClockId: string | null = null,
): Promise<CreatedSession> {
  return openSession(platform, await checkedTerms(platform, clientId, input), null, metadata, { testClockId });
}

/** A new session (ATTEMPT) from an active link; an inactive one is refused (422), a deleted one is not found. */
export async function openSessionFromLink(
  platform: Platform, tenant: Tenant, linkId: string, metadata: EventMetadata,
  /** `Test-Clock` of the request (binds the session to it); without it, the session follows the link's clock. */
  testClockId: string | null = null,
): Promise<CreatedSession> {
  const state = await loadLink(platform, linkId);
  if (!state.link || state.deleted || !visibleTo(tenant, state.link.clientId)) throw domainNotFound('payment link not found');
  if (!linkActive(state, (await platformOn(platform, state.link.testClockId)).runtime.now())) {
    throw domainPrecondition(`payment link ${linkId} is inactive; activate it first`);
  }
  const { linkId: _linkId, checkoutToken: _token, activeUntil: _until, createdAt: _created, testClockId: linkClock, ...terms } = state.link;
  const clock: SessionClock = testClockId ? { testClockId } : { testClockId: linkClock ?? null, inherited: true };
  return openSession(platform, terms, { linkId }, metadata, clock);
}

export async function createLink(
  wallPlatform: Platform, clientId: string, input: CreateCheckoutSession, wallMetadata: EventMetadata, testClockId: string | null = null,
): Promise<{ linkId: string; readModels: Promise<void> }> {
  const linkId = createdId(wallPlatform.runtime, wallMetadata, 'payment link');
  const { platform, metadata, clockId } = await creatingOn(wallPlatform, clientId, testClockId, 'payment_link', linkId, wallMetadata);
  const terms = await checkedTerms(platform, clientId, input);
  const now = platform.runtime.now();
  const { readModels } = await runCommand(platform, linkStreamType, linkStream(linkId), {
    type: 'CreateLink', tenant: { clientId },
    link: {
      ...terms, linkId, checkoutToken: newToken(), activeUntil: new Date(now.getTime() + terms.duration * 1000).toISOString(),
      createdAt: now.toISOString(), ...(clockId ? { testClockId: clockId } : {}),
    },
  }, metadata, { expectNewStream: true });
  return { linkId, readModels };
}

export async function activateLink(platform: Platform, tenant: Tenant, linkId: string, metadata: EventMetadata): Promise<void> {
  const on = await onLinkClock(platform, linkId);
  await runCommand(on, linkStreamType, linkStream(linkId), { type: 'Activate', tenant, now: on.runtime.now() }, metadata);
}

export async function deleteLink(platform: Platform, tenant: Tenant, linkId: string, metadata: EventMetadata): Promise<void> {
  const on = await onLinkClock(platform, linkId);
  await runCommand(on, linkStreamType, linkStream(linkId), { type: 'Delete', tenant, now: on.runtime.now() }, metadata);
}


/** DELETE: an open session becomes EXPIRED at once; an expired one stays so; a paid or final one is refused (422). */
export async function expireSession(platform: Platform, tenant: Tenant, sessionId: string, reason: 'DELETED' | 'EXPIRES_AT', metadata: EventMetadata): Promise<void> {
  const on = await onSessionClock(platform, sessionId);
  await runCommand(on, sessionStreamType, sessionStream(sessionId), { type: 'Expire', tenant, reason, now: on.runtime.now() }, metadata);
}

export async function refreshSession(platform: Platform, tenant: Tenant, sessionId: string, metadata: EventMetadata): Promise<void> {
  const on = await onSessionClock(platform, sessionId);
  await runCommand(on, sessionStreamType, sessionStream(sessionId), { type: 'Refresh', tenant, now: on.runtime.now() }, metadata);
}

/** The payer picked a method on the page: an ATTEMPT session becomes ACTIVE (an ACTIVE one stays so). */
export async function chooseSessionMethod(platform: Platform, sessionId: string, method: string, metadata: EventMetadata): Promise<void> {
  const on = await onSessionClock(platform, sessionId);
  await runCommand(on, sessionStreamType, sessionStream(sessionId), { type: 'ChooseMethod', tenant: 'any', method, now: on.runtime.now() }, metadata);
}

/** The session's move to PROCESSING_PAYMENT for a payment created for it (the reactor's; the pay call reserved it already). */
export async function startSessionPayment(
  wallPlatform: Platform, sessionId: string, paymentId: string, method: string | null, metadata: EventMetadata,
): Promise<void> {
  const platform = await onSessionClock(wallPlatform, sessionId);
  const eventId = deterministicId('checkout-session-payment-started', sessionId, paymentId);
  await runCommand(platform, sessionStreamType, sessionStream(sessionId), { type: 'StartPayment', tenant: 'any', paymentId, method, eventId, now: platform.runtime.now() }, metadata);
}

export async function endSessionPayment(
  wallPlatform: Platform, sessionId: string, paymentId: string, ending: PaymentOutcome, metadata: EventMetadata,
): Promise<void> {
  const platform = await onSessionClock(wallPlatform, sessionId);
  const eventId = deterministicId('checkout-session-payment-ended', sessionId, paymentId);
  await runCommand(platform, sessionStreamType, sessionStream(sessionId), { type: 'EndPayment', tenant: 'any', paymentId, ending, eventId, now: platform.runtime.now() }, metadata);
}

/**
 * What the payer pays with `method` in `currency`: the session's payment config for that currency, where the
 * method must be enabled (400 naming the origin's currency otherwise). Null in the session's own currency (no
 * exchange); otherwise the config's currency and purchaseAmount, the amount the page showed, which the payment
 * takes as its quote (its product is the config's, from the catalog's rate).
 */
function chosenConfig(
  session: Pick<CheckoutSessionCreatedData, 'currency' | 'paymentConfigs'>, method: string, currency: string,
): { currency: string; purchaseAmount: string } | null {
  const config = session.paymentConfigs.find((c) => c.currency === currency);
  const enabled = config?.paymentMethods.find((m) => m.type === method && m.enabled);
  if (!config || !enabled) {
    const offered = session.paymentConfigs.filter((c) => c.paymentMethods.some((m) => m.type === method && m.enabled)).map((c) => c.currency);
    throw domainInvalid(`origins[0].currency: the session does not take ${method} in ${currency} `
      + `(${offered.length > 0 ? `it does in ${offered.join(', ')}` : `${method} is enabled in none of its paymentConfigs`})`);
  }
  return currency === session.currency ? null : { currency, purchaseAmount: enabled.purchaseAmount };
}

type PayerFields = NonNullable<PayCheckoutSession['customer']>;
const PAYER_FIELDS = ['firstName', 'lastName', 'email', 'phoneNumber', 'phoneNumberPrefix', 'documentType', 'documentNumber'] as const;

/** The customer requirements the payer's fields (over the session's customer) leave unmet. */
export function missingRequirements(requirements: readonly string[], customer: PayerFields): string[] {
  return requirements.filter((field) => {
    const value = (customer as Record<string, unknown>)[field];
    if (field === 'address') return typeof value !== 'object' || value === null || Object.keys(value).length === 0;
    return typeof value !== 'string' || value.trim() === '';
  });
}

/** Who typed the payer's fields: the client (the API route, authenticated) or an anonymous payer (the hosted page). */
export type PayerSource = 'client' | 'payer';

/**
 * Whether the payer's fields are only the payer's word: fields sent from the hosted page, unless they keep the
 * document number of the customer the client set on the session. Those are never matched to an existing
 * customer, so typing a known customer's document number neither borrows its operation level (and skips a
 * review) nor books the payment to it.
 */
function selfDeclared(source: PayerSource, sessionCustomer: PayerFields, customer: PayerFields): boolean {
  if (source === 'client' || customer.id) return false;
  return !(sessionCustomer.documentNumber !== undefined && customer.documentNumber === sessionCustomer.documentNumber);
}

/** The payment's payer: the session's customer by id, or the payer's fields (matched or created by the payments context). */
function payerOf(customer: PayerFields): Pick<CreatePayment, 'customerId' | 'customer'> {
  if (customer.id) return { customerId: customer.id };
  if (!customer.documentNumber && !customer.email) return {};
  const fields: Record<string, string> = {};
  for (const field of PAYER_FIELDS) if (customer[field] !== undefined) fields[field] = customer[field]!;
  if (customer.address?.country) fields.country = customer.address.country;
  return { customer: fields };
}

/**
 * Pays a session: its one payment, to the account its destinations name (carrying them as its destination
 * nodes, whose amounts add up to the total), for its total, with the payer's method (one of
 * paymentMethodsAllowed) and fields (meeting customerRequirements). The session's stream decides first: the
 * session is reserved for the payment (PROCESSING_PAYMENT) before the payment is created, so of a pay and a
 * DELETE or an expiry racing, or of two pays, exactly one goes through (the others are refused, 422) and an
 * expired session never has a payment. When the payment cannot be created (its input refused), the reservation
 * is released and the session is open again. The API route and the hosted page both pay through here.
 */
export async function paySession(
  wallPlatform: Platform, tenant: Tenant, sessionId: string, input: PayCheckoutSession, metadata: EventMetadata, source: PayerSource = 'client',
): Promise<{ row: PaymentView; readModels: Promise<void> }> {
  const state = await loadSession(wallPlatform, sessionId);
  if (!state.session || !visibleTo(tenant, state.session.clientId)) throw domainNotFound('checkout session not found');
  // A session bound to a test clock is paid at its clock's time, and its payment follows that clock.
  const platform = await platformOn(wallPlatform, state.session.testClockId);
  let session: CheckoutSessionCreatedData;
  try {
    session = assertPayable(state, platform.runtime.now());
  } catch (error) {
    // Not payable because this very request reserved it before (its first answer never arrived): go on, and
    // the reservation and the payment answer as recorded.
    if (!(error instanceof DomainError && await ranBefore(platform.storage.store, metadata, sessionStream(sessionId), 'ReservePayment'))) throw error;
    session = state.session;
  }
  const allowed = session.paymentMethodsAllowed.join(', ');
  // The payment is made with one of the session's methods, named by the caller. A payment without an origin
  // would name no method, so paymentMethodsAllowed would not hold for it, and the service cannot choose one on
  // the payer's behalf: every pay-in method of the catalog needs the payer's own fields (a card, a bank, a key).
  const origin = input.origins?.[0];
  if (!origin) throw domainInvalid(`origins: required: the payer's method, one of paymentMethodsAllowed (${allowed}), with its fields`);
  if (!session.paymentMethodsAllowed.includes(origin.type)) {
    throw domainInvalid(`origins[0].type: ${origin.type} is not allowed here (paymentMethodsAllowed: ${allowed})`);
  }
  const sessionCustomer = (session.customer ?? {}) as PayerFields;
  const customer: PayerFields = { ...sessionCustomer, ...(input.customer ?? {}) };
  const missing = missingRequirements(session.customerRequirements, customer);
  if (missing.length > 0) throw domainInvalid(`customer: missing required fields ${missing.join(', ')}`);
  const destinations = paymentDestinations(session);
  const credited = (destinations[0]!.account as { accountNumber: string }).accountNumber;
  const account = await platform.reads.checkout.account(session.clientId, credited);
  if (!account) throw domainPrecondition(`account ${credited} of the session no longer exists`);
  const purchase = chosenConfig(session, origin.type, origin.currency ?? session.currency);
  const clientId = session.clientId;
  const externalId = `checkout-${sessionId}`;
  const paymentId = paymentIdFor(clientId, externalId);
  const reserved = await runCommand(platform, sessionStreamType, sessionStream(sessionId),
    { type: 'ReservePayment', tenant: 'any', paymentId, method: origin.type, now: platform.runtime.now() }, metadata);
  // A process that dies here leaves the session reserved with no payment: the release job gives it back.
  await failpoint('checkout.afterReservation');
  let payment: { row: PaymentView; readModels: Promise<void> };
  try {
    payment = await createPayment(platform, clientId, {
      externalId, identityId: account.identity_id, accountNumber: account.account_number,
      totalAmount: session.totalAmount, currency: session.currency as CreatePayment['currency'], type: 'PURCHASE',
      description: input.description ?? `Checkout session ${sessionId}`,
      ...(purchase ? { purchaseCurrency: purchase.currency as CreatePayment['purchaseCurrency'], purchaseAmount: purchase.purchaseAmount } : {}),
      origins: [origin],
      destinations,
      ...payerOf(customer),
    }, metadata, {
      checkoutSessionId: sessionId, selfDeclaredPayer: selfDeclared(source, sessionCustomer, customer),
      clock: { testClockId: session.testClockId ?? null, inherited: true },
    });
  } catch (error) {
    await releaseUnlessCreated(platform, sessionId, paymentId, error, metadata);
    throw error;
  }
  return { row: payment.row, readModels: Promise.all([reserved.readModels, payment.readModels]).then(() => undefined) };
}

/**
 * The payment a session was reserved for was not created: the session is open again. Only this call holds the
 * reservation (a second pay is refused while it stands), so no one else creates that payment meanwhile; the
 * payment's stream is read first all the same, in case the create was recorded before it failed.
 */
async function releaseUnlessCreated(platform: Platform, sessionId: string, paymentId: string, error: unknown, metadata: EventMetadata): Promise<void> {
  if ((await loadPayment(platform, paymentId)).payment) return;
  const reason = error instanceof Error ? error.message.slice(0, MAX_RELEASE_REASON_CHARS) : 'the payment could not be created';
  await runCommand(platform, sessionStreamType, sessionStream(sessionId), { type: 'ReleasePayment', tenant: 'any', paymentId, reason, now: platform.runtime.now() }, metadata);
}

/**
 * The release job's, for a session reserved for `paymentId` at least the reservation timeout ago (the read model's
 * word, checked again by the session's stream): when no such payment exists, the session is given back (ACTIVE, or
 * EXPIRED when its time is up). A payment created after this read still takes the session (the reactor's
 * StartPayment). Answers whether the session was released now.
 */
export async function releaseStalledReservation(platform: Platform, sessionId: string, paymentId: string, metadata: EventMetadata): Promise<boolean> {
  if ((await loadPayment(platform, paymentId)).payment) return false;
  // The event that reserved the session for this payment, the latest (a session's streams hold a few dozen events).
  const recent = await platform.storage.store.readStream(sessionStream(sessionId), { direction: 'backwards', limit: RESERVATION_LOOKBACK_EVENTS });
  const reservation = recordedAllAs<StoredEventData>(recent).find((e) => e.type === 'CheckoutSessionPaymentStarted' && e.data.paymentId === paymentId);
  if (!reservation) return false;
  const session = (await loadSession(platform, sessionId)).session;
  // Released to EXPIRED, or not, at the session's own time: its test clock's when it is bound to one.
  const on = await platformOn(platform, session?.testClockId);
  const { events } = await runCommand(platform, sessionStreamType, sessionStream(sessionId), {
    type: 'ReleaseStalledPayment', tenant: 'any', paymentId, reservationRecordedAt: reservation.recordedAt.toISOString(),
    timeoutSeconds: platform.config.checkoutReservationTimeoutSeconds, wallNow: platform.runtime.now(), now: on.runtime.now(),
  }, metadata);
  return events.length > 0;
}

/** How a payment's end moves its session, or null when it has not ended. */
export function outcomeOf(eventType: string, to: SessionStatus | string): PaymentOutcome | null {
  if (eventType === 'PaymentSettled') return { outcome: 'SETTLED' };
  if (eventType === 'PaymentFailed' || eventType === 'PaymentExpired' || eventType === 'PaymentUnsettled') return { outcome: 'FAILED', reason: to };
  return null;
}
