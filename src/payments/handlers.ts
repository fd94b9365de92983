/**
 * Commands on payments: gather the facts the decider needs (read models, catalog, provider), run the decider
 * on the payment's stream, and wait (bounded) for the read models.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { CreatePayment } from '../../schemas/payments.ts';
import { recordedByRequest } from '../eventstore/commandHandler.ts';
import { runCommand, streamState } from '../eventstore/streams.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { DomainError, domainConflict, domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { AmountError, formatAmount, parseAmount, toDecimal } from '../domain/money.ts';
import { visibleTo, type Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import { createCustomer, customerHoldingDocumentNumber, customerOfClient, holderInReadModels } from '../customers/handlers.ts';
import type { CustomerState } from '../customers/decider.ts';
import type { OperationLevel } from '../customers/events.ts';
import { isPaymentEvent, needsAccountAnswer, type AccountAnswer, type PaymentCommand, type PaymentState } from './decider.ts';
import { paymentStreamType, type PaymentStreamState } from './stream.ts';
import { paymentIdFor, paymentStream, type PaymentStatus } from './events.ts';
import { creditSettlement } from '../accounts/handlers.ts';
import type { Position } from '../eventstore/position.ts';
import { checkOriginAmounts, validateNodes, type NodeSide } from './nodes.ts';
import { feesFor, purchaseFor, totalFee } from './pricing.ts';
import { screenPayment } from './screening.ts';
import type { PayerAndAccount, PaymentKind, PaymentView } from './ports.ts';
import { creatingOn } from '../testClocks/binding.ts';
import { onClockMetadata, platformOn } from '../testClocks/time.ts';

/** What a payment kept on a stream of its own kind is, as a refusal names it. */
export function paymentKindOf(row: Pick<PaymentKind, 'type' | 'parent_payment_id'>): string {
  if (row.type === 'REFUND' && row.parent_payment_id !== null) return `a refund of payment ${row.parent_payment_id}`;
  if (row.parent_payment_id !== null) return `the companion of deposit ${row.parent_payment_id}`;
  if (row.type === 'LOCAL_DEPOSIT') return 'a deposit';
  return `a ${row.type} payment`;
}

/**
 * Runs `act`, a command on the payment's own stream. A refund child, a deposit and a deposit's companion are
 * payments the caller sees (GET /payments/:id) whose events the payment's machine does not hold: when `act` finds
 * no payment but the caller has one of that id, the answer is a 422 saying what it is and `rule`, not a 404.
 */
export async function refusingOtherKinds<T>(
  platform: Platform, tenant: Tenant, paymentId: string, rule: string, act: () => Promise<T>,
): Promise<T> {
  try {
    return await act();
  } catch (error) {
    if (!(error instanceof DomainError && error.kind === 'notFound')) throw error;
    const row = await platform.reads.payments.kindOf(paymentId);
    if (!row || !visibleTo(tenant, row.client_id)) throw error;
    throw domainPrecondition(`payment ${paymentId} is ${paymentKindOf(row)}; ${rule}`);
  }
}

/** The payment folded from its stream: the truth, even before the read models have caught up. */
export async function loadPayment(platform: Platform, paymentId: string): Promise<PaymentState> {
  return (await streamState(platform, paymentStreamType, paymentStream(paymentId))).payment;
}


/**
 * A refund is a child of a SETTLED payment, made only by POST /payments/:id/refund (its own stream, its parent's
 * ceiling); a payment created with type REFUND would be money in that lists beside them and could be refunded.
 */
export function refuseRefundType(type: string): void {
  if (type === 'REFUND') {
    throw domainInvalid('type: REFUND cannot be created here; refund a SETTLED payment with POST /payments/{id}/refund');
  }
}

export function amountIn(field: string, text: string, currency: string): string {
  try {
    return formatAmount(parseAmount(text, currency, { positive: true }), currency);
  } catch (error) {
    if (error instanceof AmountError) throw domainInvalid(`${field}: ${error.message}`);
    throw error;
  }
}

/**
 * The identity paid and its account, both the client's (404 otherwise): the account must be the identity's, in
 * the transaction's currency, and ACTIVE. A payment and an attempt check the same.
 */
