/**
 * Commands on deposits: the provider's notification (matched into an account, or recorded unassigned), the
 * client's assignment, and the expiry. The assignment is a process manager across two streams, copied from the
 * payments' settlement: the deposit records the request (its stream decides "once, not expired"), the account
 * answers the credit (its stream decides "ACTIVE", once per deposit, with an id derived from both), the deposit
 * records the answer, and a companion child holds the difference. Every step is safe to run again; the
 * assignment reactor (./reactor.ts) re-runs the steps for a process that stopped in between.
 */
import type { DepositNotification } from '../../schemas/deposits.ts';
import { runCommand, streamState } from '../eventstore/streams.ts';
import type { EventMetadata, RecordedEvent } from '../eventstore/port.ts';
import type { CommandOptions } from '../eventstore/commandHandler.ts';
import { recordedAs } from '../eventstore/typedEvents.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import type { Position } from '../eventstore/position.ts';
import { DomainError, domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { clientTenant } from '../domain/tenancy.ts';
import { AmountError, formatAmount, parseAmount, toDecimal, zeroAmount } from '../domain/money.ts';
import type { Platform } from '../platform.ts';
import { accountNumberStreamType, accountStreamType, settlementAnswerOf, type AccountState } from '../accounts/decider.ts';
import { accountNumberStream, accountStream } from '../accounts/events.ts';
import { creditSettlement } from '../accounts/handlers.ts';
import { clientStreamType } from '../clients/decider.ts';
import { clientStream } from '../clients/events.ts';
import { createCustomer, customerHoldingDocumentNumber, holderIdInReadModels } from '../customers/handlers.ts';
import { paymentIdFor, paymentStream } from '../payments/events.ts';
import { paymentStreamType } from '../payments/stream.ts';
import { refusingOtherKinds, settleReceived } from '../payments/handlers.ts';
import { issueRefundChild } from '../payments/refunds/handlers.ts';
import { creatingOn } from '../testClocks/binding.ts';
import { platformOn } from '../testClocks/time.ts';
import {
  companionOpen, expectedIn, type CompanionState, type DepositCommand, type DepositState,
} from './decider.ts';
import {
  companionExpiresAt, companionIdFor, depositExternalId, refundIdFor, type DepositCompanionCreatedData, type DepositReceivedData,
  type DepositStreamEvent, type Originator,
} from './events.ts';
import type { Tenant } from '../domain/tenancy.ts';

/** How long a deposit waits for assignment before it expires (interface, Limits: 48 hours from creation). */
export const UNASSIGNED_LIFETIME_MS = 48 * 60 * 60 * 1000;

/** The event types a deposit's steps may append, on its stream, its account's and its companion's. */
const DEPOSIT_EVENT_TYPES = [
  'DepositReceived', 'PurchasePendingAssignment', 'DepositAssignmentRequested', 'DepositAssignmentRefused', 'DepositAssigned',
  'PurchaseUnderpaid', 'PurchaseOverpaid', 'PaymentSettled', 'PaymentExpired', 'DepositRefundDue', 'DepositCompanionCreated',
  'DepositCompanionPaid', 'DepositCompanionCancelled', 'AccountCredited', 'AccountCreditRefused', 'RefundCreated',
] as const;
/** What a matched deposit records: a payment's creation, receipt and settlement. */
const MATCHED_EVENT_TYPES = ['PaymentCreated', 'PaymentPending', 'PaymentReceived', 'PaymentSettled', 'PaymentUnsettled', 'AccountCredited', 'AccountCreditRefused'] as const;

export async function loadDeposit(platform: Platform, paymentId: string): Promise<DepositState> {
  return (await streamState(platform, paymentStreamType, paymentStream(paymentId))).deposit;
}

export async function loadCompanion(platform: Platform, paymentId: string): Promise<CompanionState> {
  return (await streamState(platform, paymentStreamType, paymentStream(paymentId))).companion;
}

/** The lowest `minAmount` of the catalog's pay-in methods for `currency`: a deposit below it is refused. */
export function minimumDeposit(platform: Platform, currency: string): string {
  const minimums = platform.catalog.methodsFor(currency, 'PAY_IN').map((method) => method.minAmount[currency]!);
  if (minimums.length === 0) throw domainInvalid(`currency: no pay-in method of the catalog moves ${currency}`);
  return minimums.reduce((low, next) => (toDecimal(next).lessThan(toDecimal(low)) ? next : low));
}

/**
 * The highest `maxAmount` of the catalog's pay-in methods for `currency`: no method moves more in one payment, so a
 * deposit above it (or an expectedAmount above it) is refused; it also keeps sums of deposits within the amount
 * pattern's 18 integer digits.
 */
export function maximumDeposit(platform: Platform, currency: string): string {
  const maximums = platform.catalog.methodsFor(currency, 'PAY_IN').map((method) => method.maxAmount[currency]!);
  if (maximums.length === 0) throw domainInvalid(`currency: no pay-in method of the catalog moves ${currency}`);
  return maximums.reduce((high, next) => (toDecimal(next).greaterThan(toDecimal(high)) ? next : high));
}

function amountIn(text: string, currency: string): string {
  try {
    return formatAmount(parseAmount(text, currency, { positive: true }), currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`amount: ${error.message}`);
    throw error;
  }
}

/** The account an account number names, as the number's reservation and the account's own stream tell. */
async function accountByNumber(platform: Platform, accountNumber: string): Promise<AccountState | null> {
  const { holder: accountId } = await streamState(platform, accountNumberStreamType, accountNumberStream(accountNumber));
  if (accountId === null) return null;
  const state = await streamState(platform, accountStreamType, accountStream(accountId));
  return state.account ? state : null;
}

/** A read started ahead of its use: one never awaited (an earlier check refused the request) fails unheard. */
function started<T>(read: Promise<T>): Promise<T> {
  read.catch(() => undefined);
  return read;
}

/** Creations of the originator as a customer tried, when another request takes its document number first. */
const MAX_ORIGINATOR_ATTEMPTS = 3;

/** The originator as a customer of the client: the one holding its document number, else a new one (autoCreated). */
async function originatorCustomer(
  platform: Platform, clientId: string, originator: Originator, metadata: EventMetadata,
  /** The holder of the originator's number as read a moment ago: the first attempt's. */
  firstLook: Promise<string | null>,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const holder = await (attempt === 1 ? firstLook : holderIdInReadModels(platform, clientId, originator.documentNumber));
    if (holder) return holder;
    try {
      return await createCustomer(platform, clientId, {
        firstName: originator.firstName, documentNumber: originator.documentNumber,
        ...(originator.lastName ? { lastName: originator.lastName } : {}),
        ...(originator.documentType ? { documentType: originator.documentType as never } : {}),
      }, metadata, true);
    } catch (error) {
      const numberTaken = error instanceof DomainError && error.kind === 'alreadyExists';
      if (!numberTaken || attempt >= MAX_ORIGINATOR_ATTEMPTS) throw error;
    }
  }
}

