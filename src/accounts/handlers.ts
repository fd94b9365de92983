/** Commands on accounts. */
import { createdId, deterministicId, requestKeyOf } from '../eventstore/deterministicId.ts';
import { randomInt } from 'node:crypto';
import type { CreateAccount, UpdateAccount } from '../../schemas/accounts.ts';
import { runCommand, streamState } from '../eventstore/streams.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { DomainError, domainInvalid, domainNotFound } from '../domain/errors.ts';
import { visibleTo, type Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import {
  accountNumberStreamType, accountStreamType, holdOf, settlementAnswerOf, type SettlementAnswer,
} from './decider.ts';
import { accountNumberStream, accountStream, type AccountHoldRefusedData } from './events.ts';
import type { Position } from '../eventstore/position.ts';
import { definedOnly } from '../../schemas/events/common.ts';

const ACCOUNT_NUMBER_ATTEMPTS = 10;

/**
 * The account whose history (statement, balance at an instant) `tenant` may read: an open one from the read
 * model, else from its stream, which a closed account keeps (its read-model row is gone, its postings are not:
 * finance and auditors read them after the close). Another client's account, closed or not, is not found.
 */
export async function accountWithHistory(
  platform: Platform, tenant: Tenant, accountId: string,
): Promise<{ accountId: string; currency: string }> {
  const row = await platform.reads.accounts.open(accountId);
  if (row && visibleTo(tenant, row.client_id)) return { accountId: row.account_id, currency: row.currency };
  const state = await streamState(platform, accountStreamType, accountStream(accountId));
  if (!row && state.account && state.closed && visibleTo(tenant, state.account.clientId)) {
    return { accountId: state.account.accountId, currency: state.account.currency };
  }
  throw domainNotFound(`account ${accountId} not found`);
}

/** A 12-digit account number: drawn at random, or from `seed` (a digest), the same for the same seed. */
function accountNumberCandidate(seed: string | null): string {
  if (seed === null) return `${randomInt(1, 10)}${String(randomInt(0, 100_000_000_000)).padStart(11, '0')}`;
  const digits = BigInt(`0x${seed.replace(/-/g, '')}`);
  return `${1n + (digits % 9n)}${String((digits / 9n) % 100_000_000_000n).padStart(11, '0')}`;
}

/**
 * A 12-digit account number, claimed on its own stream (src/domain/reservation.ts): two accounts can never get
 * the same number, and a deleted account's number stays reserved for ever. A number held by another account is
 * refused, and the next candidate drawn. A request with an Idempotency-Key draws its candidates from the key, and
 * the reservation's id from the account and the number: run again, it finds the number its account holds (a
 * repeat) and keeps it, rather than reserving a second one that would name the same account.
 */
async function reserveAccountNumber(platform: Platform, accountId: string, metadata: EventMetadata): Promise<string> {
  const requestKey = requestKeyOf(metadata);
  for (let attempt = 0; attempt < ACCOUNT_NUMBER_ATTEMPTS; attempt++) {
    const number = accountNumberCandidate(requestKey === null ? null : deterministicId('account number', requestKey, String(attempt)));
    try {
      // A new number's stream is new: decided on the empty state and appended with no_stream, sparing the read. The
      // reservation is recorded without the request's metadata, as it always was: its id is derived above already.
      await runCommand(platform, accountNumberStreamType, accountNumberStream(number), {
        type: 'ClaimKey', key: number, owner: accountId, now: platform.runtime.now(),
        eventId: deterministicId('account number reserved', accountId, number),
      }, {}, { expectNewStream: true });
      return number;
    } catch (error) {
      if (!(error instanceof DomainError && error.kind === 'alreadyExists')) throw error;
    }
  }
  throw new Error('could not reserve an unused account number');
}

export async function openAccount(platform: Platform, clientId: string, input: CreateAccount, metadata: EventMetadata): Promise<string> {
  const tenant = { clientId };
  const identity = await platform.reads.identities.owned(tenant, input.identityId);
  if (input.parentId) {
    const parent = await platform.reads.accounts.owned(tenant, input.parentId);
    if (parent.identity_id !== input.identityId) throw domainInvalid('parentId: a sub-account must belong to the parent’s identity');
    if (parent.currency !== input.currency) {
      throw domainInvalid(`currency: a sub-account must have its parent’s currency ${parent.currency}`);
    }
  }
  const accountId = createdId(platform.runtime, metadata, 'account');
  const accountNumber = await reserveAccountNumber(platform, accountId, metadata);
  const holder = [identity.name, identity.lastname].filter(Boolean).join(' ');
  await runCommand(platform, accountStreamType, accountStream(accountId), { type: 'OpenAccount', tenant, now: platform.runtime.now(), account: {
    accountId, clientId, identityId: input.identityId, externalId: input.externalId ?? null, type: input.type,
    custody: input.custody ?? 'PLATFORM', currency: input.currency, name: input.name ?? null, accountNumber,
    accountHolder: holder || null, country: identity.country, parentId: input.parentId ?? null,
  } }, metadata);
  return accountId;
}

export async function updateAccount(
  platform: Platform, tenant: Tenant, accountId: string, input: UpdateAccount, metadata: EventMetadata,
): Promise<void> {
  // Field by field: a field added to the request reaches no event until the event's contract has it too.
  const changes = definedOnly({ name: input.name, externalId: input.externalId, status: input.status });
  await runCommand(platform, accountStreamType, accountStream(accountId), { type: 'UpdateAccount', tenant, changes, now: platform.runtime.now() }, metadata);
}

/** Closes the account; the account's own stream decides whether it still holds money. */
export async function closeAccount(platform: Platform, tenant: Tenant, accountId: string, metadata: EventMetadata): Promise<void> {
  await runCommand(platform, accountStreamType, accountStream(accountId), { type: 'CloseAccount', tenant, now: platform.runtime.now() }, metadata);
}

export interface SettlementCredit {
  paymentId: string;
  totalAmount: string;
  feeAmount: string;
  netAmount: string;
  fundsFrom: 'clearing' | 'suspense';
  settlementBatchId: string | null;
}

/**
 * Asks the account to take a payment's funds. It answers once per payment (credited, or refused when it is not
 * ACTIVE), and the same answer to every later ask, so a settlement that runs again moves nothing twice.
 */
export async function creditSettlement(
  platform: Platform, accountId: string, credit: SettlementCredit, metadata: EventMetadata,
): Promise<SettlementAnswer> {
  const { state } = await runCommand(platform, accountStreamType, accountStream(accountId),
    // A settlement credits the account its payment names, whichever client's: the service's own flow.
    { type: 'CreditSettlement', tenant: 'any', ...credit, now: platform.runtime.now() }, metadata);
  const answer = settlementAnswerOf(state, credit.paymentId);
  if (!answer) throw new Error(`account ${accountId} recorded no answer to the settlement of payment ${credit.paymentId}`);
  return answer;
}

export async function adjustAccount(
  platform: Platform, tenant: Tenant, accountId: string, amount: string, reason: string, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, accountStreamType, accountStream(accountId), {
    type: 'AdjustAccount', tenant, amount, reason, adjustmentId: createdId(platform.runtime, metadata, 'adjustment'), now: platform.runtime.now(),
  }, metadata);
}