export async function destinationOf(
  platform: Platform, clientId: string, input: { identityId: string; accountNumber: string; currency: string },
): Promise<{ identity: NonNullable<PayerAndAccount['identity']>; account: NonNullable<PayerAndAccount['account']>; thresholds: PayerAndAccount['thresholds'] }> {
  const { identity, account, thresholds } = await platform.reads.payments.payerAndAccount({ clientId, identityId: input.identityId, accountNumber: input.accountNumber });
  if (!identity) throw domainNotFound(`identity ${input.identityId} not found`);
  if (!account) throw domainNotFound(`account ${input.accountNumber} not found`);
  if (account.identity_id !== identity.identity_id) {
    throw domainInvalid(`accountNumber: account ${input.accountNumber} does not belong to identity ${input.identityId}`);
  }
  if (account.currency !== input.currency) {
    throw domainInvalid(`currency: account ${input.accountNumber} holds ${account.currency}, not ${input.currency}`);
  }
  if (account.status !== 'ACTIVE') throw domainPrecondition(`account ${input.accountNumber} is ${account.status}; it cannot be paid`);
  return { identity, account, thresholds };
}

/**
 * The platform accounts that ACCOUNT nodes name (`account.accountNumber`) must be the client's, in the node's
 * currency, and ACTIVE: one query for all of them, none when no node names one. Another client's account is as
 * unknown as none. A payment and an attempt check the same; each refusal is a 400 naming the node's field.
 */
export async function checkNodeAccounts(
  platform: Platform, clientId: string, sides: Record<NodeSide, ReadonlyArray<{ type: string; currency: string; account?: unknown }>>,
): Promise<void> {
  const named = (Object.entries(sides) as Array<[NodeSide, ReadonlyArray<{ type: string; currency: string; account?: unknown }>]>)
    .flatMap(([side, nodes]) => nodes.flatMap((node, n) => {
      const accountNumber = node.type === 'ACCOUNT' ? (node.account as Record<string, string> | undefined)?.accountNumber : undefined;
      return accountNumber ? [{ path: `${side}[${n}].account.accountNumber`, accountNumber, currency: node.currency }] : [];
    }));
  if (named.length === 0) return;
  const rows = await platform.reads.payments.nodeAccounts(clientId, named.map((node) => node.accountNumber));
  const byNumber = new Map(rows.map((row) => [row.account_number, row]));
  for (const { path, accountNumber, currency } of named) {
    const account = byNumber.get(accountNumber);
    if (!account) throw domainInvalid(`${path}: no account ${accountNumber} of this client`);
    if (account.currency !== currency) throw domainInvalid(`${path}: account ${accountNumber} holds ${account.currency}, not ${currency}`);
    if (account.status !== 'ACTIVE') throw domainInvalid(`${path}: account ${accountNumber} is ${account.status}`);
  }
}

/** The payer as a payment needs it: who, and the operation level its review follows. */
interface Payer {
  customer_id: string;
  operation_level: OperationLevel;
}

function payerOf(customer: CustomerState): Payer {
  return { customer_id: customer.customerId!, operation_level: customer.operationLevel };
}

/**
 * The payer, when already known: `customerId` (404 when not the client's), or the `customer` fields matched on
 * documentNumber within the client. Null when the payment names no payer or a new one. Both are read from the
 * streams that own them (the customer's, and the document number's reservation), not from the read model,
 * which may not have a customer created a moment ago, or its latest operation level.
 */
async function knownPayer(platform: Platform, clientId: string, input: CreatePayment, selfDeclared: boolean): Promise<Payer | null> {
  if (input.customerId && input.customer) throw domainInvalid('customer: send customerId or customer, not both');
  if (input.customerId) {
    const customer = await customerOfClient(platform, clientId, input.customerId);
    if (!customer) throw domainNotFound(`customer ${input.customerId} not found`);
    return payerOf(customer);
  }
  if (input.customer && !input.customer.documentNumber && !input.customer.email) throw domainInvalid('customer: needs documentNumber or email');
  if (!input.customer?.documentNumber || selfDeclared) return null;
  const holder = await customerHoldingDocumentNumber(platform, clientId, input.customer.documentNumber);
  return holder ? payerOf(holder) : null;
}

/** Creations of a new payer tried, when the customer that took its document number first gives it back. */
const MAX_NEW_PAYER_ATTEMPTS = 3;

/**
 * A payer named by its fields and not yet known becomes a customer (autoCreated), once everything else passed.
 * When another request takes the payer's document number first, the number's reservation names the customer
 * it took it for: that customer is the payer. A self-declared payer (see createPayment) is never matched to an
 * existing customer: when its document number is another customer's, the payment names no customer.
 */
