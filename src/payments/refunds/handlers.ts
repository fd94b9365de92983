/**
 * The refund process manager (README, "Refunds"). A refund crosses three streams without a multi-stream
 * transaction, so it holds on every store:
 *
 * 1. the parent payment's stream reserves the amount against what is left to refund (`RequestRefund`, appended
 *    with the parent's expected revision: the ceiling);
 * 2. the funding account's stream answers the hold once (`RequestHold`: held, or refused when it is not ACTIVE or
 *    its available funds are short: the funds);
 * 3. the parent records that answer (a refusal gives the reservation back, and the caller gets 422); on
 *    acceptance the refund child is created RECEIVED on its own stream, beside the parent's record of it.
 *
 * The child's end (SETTLED, FAILED, UNSETTLED, EXPIRED) is decided on the child's stream first; then the account
 * debits or releases the hold, and the parent records the end (a failure gives the reservation back).
 *
 * Every step is safe to run again: the parent and the child answer a repeated step with nothing, the account
 * repeats its first answer, and the child's id is the refund's. The refund reactor (./reactor.ts) runs the same
 * steps for every request and every end it sees in the feed, so a process that stopped half way (a crash, a
 * deploy) leaves nothing half done.
 */
import { createdId } from '../../eventstore/deterministicId.ts';
import { runCommand, streamState } from '../../eventstore/streams.ts';
import type { CommandOptions } from '../../eventstore/commandHandler.ts';
import type { EventMetadata } from '../../eventstore/port.ts';
import { comparePositions, type Position } from '../../eventstore/position.ts';
import { domainNotFound, domainPrecondition } from '../../domain/errors.ts';
import type { Tenant } from '../../domain/tenancy.ts';
import type { Platform } from '../../platform.ts';
import { endHold, requestHold } from '../../accounts/handlers.ts';
import { paymentStream } from '../events.ts';
import { refusingOtherKinds } from '../handlers.ts';
import { refundStreamType, type HoldAnswer, type ParentRefundState, type RefundState } from './decider.ts';
import { paymentStreamType } from '../stream.ts';
import { OUTCOME_EVENTS, refundStream, type RefundCreatedData, type RefundOutcome } from './events.ts';

/** The refund side of a payment, folded from its stream. */
export async function loadParent(platform: Platform, paymentId: string): Promise<ParentRefundState> {
  return (await streamState(platform, paymentStreamType, paymentStream(paymentId))).refunds;
}

export function loadRefund(platform: Platform, refundId: string): Promise<RefundState> {
  return streamState(platform, refundStreamType, refundStream(refundId));
}

const latest = (...positions: Array<Position | null>): Position | null =>
  positions.reduce<Position | null>((a, b) => (!a ? b : !b ? a : comparePositions(a, b) >= 0 ? a : b), null);

/**
 * Waits for the read models that handle `eventTypes`: the types the step writes, whoever appended them (this
 * request, or the reactor beside it), so each runner waited for was woken by its append rather than its idle poll.
 */
async function readModelsAt(platform: Platform, position: Position | null, eventTypes: readonly string[]): Promise<void> {
  await platform.readYourWrites(position ?? await platform.storage.store.headPosition(), eventTypes);
}

/** What a refund's creation writes that the read models show: the account's hold (ledger), the child (refunds). */
const CREATION_EVENT_TYPES = ['AccountFundsHeld', 'RefundCreated'] as const;

/** What the end of a refund writes that the read models show. */
function endEventTypes(refund: RefundCreatedData, outcome: RefundOutcome): string[] {
  const types: string[] = [OUTCOME_EVENTS[outcome]];
  if (refund.funding.source === 'ACCOUNT') {
    types.push(outcome === 'SETTLED' ? 'AccountHoldDebited' : 'AccountHoldReleased');
    if (outcome === 'SETTLED') types.push('PaymentRefundSettled');
  }
  return types;
}

/**
 * Creates a refund child, RECEIVED, funded as `refund.funding` says: from an account that already holds the
 * amount (the refund flow below), or from the currency's suspense account (funds that reached no account, such
 * as an expired unassigned deposit). The child's id is the caller's: derive it from what the refund is for, and
 * a flow that runs twice creates one child. Any client's: the service's own flows call it. `options`: the
 * creation's (`expectNewStream` when the caller knows the child is new but for a rare second run).
 */
export async function issueRefundChild(
  platform: Platform, refund: Omit<RefundCreatedData, 'createdAt'>, metadata: EventMetadata, options: CommandOptions = {},
): Promise<Position | null> {
  return (await createChild(platform, refund, metadata, options)).position;
}