export interface ReceivedDeposit {
  paymentId: string;
  /** MATCHED: a payment into the account the reference named; UNASSIGNED: waiting in suspense. */
  outcome: 'MATCHED' | 'UNASSIGNED';
  /** False for a repeated notification (nothing changed). */
  recorded: boolean;
  /** The deposit's receipt when this notification recorded it awaiting assignment: what its answer is made of. */
  received?: Extract<DepositStreamEvent, { type: 'DepositReceived' }>;
}

/**
 * What the stream of `paymentId` already holds: a matched payment, an unassigned deposit, or nothing. A repeat
 * of the notification must be the same deposit: one that says otherwise (amount, currency, reference,
 * originator) is refused (409), and the first one stands.
 */
async function existingDeposit(
  platform: Platform, paymentId: string, externalId: string, input: DepositNotification, totalAmount: string,
  /** The stream's first event(s) when the caller has just read them. */
  read?: RecordedEvent[],
): Promise<ReceivedDeposit | null> {
  const [stored] = read ?? await platform.storage.store.readStream(paymentStream(paymentId), { limit: 1 });
  if (!stored) return null;
  const first = recordedAs<StoredEventData>(stored);
  if (first.type === 'DepositReceived') {
    refuseDifferences(input, unassignedDifferences(first.data, input, totalAmount));
    return { paymentId, outcome: 'UNASSIGNED', recorded: false };
  }
  // A matched deposit: a LOCAL_DEPOSIT the provider's notification created.
  if (first.type === 'PaymentCreated' && isMatchedDeposit(first.data, first.metadata.actor)) {
    refuseDifferences(input, await matchedDifferences(platform, first.data, input, totalAmount));
    return { paymentId, outcome: 'MATCHED', recorded: false };
  }
  // A payment the client created itself with this externalId: the notification must not touch it.
  throw domainPrecondition(`a payment of the client already has externalId ${JSON.stringify(externalId)}; the deposit is not recorded`);
}