/** The account's answer to a hold: placed, or refused (with the refusal it recorded). */
export type HoldAnswer =
  | { outcome: 'HELD' }
  | { outcome: 'REFUSED'; data: AccountHoldRefusedData };

/**
 * Asks the account to set `amount` aside under `holdId` (a refund in flight). It answers once per hold, and
 * the same answer to every later ask, so a process that asks again (a retry, a reactor after a crash) never
 * holds twice nor gets a different answer. Any client's account: the service's own flow.
 */
export async function requestHold(
  platform: Platform, accountId: string, hold: { holdId: string; amount: string; reason: string }, metadata: EventMetadata,
): Promise<HoldAnswer> {
  const { state } = await runCommand(platform, accountStreamType, accountStream(accountId),
    { type: 'RequestHold', tenant: 'any', ...hold, now: platform.runtime.now() }, metadata);
  const answer = holdOf(state, hold.holdId);
  if (!answer) throw new Error(`account ${accountId} recorded no answer to hold ${hold.holdId}`);
  return answer.refusal ? { outcome: 'REFUSED', data: answer.refusal } : { outcome: 'HELD' };
}

/**
 * Ends a hold: `DEBITED` pays it out (the ledger moves it to refunds payable), `RELEASED` gives it back. Ending
 * it the same way again changes nothing; the other way is refused by the account.
 */
export async function endHold(
  platform: Platform, accountId: string, holdId: string, end: 'DEBITED' | 'RELEASED', metadata: EventMetadata,
): Promise<Position | null> {
  const { position } = await runCommand(platform, accountStreamType, accountStream(accountId),
    { type: end === 'DEBITED' ? 'DebitHold' : 'ReleaseHold', tenant: 'any', holdId, now: platform.runtime.now() }, metadata);
  return position;
}