/** `issueRefundChild`, and the child as its stream has it after. */
async function createChild(
  platform: Platform, refund: Omit<RefundCreatedData, 'createdAt'>, metadata: EventMetadata, options: CommandOptions,
): Promise<{ position: Position | null; child: RefundCreatedData }> {
  const { position, state } = await runCommand(platform, refundStreamType, refundStream(refund.refundId),
    { type: 'CreateRefund', tenant: 'any', refund, now: platform.runtime.now() }, metadata, options);
  return { position, child: state.refund! };
}

/** What the account's refusal means to the caller. */
function refusalDetail(answer: Extract<Awaited<ReturnType<typeof requestHold>>, { outcome: 'REFUSED' }>['data']): string {
  return answer.refusal === 'INSUFFICIENT_FUNDS'
    ? `account ${answer.accountId} has ${answer.availableFunds} ${answer.currency} available; it cannot pay out a refund of ${answer.amount} ${answer.currency}`
    : `account ${answer.accountId} is ${answer.status}; it cannot pay out a refund`;
}

export type RefundProgress =
  | { outcome: 'ACCEPTED'; position: Position | null; child: RefundCreatedData }
  | { outcome: 'REFUSED'; detail: string };

/**
 * Takes a requested refund as far as it goes: asks the account for the hold, records its answer on the parent, and,
 * once the account held the amount, creates the child while the parent records the acceptance. Safe to run any
 * number of times, from any process; null when the parent has no such refund. `requested`: the parent as the request
 * that reserved the refund left it a moment ago (so its stream is not read again, and the child is created expecting
 * a new stream: when another process's reactor created it first, that append is refused and the creation reads the
 * child and answers it, as a repeat); the reactor reads the parent.
 */
export async function advanceRefund(
  platform: Platform, parentId: string, refundId: string, metadata: EventMetadata, requested?: ParentRefundState,
): Promise<RefundProgress | null> {
  const store = platform.storage.store;
  const parent = requested ?? await loadParent(platform, parentId);
  let refund = parent.refunds.get(refundId);
  if (!refund || !parent.payment) return null;
  const payment = parent.payment;
  const accountId = payment.accountId;
  // The parent reserves a refund only once SETTLED into an account (src/payments/refunds/decider.ts).
  if (accountId === null) throw new Error(`payment ${parentId} holds refund ${refundId} but names no account`);
  const { amount, description } = refund;
  const create = () => createChild(platform, {
    refundId, parentPaymentId: parentId, clientId: payment.clientId, identityId: payment.identityId,
    identityEmail: payment.identityEmail, customerId: payment.customerId, totalAmount: amount, currency: payment.currency,
    description, funding: { source: 'ACCOUNT', accountId, holdId: refundId },
  }, metadata, { expectNewStream: requested !== undefined });
  let answered: Position | null = null;
  let creation: ReturnType<typeof create> | null = null;
  if (refund.state === 'REQUESTED') {
    const held = await requestHold(platform, accountId, { holdId: refundId, amount, reason: `refund ${refundId} of payment ${parentId}` }, metadata);
    const answer: HoldAnswer = held.outcome === 'HELD'
      ? { outcome: 'HELD' }
      : { outcome: 'REFUSED', refusal: held.data.refusal, detail: refusalDetail(held.data) };
    // Held: the child is created beside the parent's acceptance, the two appends usually in one group commit. The
    // parent's decider records the acceptance with the child's end should the end reach it first. Both settle before
    // either's failure is thrown, so nothing of this run is still writing when its caller hears of it.
    const answering = runCommand(platform, paymentStreamType, paymentStream(parentId),
      { type: 'AnswerRefund', tenant: 'any', refundId, answer, now: platform.runtime.now() }, metadata);
    if (answer.outcome === 'HELD') creation = create();
    const [result] = await Promise.allSettled([answering, creation ?? Promise.resolve(null)]);
    if (result.status === 'rejected') throw result.reason;
    answered = result.value.position;
    refund = result.value.state.refunds.refunds.get(refundId)!;
  }
  if (refund.state === 'REFUSED') return { outcome: 'REFUSED', detail: refund.detail ?? 'the account refused the hold' };
  const { position: created, child } = await (creation ?? create());
  // The creation's own failure, if any, is thrown here. A child another process created (the reactor, running beside
  // the request) is somewhere before the head.
  return { outcome: 'ACCEPTED', position: created === null ? await store.headPosition() : latest(answered, created), child };
}