/** What a matched deposit's PaymentCreated keeps of its notification. */
type MatchedDepositData = { clientId: string; totalAmount: string; currency: string; accountNumber: string; customerId: string | null };

function refuseDifferences(input: DepositNotification, fields: string[]): void {
  if (fields.length === 0) return;
  throw domainConflict(`depositId ${input.depositId} was notified before with another ${fields.join(', ')}; `
    + 'the first notification stands and this one is not recorded');
}

function unassignedDifferences(first: DepositReceivedData, input: DepositNotification, totalAmount: string): string[] {
  const sent = input.originator;
  const was = first.originator;
  return [
    ...(first.currency !== input.currency ? ['currency'] : first.totalAmount !== totalAmount ? ['amount'] : []),
    ...(first.reference !== input.reference ? ['reference'] : []),
    ...(['firstName', 'lastName', 'documentType', 'documentNumber'] as const)
      .filter((field) => (sent[field] ?? null) !== was[field]).map((field) => `originator.${field}`),
  ];
}

/**
 * A matched deposit keeps its amount, currency, account (the reference) and the originator as a customer (matched
 * on its document number): a repeat naming another document number names another customer.
 */
async function matchedDifferences(
  platform: Platform, first: MatchedDepositData, input: DepositNotification, totalAmount: string,
): Promise<string[]> {
  const differences = [
    ...(first.currency !== input.currency ? ['currency'] : first.totalAmount !== totalAmount ? ['amount'] : []),
    ...(first.accountNumber !== input.reference ? ['reference'] : []),
  ];
  const holder = await customerHoldingDocumentNumber(platform, first.clientId, input.originator.documentNumber);
  if ((holder?.customerId ?? null) !== first.customerId) differences.push('originator.documentNumber');
  return differences;
}

/**
 * A repeated notification's answer, once the read models show the deposit as its stream has it now: the first
 * notification, sent at the same moment, may still be waiting for them.
 */
async function repeated(platform: Platform, deposit: ReceivedDeposit): Promise<ReceivedDeposit> {
  await depositInReadModels(platform, deposit.paymentId);
  return deposit;
}

/** Waits (bounded) until the read models show the deposit as its stream has it now, whoever appended last. */
async function depositInReadModels(platform: Platform, paymentId: string): Promise<void> {
  const [last] = await platform.storage.store.readStream(paymentStream(paymentId), { direction: 'backwards', limit: 1 });
  // Every read model of the deposit's events: the last one may be one no read model handles.
  if (last) await platform.readYourWrites(last.position, [...DEPOSIT_EVENT_TYPES, ...MATCHED_EVENT_TYPES]);
}

/**
 * The provider's deposit notification (signature already checked). A reference naming an ACTIVE account of
 * the client, in the deposit's currency, pays that account: a LOCAL_DEPOSIT payment received and settled
 * through the account's stream (which may still refuse it: UNSETTLED, funds in suspense). Any other reference
 * records an unassigned deposit, its funds in suspense for 48 hours. A repeated notification changes nothing.
 */