async function newPayer(
  platform: Platform, clientId: string, input: CreatePayment, metadata: EventMetadata, selfDeclared: boolean,
): Promise<Payer | null> {
  if (!input.customer) return null;
  // A reused externalId must change nothing, not even create its payer; unless the payment is this very request's,
  // created by its earlier run (then the payer it created is found again and the payment answered as recorded).
  const stream = paymentStream(paymentIdFor(clientId, input.externalId));
  const [created] = await platform.storage.store.readStream(stream, { limit: 1 });
  if (created && !recordedByRequest(metadata, stream, 'CreatePayment', created.id)) {
    throw domainConflict(`a payment with externalId ${JSON.stringify(input.externalId)} already exists`);
  }
  const { documentNumber } = input.customer;
  for (let attempt = 1; ; attempt++) {
    try {
      const customerId = await createCustomer(platform, clientId, input.customer, metadata, true);
      return payerOf((await customerOfClient(platform, clientId, customerId))!);
    } catch (error) {
      const numberTaken = documentNumber !== undefined && error instanceof DomainError && error.kind === 'alreadyExists';
      if (numberTaken && selfDeclared) return null;
      if (!numberTaken || attempt >= MAX_NEW_PAYER_ATTEMPTS) throw error;
    }
    // Created a moment ago by the request that won: the payment's customer is readable once this one answers.
    const holder = await holderInReadModels(platform, clientId, documentNumber);
    if (holder) return payerOf(holder);
  }
}

/**
 * Creates the payment; answers its read-model row, derived from the events it recorded, and the read models
 * catching up (the caller answers once they have).
 */
export async function createPayment(
  wallPlatform: Platform, clientId: string, input: CreatePayment, wallMetadata: EventMetadata,
  /**
   * Set by the checkout context for a session's payment (`GET /payments?checkoutSessionId=` finds it).
   * `selfDeclaredPayer`: the `customer` fields are what an anonymous payer typed (a hosted page), not the client's
   * word: they never adopt an existing customer (nor its operation level); a new payer becomes a customer of its
   * own, and one whose document number is another customer's pays with none (BASIC).
   */
  origin: { checkoutSessionId?: string; selfDeclaredPayer?: boolean; clock?: PaymentClock } = {},
): Promise<{ row: PaymentView; readModels: Promise<void> }> {
  refuseRefundType(input.type);
  const paymentId = paymentIdFor(clientId, input.externalId);
  const { platform, metadata, clockId } = origin.clock?.inherited
    ? { platform: await platformOn(wallPlatform, origin.clock.testClockId), metadata: wallMetadata, clockId: origin.clock.testClockId }
    : await creatingOn(wallPlatform, clientId, origin.clock?.testClockId, 'payment', paymentId, wallMetadata);
  const { catalog, config, provider } = platform;
  const now = platform.runtime.now();
  const [{ identity, account, thresholds }, knownCustomer] = await Promise.all([
    destinationOf(platform, clientId, input),
    knownPayer(platform, clientId, input, origin.selfDeclaredPayer === true),
  ]);
  if (input.expiresAt !== undefined && Date.parse(input.expiresAt) <= now.getTime()) {
    throw domainInvalid('expiresAt: must be in the future');
  }

  const totalAmount = amountIn('totalAmount', input.totalAmount, input.currency);
  const purchase = purchaseFor({
    catalog, totalAmount, currency: input.currency, purchaseAmount: input.purchaseAmount, purchaseCurrency: input.purchaseCurrency,
    now, quoteTtlSeconds: provider.quoteTtlSeconds(input),
  });
  const charged = { currency: purchase.purchaseCurrency ?? input.currency, amount: purchase.purchaseAmount ?? totalAmount };
  const origins = validateNodes(catalog, input.origins, 'origins', { ...charged, now });
  checkOriginAmounts(input.origins, origins, charged);
  const destinations = validateNodes(catalog, input.destinations, 'destinations', { currency: input.currency, amount: totalAmount, now });
  await checkNodeAccounts(platform, clientId, { origins, destinations });
  const method = origins[0] ? catalog.nodeType(origins[0].type) : undefined;
  const fees = feesFor(catalog, method, totalAmount, input.currency);
  const feeAmount = totalFee(fees, input.currency);
  if (toDecimal(feeAmount).greaterThanOrEqualTo(toDecimal(totalAmount))) {
    throw domainInvalid(`totalAmount: ${totalAmount} ${input.currency} does not cover the ${method!.type} fee of ${feeAmount} ${input.currency}`);
  }
  const customer = knownCustomer ?? await newPayer(platform, clientId, input, metadata, origin.selfDeclaredPayer === true);
  const operationLevel: OperationLevel = customer?.operation_level ?? 'BASIC';
  const screening = screenPayment({
    catalog, operationLevel, totalAmount, currency: input.currency, providerReview: provider.reviewReason(input),
    // The client's own thresholds (set by an operator on its stream), else the environment's (DESIGN section 19).
    thresholds: {
      basicUsd: thresholds?.review_threshold_basic_usd ?? config.reviewThresholdBasicUsd,
      standardUsd: thresholds?.review_threshold_standard_usd ?? config.reviewThresholdStandardUsd,
    },
  });

  // A new payment's stream is new: decided on the empty state and appended with no_stream, sparing the read.
  const { events, readModels } = await runCommand(platform, paymentStreamType, paymentStream(paymentId), {
    type: 'CreatePayment', tenant: { clientId }, now, screening,
    payment: {
      paymentId, clientId, externalId: input.externalId, identityId: identity.identity_id,
      identityExternalId: input.identityExternalId ?? null, identityEmail: identity.email, accountId: account.account_id,
      accountNumber: account.account_number, totalAmount, currency: input.currency, description: input.description ?? null,
      product: input.product ?? purchase.exchange?.product ?? null, type: input.type,
      purchaseAmount: purchase.purchaseAmount, purchaseCurrency: purchase.purchaseCurrency, exchange: purchase.exchange,
      origins, destinations, fees, feeAmount,
      flow: method?.type === 'CARD' ? 'CARD' : 'PUSH', method: method?.type ?? null, settlement: method?.settlement ?? 'INSTANT',
      expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null, customerId: customer?.customer_id ?? null,
      checkoutSessionId: origin.checkoutSessionId ?? null, ...(clockId ? { testClockId: clockId } : {}),
    },
  }, clockId ? onClockMetadata(metadata, clockId, now) : metadata, { expectNewStream: true });
  return { row: platform.reads.payments.viewOf(events.filter(isPaymentEvent)), readModels };
}