/** The key of a refund's steps while a request runs them (`platform.inFlight`). */
export const refundAdvance = (refundId: string) => `refund-advance:${refundId}`;

/** The key of a refund's end being followed by the account and the parent (`platform.inFlight`). */
export const refundEndFollowed = (refundId: string) => `refund-end:${refundId}`;

/**
 * `POST /payments/:id/refund`: reserves `amount` (or all that is left) on the parent, then runs the process.
 * Answers the child's id once the read models have it; a refusal of the parent (not SETTLED, over the
 * remainder) or of the account (not ACTIVE, funds short) is a failedPrecondition naming the reason.
 */
export async function requestRefund(
  platform: Platform, tenant: Tenant, parentId: string, input: { amount?: string; reason?: string }, metadata: EventMetadata,
): Promise<{ child: RefundCreatedData; readModels: Promise<void> }> {
  const refundId = createdId(platform.runtime, metadata, 'refund');
  const requested = await refusingOtherKinds(platform, tenant, parentId, 'a refund cannot be refunded (refund its parent payment)',
    () => runCommand(platform, paymentStreamType, paymentStream(parentId), {
      type: 'RequestRefund', tenant, refundId, amount: input.amount ?? null, description: input.reason ?? null, now: platform.runtime.now(),
    }, metadata));
  // The refund reactor sees the request in the feed and waits for this run of the steps instead of racing it.
  const progress = await platform.inFlight.run(refundAdvance(refundId),
    () => advanceRefund(platform, parentId, refundId, metadata, requested.state.refunds));
  if (!progress) throw new Error(`payment ${parentId} lost refund ${refundId}`);
  if (progress.outcome === 'REFUSED') throw domainPrecondition(`refund refused: ${progress.detail}`);
  return { child: progress.child, readModels: readModelsAt(platform, latest(requested.position, progress.position), CREATION_EVENT_TYPES) };
}

/**
 * The parts of a refund's end that follow the child's: the account debits the hold (SETTLED) or gives it back,
 * and the parent records the end (giving the reservation back unless SETTLED). Nothing for a child that has
 * not ended, or that is funded from suspense; safe to run again.
 */
export async function followRefundEnd(platform: Platform, state: RefundState, metadata: EventMetadata): Promise<Position | null> {
  const refund = state.refund;
  if (!refund || !state.status || state.status === 'RECEIVED') return null;
  const outcome = state.status;
  // A child funded from suspense was reserved on no account and no parent: its end moves nothing else.
  if (refund.funding.source !== 'ACCOUNT') return null;
  const store = platform.storage.store;
  // Null when another process ended the hold first: its event is then before the head.
  const held = await endHold(platform, refund.funding.accountId, refund.funding.holdId, outcome === 'SETTLED' ? 'DEBITED' : 'RELEASED', metadata)
    ?? await store.headPosition();
  const { position } = await runCommand(platform, paymentStreamType, paymentStream(refund.parentPaymentId),
    { type: 'EndRefund', tenant: 'any', refundId: refund.refundId, outcome, now: platform.runtime.now() }, metadata);
  return latest(held, position);
}

/** Default reasons recorded with each end, when the provider gives none. */
export const DEFAULT_END_REASONS: Record<Exclude<RefundOutcome, 'SETTLED'>, string> = {
  FAILED: 'PROVIDER_REJECTED', UNSETTLED: 'REVERSAL_NOT_RECONCILED', EXPIRED: 'PROVIDER_WINDOW_ELAPSED',
};

/**
 * The provider's word on a refund (its notification, or the sandbox autopilot): the child moves to `outcome`,
 * then the account and the parent follow. Repeating the same end changes nothing; another end than the one
 * recorded is a failedPrecondition naming the child's status.
 */
export async function endRefund(
  platform: Platform, tenant: Tenant, refundId: string, outcome: RefundOutcome, metadata: EventMetadata,
  reason: string = outcome === 'SETTLED' ? '' : DEFAULT_END_REASONS[outcome],
): Promise<void> {
  const { state, position } = await runCommand(platform, refundStreamType, refundStream(refundId),
    { type: 'EndRefund', tenant, outcome, reason, now: platform.runtime.now() }, metadata);
  if (!state.refund) throw domainNotFound('refund not found');
  const followed = await platform.inFlight.run(refundEndFollowed(refundId), () => followRefundEnd(platform, state, metadata));
  await readModelsAt(platform, latest(position, followed), endEventTypes(state.refund, outcome));
}