export async function receiveDeposit(
  wallPlatform: Platform, input: DepositNotification, wallMetadata: EventMetadata,
  /** The test clock the new deposit is bound to (the sandbox's simulated deposit), or none. */
  testClockId: string | null = null,
): Promise<ReceivedDeposit> {
  let platform = wallPlatform;
  let metadata = wallMetadata;
  const { clientId, currency } = input;
  const externalId = depositExternalId(platform.provider.name, input.depositId);
  const paymentId = paymentIdFor(clientId, externalId);
  // What the notification is checked against, read at once (the store sends reads made together in one statement),
  // each looked at in its turn below. A refused or repeated notification reads the account and the originator's
  // number for nothing (their results are dropped); a new one, the common case, saves three round trips.
  const clientRead = started(streamState(platform, clientStreamType, clientStream(clientId)));
  const firstRead = started(platform.storage.store.readStream(paymentStream(paymentId), { limit: 1 }));
  const accountRead = started(accountByNumber(platform, input.reference));
  const holderRead = started(holderIdInReadModels(platform, clientId, input.originator.documentNumber));
  const client = await clientRead;
  if (client.status !== 'active') throw domainNotFound(`client ${clientId} not found`);
  const totalAmount = amountIn(input.amount, currency);
  const minimum = minimumDeposit(platform, currency);
  if (toDecimal(totalAmount).lessThan(toDecimal(minimum))) {
    throw domainPrecondition(`amount: ${totalAmount} ${currency} is below the minimum deposit of ${minimum} ${currency}`);
  }
  const maximum = maximumDeposit(platform, currency);
  if (toDecimal(totalAmount).greaterThan(toDecimal(maximum))) {
    throw domainPrecondition(`amount: ${totalAmount} ${currency} is above the maximum deposit of ${maximum} ${currency}`);
  }
  const known = await existingDeposit(platform, paymentId, externalId, input, totalAmount, await firstRead);
  if (known?.outcome === 'MATCHED') await completeMatched(platform, paymentId, totalAmount, metadata);
  if (known) return repeated(platform, known);
  // Bound before anything is created: a clock that is not the client's is a 404 with nothing recorded.
  ({ platform, metadata } = await creatingOn(platform, clientId, testClockId, 'deposit', paymentId, metadata));
  const clock = testClockId ? { testClockId } : {};

  const originator: Originator = {
    firstName: input.originator.firstName, lastName: input.originator.lastName ?? null,
    documentType: input.originator.documentType ?? null, documentNumber: input.originator.documentNumber,
  };
  const account = await accountRead;
  const matches = account !== null && account.account!.clientId === clientId && !account.closed && account.status === 'ACTIVE'
    && account.account!.currency === currency;
  const customerId = await originatorCustomer(platform, clientId, originator, metadata, holderRead);
  if (matches) {
    const { accountId, accountNumber, identityId } = account.account!;
    let recorded = true;
    try {
      // Its read-model wait runs beside the flow (bounded, never rejects), which waits for all its steps at its end.
      await runCommand(platform, paymentStreamType, paymentStream(paymentId), {
        type: 'CreatePayment', tenant: { clientId }, now: platform.runtime.now(), screening: { outcome: 'CLEAR' },
        payment: {
          paymentId, clientId, externalId, identityId, identityExternalId: null, identityEmail: null, accountId, accountNumber,
          totalAmount, currency, description: `Deposit ${input.depositId} to ${input.reference}`, product: null, type: 'LOCAL_DEPOSIT',
          purchaseAmount: null, purchaseCurrency: null, exchange: null, origins: [], destinations: [], fees: [], feeAmount: zeroAmount(currency),
          flow: 'PUSH', method: null, settlement: 'INSTANT', expiresAt: null, customerId, checkoutSessionId: null, ...clock,
        },
      }, metadata, { expectNewStream: true });
    } catch (error) {
      // A notification sent twice at once: the other one recorded it (or a payment of the client took the externalId).
      if (!(error instanceof DomainError && error.kind === 'alreadyExists')) throw error;
      recorded = false;
      await existingDeposit(platform, paymentId, externalId, input, totalAmount);
    }
    await completeMatched(platform, paymentId, totalAmount, metadata);
    const answer = { paymentId, outcome: 'MATCHED', recorded } as const;
    return recorded ? answer : repeated(platform, answer);
  }
  const { events, position } = await runCommand(platform, paymentStreamType, paymentStream(paymentId), {
    type: 'RecordDeposit', tenant: { clientId }, now: platform.runtime.now(), lifetimeMs: UNASSIGNED_LIFETIME_MS,
    deposit: { paymentId, clientId, externalId, totalAmount, currency, provider: platform.provider.name, providerDepositId: input.depositId,
      reference: input.reference, originator, customerId, ...clock },
  }, metadata, { expectNewStream: true });
  await platform.readYourWrites(position, DEPOSIT_EVENT_TYPES);
  if (events.length === 0) {
    const other = (await existingDeposit(platform, paymentId, externalId, input, totalAmount))!;
    if (other.outcome === 'MATCHED') await completeMatched(platform, paymentId, totalAmount, metadata);
    return repeated(platform, other);
  }
  const received = events.find((event) => event.type === 'DepositReceived');
  return { paymentId, outcome: 'UNASSIGNED', recorded: true, ...(received ? { received } : {}) };
}