/**
 * The test clock a new payment follows: the one its request named (`Test-Clock`: the payment is bound to it, and
 * counted), or its checkout session's (`inherited`: it follows the session's clock without counting).
 */
export interface PaymentClock {
  testClockId: string | null;
  inherited?: boolean;
}

/** The provider decides: an approved authorization moves to AUTHORIZED, a declined one fails the payment. */
/**
 * `loaded`: the payment as the caller read it from its stream a moment ago (the autopilot), so that it is not read
 * again: the issuer's answer depends only on what the payment was created with, and the decider judges the move on
 * the stream as it is when the answer is appended.
 */
export async function authorizePayment(
  platform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata, loaded?: PaymentState,
): Promise<void> {
  await refusingOtherKinds(platform, tenant, paymentId, 'only a card payment can be authorized',
    () => authorizeCardPayment(platform, tenant, paymentId, metadata, loaded));
}

async function authorizeCardPayment(
  platform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata, loaded?: PaymentState,
): Promise<void> {
  const state = loaded ?? await loadPayment(platform, paymentId);
  // Another client's payment is not found before the issuer hears of it, as the decider would answer.
  if (!state.payment || !visibleTo(tenant, state.payment.clientId)) throw domainNotFound('payment not found');
  // Only ask the issuer about a payment the machine would let through; the decider names the refusal.
  const decision = state.status === 'CREATED' && state.payment.flow === 'CARD' ? platform.provider.authorize(state.payment) : { approved: true as const };
  const now = platform.runtime.now();
  await runCommand(platform, paymentStreamType, paymentStream(paymentId), decision.approved ? { type: 'Authorize', tenant, now } : { type: 'Reject', tenant, reason: decision.reason, now }, metadata);
}

export async function capturePayment(platform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata): Promise<void> {
  await refusingOtherKinds(platform, tenant, paymentId, 'only an authorized card payment can be captured',
    () => runCommand(platform, paymentStreamType, paymentStream(paymentId), { type: 'Capture', tenant, now: platform.runtime.now() }, metadata));
}

export async function markPaymentPending(platform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata): Promise<void> {
  await runCommand(platform, paymentStreamType, paymentStream(paymentId), { type: 'MarkPending', tenant, now: platform.runtime.now() }, metadata);
}

/** The provider reports the funds arrived; an INSTANT payment then settles at once (`settleReceived`). */
export async function receivePayment(platform: Platform, tenant: Tenant, paymentId: string, metadata: EventMetadata): Promise<void> {
  const received = await runCommand(platform, paymentStreamType, paymentStream(paymentId), ({ payment: state }: PaymentStreamState) => {
    if (!state.payment || !visibleTo(tenant, state.payment.clientId)) throw domainNotFound('payment not found');
    return { type: 'Receive', tenant, now: platform.runtime.now(), receivedAmount: platform.provider.receivedAmount(state.payment) } as const;
  }, metadata);
  const settled = await settleReceived(platform, paymentId, null, metadata);
  await platform.readYourWrites(settled ?? received.position, [...received.events.map((e) => e.type), ...SETTLEMENT_EVENT_TYPES]);
}