/** A matched deposit's payment, received (the funds are here) and settled into its account; again changes nothing. */
async function completeMatched(platform: Platform, paymentId: string, totalAmount: string, metadata: EventMetadata): Promise<void> {
  await platform.readYourWrites(await finishMatched(platform, paymentId, totalAmount, metadata), MATCHED_EVENT_TYPES);
}

/**
 * The steps of a matched deposit after its payment's creation: its receipt (the provider's notification is the word
 * that the funds arrived) and its settlement. Also the deposits' reactor's, for a process that stopped after the
 * creation. Answers the position of the last event appended, or null.
 */
export async function finishMatched(platform: Platform, paymentId: string, totalAmount: string, metadata: EventMetadata): Promise<Position | null> {
  const received = await runCommand(platform, paymentStreamType, paymentStream(paymentId),
    { type: 'Receive', tenant: 'any', receivedAmount: totalAmount, now: platform.runtime.now() }, metadata)
    .catch((error: unknown) => {
      // Received before (a repeated notification, the reactor): only the settlement may be left to do.
      if (error instanceof DomainError && error.kind === 'failedPrecondition') return null;
      throw error;
    });
  return (await settleReceived(platform, paymentId, null, metadata)) ?? received?.position ?? null;
}

/** Whether a recorded PaymentCreated is a matched deposit's: a LOCAL_DEPOSIT the provider's notification created. */
export function isMatchedDeposit(data: { type: string }, actor: unknown): boolean {
  return data.type === 'LOCAL_DEPOSIT' && actor === 'provider';
}

/**
 * Assigns an unassigned deposit of the client to one of its accounts. The account is read from its own stream:
 * another client's account is not found, one of another currency refused, and one that is not ACTIVE right now
 * refused before anything is recorded; an account blocked meanwhile refuses the credit itself (422, the deposit
 * waits again). Answers once the assignment is decided, with the read models caught up.
 */
export async function assignDeposit(
  wallPlatform: Platform, clientId: string, paymentId: string, input: { accountId: string; expectedAmount?: string; companionId?: string },
  metadata: EventMetadata,
): Promise<void> {
  const tenant = clientTenant(clientId);
  const deposit = await loadDeposit(wallPlatform, paymentId);
  // Whether it expired is judged at its clock's time, when it is bound to one.
  const platform = await platformOn(wallPlatform, deposit.deposit?.testClockId);
  if (!deposit.deposit || deposit.deposit.clientId !== clientId) {
    // A payment of the client that is no deposit (a purchase, a matched deposit, a companion, a refund): not this.
    return refusingOtherKinds(platform, tenant, paymentId, 'only a deposit awaiting assignment can be assigned',
      () => Promise.reject(domainNotFound('payment not found')));
  }
  if (input.expectedAmount !== undefined) {
    const expected = expectedIn(input.expectedAmount, deposit.deposit.currency);
    const maximum = maximumDeposit(platform, deposit.deposit.currency);
    if (toDecimal(expected).greaterThan(toDecimal(maximum))) {
      throw domainInvalid(`expectedAmount: ${expected} ${deposit.deposit.currency} is above the maximum deposit of ${maximum} ${deposit.deposit.currency}`);
    }
  }
  const companion = input.companionId === undefined ? null
    : await payableCompanion(wallPlatform, clientId, input.companionId, deposit.deposit, input.accountId);
  const account = await streamState(platform, accountStreamType, accountStream(input.accountId));
  if (!account.account || account.account.clientId !== clientId || account.closed) throw domainNotFound(`account ${input.accountId} not found`);
  const { currency } = deposit.deposit;
  if (account.account.currency !== currency) {
    throw domainPrecondition(`account ${input.accountId} holds ${account.account.currency}; the deposit is in ${currency}`);
  }
  if (account.status !== 'ACTIVE') throw domainPrecondition(`account ${input.accountId} is ${account.status}; it cannot receive the deposit`);
  const earlier = settlementAnswerOf(account, paymentId);
  if (earlier?.outcome === 'REFUSED') {
    // The account answers once per deposit, and it refused this one while it was not ACTIVE.
    throw domainPrecondition(`account ${input.accountId} refused this deposit when it was ${earlier.data.status}; assign it to another account`);
  }
  await runCommand(platform, paymentStreamType, paymentStream(paymentId), {
    type: 'RequestAssignment', tenant, now: platform.runtime.now(),
    // Paying a companion, the deposit reconciles against the amount still due unless told otherwise.
    expectedAmount: input.expectedAmount ?? companion?.totalAmount ?? null, companionId: companion?.paymentId ?? null,
    target: { accountId: account.account.accountId, accountNumber: account.account.accountNumber, identityId: account.account.identityId },
  }, metadata);
  const position = await finishAssignment(platform, paymentId, metadata);
  await platform.readYourWrites(position, DEPOSIT_EVENT_TYPES);
  // The reactor may have recorded the outcome first (then this process appended nothing to wait for).
  await depositInReadModels(platform, paymentId);
  const after = await loadDeposit(platform, paymentId);
  if (after.status !== 'SETTLED' || after.assigned?.accountId !== input.accountId) {
    const refusal = settlementAnswerOf(await streamState(platform, accountStreamType, accountStream(input.accountId)), paymentId);
    const status = refusal?.outcome === 'REFUSED' ? refusal.data.status : 'not ACTIVE';
    throw domainPrecondition(`account ${input.accountId} is ${status}; it cannot receive the deposit`);
  }
}

/**
 * The companion a deposit of the client is to pay, read from its own stream: the amount still due of another deposit
 * (UNDERPAID, CREATED, not past its expiresAt), in the deposit's currency, owed to `accountId`. Another client's (or
 * none) is not found; any other payment, or a companion that cannot be paid now, is refused naming why (422).
 */
async function payableCompanion(
  platform: Platform, clientId: string, companionId: string, deposit: DepositReceivedData, accountId: string,
): Promise<DepositCompanionCreatedData> {
  const tenant = clientTenant(clientId);
  const rule = 'only a companion holding the amount still due of a deposit (UNDERPAID) can be paid by a deposit';
  const state = await loadCompanion(platform, companionId);
  if (!state.companion || state.companion.clientId !== clientId) {
    return refusingOtherKinds(platform, tenant, companionId, rule, () => Promise.reject(domainNotFound(`payment ${companionId} not found`)));
  }
  const companion = state.companion;
  // Whether it is past its expiresAt is judged at its own clock's time, when it has one.
  const open = companionOpen(state, (await platformOn(platform, companion.testClockId)).runtime.now());
  if (!open.open) throw domainPrecondition(`companionId: payment ${companionId} ${open.why}; ${rule}, while CREATED`);
  if (companion.currency !== deposit.currency) {
    throw domainPrecondition(`companionId: payment ${companionId} is due in ${companion.currency}; the deposit is in ${deposit.currency}`);
  }
  if (companion.accountId !== accountId) {
    throw domainPrecondition(`companionId: the amount still due of payment ${companionId} is owed to account ${companion.accountId}; assign the deposit there`);
  }
  return companion;
}