/** The events a settlement may record, on the payment's and the account's streams. */
export const SETTLEMENT_EVENT_TYPES = ['PaymentSettled', 'PaymentUnsettled', 'AccountCredited', 'AccountCreditRefused'] as const;

/**
 * Settles a RECEIVED payment, a process manager across two streams (no multi-stream transaction, so it holds
 * on every store): when the amount received is the amount expected, the destination account's stream decides
 * whether it takes the funds (`creditSettlement`, answered once per payment); then the payment records that
 * answer: SETTLED, or UNSETTLED with the funds in suspense. Each step is safe to run again: the account repeats
 * its first answer and the payment refuses a second settlement. The settlement reactor re-runs it for a
 * process that stopped between the two steps. `batchId` is null for an INSTANT payment, the batch's id for the
 * others; a payment that is not due (not RECEIVED, or settling the other way) is left alone. Answers the
 * position of the last event appended, or null.
 */
export async function settleReceived(
  platform: Platform, paymentId: string, batchId: string | null, metadata: EventMetadata,
): Promise<Position | null> {
  const state = await loadPayment(platform, paymentId);
  const payment = state.payment;
  if (!payment || state.status !== 'RECEIVED' || (payment.settlement === 'INSTANT') !== (batchId === null)) return null;
  let account: AccountAnswer | null = null;
  let position: Position | null = null;
  if (needsAccountAnswer(state)) {
    const answer = await creditSettlement(platform, payment.accountId, {
      paymentId, totalAmount: payment.totalAmount, feeAmount: payment.feeAmount,
      netAmount: formatAmount(toDecimal(payment.totalAmount).minus(toDecimal(payment.feeAmount)), payment.currency),
      fundsFrom: 'clearing', settlementBatchId: batchId,
    }, metadata);
    account = answer.outcome === 'CREDITED'
      ? { outcome: 'CREDITED', creditEventId: answer.eventId, settlementBatchId: answer.data.settlementBatchId }
      : { outcome: 'REFUSED', status: answer.data.status, settlementBatchId: answer.data.settlementBatchId };
  }
  try {
    ({ position } = await runCommand(platform, paymentStreamType, paymentStream(paymentId),
      { type: 'Settle', tenant: 'any', batchId, account, now: platform.runtime.now() }, metadata));
  } catch (error) {
    // Another process recorded the same answer first.
    if (!isRefusedMove(error)) throw error;
  }
  return position;
}

/** One payment of a settlement batch: answers its status afterwards, or null when it was not due. */
export async function settlePayment(
  platform: Platform, paymentId: string, batchId: string, metadata: EventMetadata,
): Promise<PaymentStatus | null> {
  const position = await settleReceived(platform, paymentId, batchId, metadata);
  if (position === null) return null;
  await platform.readYourWrites(position, SETTLEMENT_EVENT_TYPES);
  return (await loadPayment(platform, paymentId)).status;
}

/** The expiry job's and the sandbox provider's (no client route expires a payment): any client's payment. */
export async function expirePayment(platform: Platform, paymentId: string, metadata: EventMetadata): Promise<void> {
  await runCommand(platform, paymentStreamType, paymentStream(paymentId), { type: 'Expire', tenant: 'any', now: platform.runtime.now() }, metadata);
}

export async function resolvePaymentReview(
  platform: Platform, tenant: Tenant, paymentId: string, decision: 'APPROVED' | 'REJECTED', metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, paymentStreamType, paymentStream(paymentId), { type: 'ResolveReview', tenant, decision, actor: metadata.actor ?? 'operator', now: platform.runtime.now() }, metadata);
}

export async function attachPaymentDocument(
  platform: Platform, tenant: Tenant, paymentId: string, document: { type: string; url?: string; contentType?: string }, metadata: EventMetadata,
): Promise<string> {
  const documentId = createdId(platform.runtime, metadata, 'payment document');
  await refusingOtherKinds(platform, tenant, paymentId, 'only a payment under review (REQUIRES_REVIEW) takes documents', () => runCommand(platform, paymentStreamType, paymentStream(paymentId), {
    type: 'AttachDocument', tenant, now: platform.runtime.now(),
    document: { documentId, type: document.type, url: document.url ?? null, contentType: document.contentType ?? null },
  }, metadata));
  return documentId;
}

/** True when `error` is the state machine refusing a move (jobs and the autopilot skip those). */
export function isRefusedMove(error: unknown): boolean {
  return error instanceof DomainError && (error.kind === 'failedPrecondition' || error.kind === 'notFound');
}