/**
 * The assignment's remaining steps, from wherever a process left them: the account's answer to the credit (asked
 * again, it repeats its first one), the deposit's record of it, the companion child. Answers the position of the
 * last event appended, or null when there was nothing left to do.
 */
export async function finishAssignment(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<Position | null> {
  const state = await loadDeposit(platform, paymentId);
  const deposit = state.deposit;
  if (!deposit) return null;
  let position: Position | null = null;
  if (state.inFlight) {
    const { accountId } = state.inFlight;
    const answer = await creditSettlement(platform, accountId, {
      paymentId, totalAmount: deposit.totalAmount, feeAmount: zeroAmount(deposit.currency), netAmount: deposit.totalAmount,
      fundsFrom: 'suspense', settlementBatchId: null,
    }, metadata);
    const recorded = await runCommand(platform, paymentStreamType, paymentStream(paymentId), {
      type: 'RecordAssignmentAnswer', tenant: 'any', accountId, now: platform.runtime.now(),
      companionId: companionIdFor(deposit.clientId, deposit.externalId),
      answer: answer.outcome === 'CREDITED' ? { outcome: 'CREDITED', creditEventId: answer.eventId } : { outcome: 'REFUSED', accountStatus: answer.data.status },
    }, metadata);
    position = recorded.position;
  }
  position = (await ensureCompanion(platform, paymentId, metadata)) ?? position;
  return (await payNamedCompanion(platform, paymentId, metadata)) ?? position;
}

/**
 * The last step of an assignment that pays a companion: the companion records that the deposit paid it (its money
 * moved with the deposit's credit). A companion that ended meanwhile (cancelled, expired) refuses, and keeps its end:
 * the deposit is settled into the account all the same, as a deposit paying nothing. Null when there is nothing to do.
 */
async function payNamedCompanion(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<Position | null> {
  const assigned = (await loadDeposit(platform, paymentId)).assigned;
  if (!assigned?.companionId) return null;
  try {
    const { position, events } = await runCommand(platform, paymentStreamType, paymentStream(assigned.companionId), {
      type: 'PayCompanion', tenant: 'any', depositPaymentId: paymentId, creditEventId: assigned.creditEventId, now: platform.runtime.now(),
    }, metadata);
    return events.length > 0 ? position : null;
  } catch (error) {
    // Cancelled or expired between the request and now: its end stands (see above), and the deposit's money is in the account.
    if (error instanceof DomainError && error.kind === 'failedPrecondition') return null;
    throw error;
  }
}

/**
 * `POST /payments/:id/cancel`: the client gives up the amount still due of a companion (CREATED → CANCELLED). Any
 * other payment, or a companion that is not CREATED (or past its expiresAt), is refused naming why (422).
 */
export async function cancelCompanion(wallPlatform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata): Promise<void> {
  // A companion of a deposit bound to a test clock is judged, and cancelled, at that clock's time.
  const platform = await platformOn(wallPlatform, (await loadCompanion(wallPlatform, paymentId)).companion?.testClockId);
  await refusingOtherKinds(platform, tenant, paymentId,
    'only a deposit\'s companion holding the amount still due (UNDERPAID, CREATED) can be cancelled',
    () => runCommand(platform, paymentStreamType, paymentStream(paymentId), { type: 'CancelCompanion', tenant, now: platform.runtime.now() }, metadata));
}

/** The expiry job's: a companion past its expiresAt, still CREATED, expires (nothing, otherwise). */
export async function expireCompanion(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<boolean> {
  const { events } = await runCommand(platform, paymentStreamType, paymentStream(paymentId),
    { type: 'ExpireCompanion', tenant: 'any', now: platform.runtime.now() }, metadata);
  return events.length > 0;
}

/** The companion child of an under- or overpaid assignment, created once (deterministic id and event id). */
async function ensureCompanion(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<Position | null> {
  const state = await loadDeposit(platform, paymentId);
  const deposit = state.deposit;
  const assigned = state.assigned;
  if (!deposit || !assigned || !state.companion) return null;
  const companion: DepositCompanionCreatedData = {
    paymentId: state.companion.paymentId, clientId: deposit.clientId, externalId: `${deposit.externalId}:difference`,
    parentPaymentId: paymentId, kind: state.companion.kind, status: state.companion.kind === 'UNDERPAID' ? 'CREATED' : 'SETTLED',
    totalAmount: state.companion.difference, currency: deposit.currency, accountId: assigned.accountId,
    accountNumber: assigned.accountNumber, identityId: assigned.identityId, customerId: deposit.customerId, createdAt: assigned.at,
    expiresAt: companionExpiresAt(state.companion.kind, assigned.at),
    ...(deposit.testClockId ? { testClockId: deposit.testClockId } : {}),
  };
  // Null when created before, by this flow or the reactor.
  const { position } = await runCommand(platform, paymentStreamType, paymentStream(companion.paymentId),
    { type: 'CreateCompanion', tenant: 'any', companion }, metadata, { expectNewStream: true });
  return position;
}

/**
 * Expires a deposit past its `expiresAt` (the expiry job's): the deposit records that its funds are owed back to
 * the originator, then the refund child that pays them back from suspense is issued (the refunds' process; the
 * deposit reactor issues it again for a process that stopped in between). The refund is decided on the deposit's
 * state as the expiry left it, and its stream is new but for that reactor: neither is read again.
 */
export async function expireDeposit(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<void> {
  const { state, position } = await runCommand(platform, paymentStreamType, paymentStream(paymentId), ({ deposit: { deposit } }): DepositCommand => {
    if (!deposit) throw domainNotFound('payment not found');
    return { type: 'ExpireDeposit', tenant: 'any', now: platform.runtime.now(), refundPaymentId: refundIdFor(deposit.clientId, deposit.externalId) };
  }, metadata);
  await platform.readYourWrites(position, DEPOSIT_EVENT_TYPES);
  await platform.readYourWrites(await refundExpiredDeposit(platform, paymentId, metadata, state.deposit, { expectNewStream: true }), DEPOSIT_EVENT_TYPES);
}

/**
 * The refund child of an expired deposit, RECEIVED, funded from the currency's suspense account (where the
 * deposit's funds wait): created once, its id derived from the deposit. Null when there is nothing (left) to do.
 * `state`: the deposit as the caller has just read it (read here without); `options`, the refund's creation's.
 */
export async function refundExpiredDeposit(
  platform: Platform, paymentId: string, metadata: EventMetadata, state?: DepositState, options: CommandOptions = {},
): Promise<Position | null> {
  const { deposit, refundDue } = state ?? await loadDeposit(platform, paymentId);
  if (!deposit || !refundDue) return null;
  const { firstName, lastName, documentNumber } = deposit.originator;
  return issueRefundChild(platform, {
    refundId: refundDue, parentPaymentId: paymentId, clientId: deposit.clientId,
    // An unassigned deposit reached no account, so no identity owns the money.
    identityId: null, identityEmail: null, customerId: deposit.customerId, totalAmount: deposit.totalAmount, currency: deposit.currency,
    description: `unassigned deposit ${deposit.externalId} expired: back to ${[firstName, lastName].filter(Boolean).join(' ')} (${documentNumber})`,
    funding: { source: 'SUSPENSE' },
  }, metadata, options);
}

