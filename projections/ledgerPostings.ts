/**
 * The postings API: every movement of money is a journal entry whose signed lines sum to exactly zero in
 * one currency. `entriesFor` maps a recorded event to its entries (by the contexts' `LedgerPostings`); it is pure
 * (the same event always gives the same entries, with the same ids), so the ledger projection replays and rebuilds identically.
 *
 * Sign convention: a positive line increases the account's balance, a negative line decreases it. An
 * adjustment of +100 USD to account A is `A +100.00`, `system:USD:adjustments −100.00`.
 */
import { deterministicId } from '../src/eventstore/deterministicId.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { handlerOf, recordedAs, unionOfHandlers, type EventHandlers } from '../src/eventstore/typedEvents.ts';
import type { StoredEventData, StoredEventType } from '../src/storedEvents/registry.ts';
import {
  ACCOUNT_ADJUSTED, ACCOUNT_CREDITED, ACCOUNT_FUNDS_HELD, ACCOUNT_HOLD_DEBITED, ACCOUNT_HOLD_RELEASED, DEPOSIT_RECEIVED, PAYMENT_SETTLED,
  PAYMENT_UNSETTLED, REFUND_SETTLED, type AccountAdjustedData, type AccountCreditedData, type AccountHoldReleasedData,
  type AccountHoldDebitedData, type PaymentSettledData, type PaymentUnsettledData, type RefundSettledData, type UnassignedDepositData,
} from '../src/ledger/events.ts';
import { Decimal, formatAmount, isCurrency, parseAmount, type Decimal as DecimalValue } from '../src/domain/money.ts';

export const SYSTEM_ACCOUNT_KINDS = ['clearing', 'suspense', 'fees', 'refunds_payable', 'adjustments'] as const;
/**
 * clearing: funds at or due from providers; suspense: unassigned deposits; fees: fees earned;
 * refunds_payable: refunds owed to payers; adjustments: operators' test deposits and corrections.
 */
export type SystemAccountKind = (typeof SYSTEM_ACCOUNT_KINDS)[number];

const SYSTEM_PREFIX = 'system:';

/** `system:<CUR>:<kind>`, e.g. `system:USD:clearing`. One of each kind per currency. */
export function systemAccountId(currency: string, kind: SystemAccountKind): string {
  if (!isCurrency(currency)) throw new LedgerInvariantError(`no system accounts for unknown currency ${JSON.stringify(currency)}`);
  if (!(SYSTEM_ACCOUNT_KINDS as readonly string[]).includes(kind)) {
    throw new LedgerInvariantError(`unknown system account kind ${JSON.stringify(kind)}`);
  }
  return `${SYSTEM_PREFIX}${currency}:${kind}`;
}

export function isSystemAccount(accountId: string): boolean {
  return accountId.startsWith(SYSTEM_PREFIX);
}

/** The currency and kind of a system account id, or null for any other id. */
export function parseSystemAccountId(accountId: string): { currency: string; kind: SystemAccountKind } | null {
  if (!isSystemAccount(accountId)) return null;
  const [currency, kind, ...rest] = accountId.slice(SYSTEM_PREFIX.length).split(':');
  if (rest.length > 0 || !isCurrency(currency) || !(SYSTEM_ACCOUNT_KINDS as readonly string[]).includes(kind!)) return null;
  return { currency, kind: kind as SystemAccountKind };
}

export interface JournalLine {
  accountId: string;
  /** Signed decimal string at most the entry currency's scale in decimals; never zero. */
  amount: string;
}

export interface JournalEntry {
  /** Deterministic: derived from the source event id (`entryIdFor`). */
  entryId: string;
  currency: string;
  /** ISO 8601 timestamp, from the event's data (never the time of projection). */
  occurredAt: string;
  description: string;
  sourceEventId: string;
  clientId: string | null;
  lines: readonly JournalLine[];
}

/**
 * A ledger invariant broke: an unbalanced or malformed entry, or a source event the ledger cannot read.
 * This is a bug, not a caller's error: it is thrown (never logged and skipped), so the projection stops on
 * the event and retries it rather than record a wrong ledger.
 */
export class LedgerInvariantError extends Error {
  override readonly name = 'LedgerInvariantError';
}

/** The id of the `index`-th entry an event produces (most events produce one, index 0). */
export function entryIdFor(sourceEventId: string, index = 0): string {
  return deterministicId('ledger-entry', sourceEventId, String(index));
}

/**
 * Throws a `LedgerInvariantError` unless the entry has at least two lines, every line is a non-zero amount
 * within the currency's scale, no line names another currency's system account, the lines sum to exactly
 * zero, and its ids and timestamp are present and well formed.
 */
export function assertBalanced(entry: JournalEntry): void {
  const where = `journal entry ${entry?.entryId ?? '?'} (source event ${entry?.sourceEventId ?? '?'})`;
  const fail = (problem: string): never => {
    throw new LedgerInvariantError(`${where}: ${problem}`);
  };
  if (!entry || typeof entry !== 'object') fail('is not an object');
  if (typeof entry.entryId !== 'string' || entry.entryId === '') fail('has no entryId');
  if (typeof entry.sourceEventId !== 'string' || entry.sourceEventId === '') fail('has no sourceEventId');
  if (!isCurrency(entry.currency)) fail(`has unknown currency ${JSON.stringify(entry.currency)}`);
  if (typeof entry.occurredAt !== 'string' || Number.isNaN(Date.parse(entry.occurredAt))) {
    fail(`has an invalid occurredAt ${JSON.stringify(entry.occurredAt)}`);
  }
  if (typeof entry.description !== 'string') fail('has no description');
  if (entry.clientId !== null && typeof entry.clientId !== 'string') fail('has a clientId that is neither a string nor null');
  if (!Array.isArray(entry.lines) || entry.lines.length < 2) fail(`has ${entry.lines?.length ?? 0} line(s); an entry needs at least 2`);

  let sum: DecimalValue = new Decimal(0);
  entry.lines.forEach((line, index) => {
    const at = `line ${index}`;
    if (typeof line?.accountId !== 'string' || line.accountId === '') fail(`${at} has no accountId`);
    const system = parseSystemAccountId(line.accountId);
    if (isSystemAccount(line.accountId) && !system) fail(`${at} names an unknown system account ${line.accountId}`);
    if (system && system.currency !== entry.currency) {
      fail(`${at} mixes currencies: ${line.accountId} in a ${entry.currency} entry`);
    }
    let amount: DecimalValue;
    try {
      amount = parseAmount(line.amount, entry.currency);
    } catch (error) {
      return fail(`${at} (${line.accountId}): ${(error as Error).message}`);
    }
    if (amount.isZero()) fail(`${at} (${line.accountId}) is zero`);
    sum = sum.plus(amount);
  });
  if (!sum.isZero()) fail(`lines sum to ${sum.toString()} ${entry.currency}, not 0`);
}

function field<T extends object>(event: RecordedEvent, data: T, name: keyof T & string, optional = false): string {
  const value = data[name];
  if (typeof value === 'string' && (optional || value !== '')) return value;
  throw new LedgerInvariantError(`${event.type} event ${event.id} on ${event.stream}: data.${name} must be a non-empty string`);
}

function adjustmentEntries(event: RecordedEvent<'AccountAdjusted', AccountAdjustedData>): JournalEntry[] {
  const data = event.data;
  const accountId = field(event, data, 'accountId');
  const currency = field(event, data, 'currency');
  const reason = field(event, data, 'reason', true);
  const adjustmentId = field(event, data, 'adjustmentId');
  let amount: DecimalValue;
  try {
    amount = parseAmount(field(event, data, 'amount'), currency);
  } catch (error) {
    throw new LedgerInvariantError(`AccountAdjusted event ${event.id}: ${(error as Error).message}`);
  }
  if (isSystemAccount(accountId)) throw new LedgerInvariantError(`AccountAdjusted event ${event.id} adjusts system account ${accountId}`);
  return [{
    entryId: entryIdFor(event.id),
    currency,
    occurredAt: field(event, data, 'adjustedAt'),
    description: `Adjustment ${adjustmentId}${reason ? `: ${reason}` : ''}`,
    sourceEventId: event.id,
    clientId: typeof data.clientId === 'string' && data.clientId !== '' ? data.clientId : event.metadata?.clientId ?? null,
    lines: [
      { accountId, amount: formatAmount(amount, currency) },
      { accountId: systemAccountId(currency, 'adjustments'), amount: formatAmount(amount.negated(), currency) },
    ],
  }];
}

function amountField<T extends object>(event: RecordedEvent, data: T, name: keyof T & string, currency: string): DecimalValue {
  try {
    return parseAmount(field(event, data, name), currency);
  } catch (error) {
    if (error instanceof LedgerInvariantError) throw error;
    throw new LedgerInvariantError(`${event.type} event ${event.id}: data.${name}: ${(error as Error).message}`);
  }
}

/** clearing (or suspense) −total, account +net, fees +fee: the credit of a payment's funds to its account. */
function creditEntry(
  event: RecordedEvent, data: { accountId: string; currency: string; totalAmount: string; feeAmount: string; netAmount: string },
  from: 'clearing' | 'suspense', description: string, at: string, clientId: string,
): JournalEntry {
  const currency = field(event, data, 'currency');
  const accountId = field(event, data, 'accountId');
  const total = amountField(event, data, 'totalAmount', currency);
  const fee = amountField(event, data, 'feeAmount', currency);
  const net = amountField(event, data, 'netAmount', currency);
  if (!net.plus(fee).equals(total)) {
    throw new LedgerInvariantError(`${event.type} event ${event.id}: net ${net} + fee ${fee} is not the total ${total}`);
  }
  if (isSystemAccount(accountId)) throw new LedgerInvariantError(`${event.type} event ${event.id} credits system account ${accountId}`);
  const lines: JournalLine[] = [{ accountId: systemAccountId(currency, from), amount: formatAmount(total.negated(), currency) }];
  if (!net.isZero()) lines.push({ accountId, amount: formatAmount(net, currency) });
  if (!fee.isZero()) lines.push({ accountId: systemAccountId(currency, 'fees'), amount: formatAmount(fee, currency) });
  return { entryId: entryIdFor(event.id), currency, occurredAt: at, description, sourceEventId: event.id, clientId, lines };
}

function creditedEntries(event: RecordedEvent<'AccountCredited', AccountCreditedData>): JournalEntry[] {
  const data = event.data;
  const from = field(event, data, 'fundsFrom');
  if (from !== 'clearing' && from !== 'suspense') throw new LedgerInvariantError(`AccountCredited event ${event.id}: unknown fundsFrom ${from}`);
  const batch = data.settlementBatchId ? ` in batch ${data.settlementBatchId}` : '';
  const what = from === 'clearing' ? 'Settlement' : 'Assignment';
  return [creditEntry(event, data, from, `${what} of payment ${field(event, data, 'paymentId')}${batch}`,
    field(event, data, 'at'), field(event, data, 'clientId'))];
}

/**
 * A settlement recorded before the account stream decided credits posts itself; a later one (with its
 * account's `creditEventId`) moved its money on the account's stream and posts nothing here.
 */
function settlementEntries(event: RecordedEvent<'PaymentSettled', PaymentSettledData>): JournalEntry[] {
  const data = event.data;
  if (data.creditEventId !== undefined) return [];
  const batch = data.settlementBatchId ? ` in batch ${data.settlementBatchId}` : '';
  return [creditEntry(event, data, 'clearing', `Settlement of payment ${field(event, data, 'paymentId')}${batch}`,
    field(event, data, 'at'), field(event, data, 'clientId'))];
}

/** A spent hold: account −amount, refunds payable +amount. */
function holdDebitedEntries(event: RecordedEvent<'AccountHoldDebited', AccountHoldDebitedData>): JournalEntry[] {
  const data = event.data;
  const currency = field(event, data, 'currency');
  const accountId = field(event, data, 'accountId');
  const amount = amountField(event, data, 'amount', currency);
  if (!amount.greaterThan(0)) throw new LedgerInvariantError(`AccountHoldDebited event ${event.id}: amount ${amount} is not positive`);
  return [{
    entryId: entryIdFor(event.id), currency, occurredAt: field(event, data, 'at'),
    description: `Hold ${field(event, data, 'holdId')} paid out`, sourceEventId: event.id, clientId: field(event, data, 'clientId'),
    lines: [
      { accountId, amount: formatAmount(amount.negated(), currency) },
      { accountId: systemAccountId(currency, 'refunds_payable'), amount: formatAmount(amount, currency) },
    ],
  }];
}

/** A change of the funds on hold of an account (no money moves, available funds change). */
export interface HoldChange {
  accountId: string;
  currency: string;
  /** Signed decimal string at the currency's scale: + when funds are held, − when a hold ends. */
  delta: string;
  at: string;
}

function holdChange(event: RecordedEvent<string, AccountHoldReleasedData>, sign: 1 | -1): HoldChange[] {
  const data = event.data;
  const currency = field(event, data, 'currency');
  const amount = amountField(event, data, 'amount', currency);
  if (!amount.greaterThan(0)) throw new LedgerInvariantError(`${event.type} event ${event.id}: amount ${amount} is not positive`);
  return [{ accountId: field(event, data, 'accountId'), currency, delta: formatAmount(sign === 1 ? amount : amount.negated(), currency), at: field(event, data, 'at') }];
}

/** The changes of held funds an event makes (none for most events), with `postings`' hold mappers. Pure and deterministic. */
export function holdChangesFor(event: RecordedEvent, postings: LedgerPostings): HoldChange[] {
  const typed = recordedAs<StoredEventData>(event);
  const mapper = handlerOf(postings.holds ?? {}, typed.type);
  return mapper ? mapper(withData(typed)) : [];
}

function unsettledEntries(event: RecordedEvent<'PaymentUnsettled', PaymentUnsettledData>): JournalEntry[] {
  const data = event.data;
  const currency = field(event, data, 'currency');
  const received = amountField(event, data, 'receivedAmount', currency);
  if (received.isZero()) return [];
  return [{
    entryId: entryIdFor(event.id), currency, occurredAt: field(event, data, 'at'),
    description: `Unreconciled funds of payment ${field(event, data, 'paymentId')} (${field(event, data, 'reason')})`,
    sourceEventId: event.id, clientId: field(event, data, 'clientId'),
    lines: [
      { accountId: systemAccountId(currency, 'clearing'), amount: formatAmount(received.negated(), currency) },
      { accountId: systemAccountId(currency, 'suspense'), amount: formatAmount(received, currency) },
    ],
  }];
}

/** An unassigned deposit: clearing −total, suspense +total (its funds wait there until assigned). */
function unassignedDepositEntries(event: RecordedEvent<'DepositReceived', UnassignedDepositData>): JournalEntry[] {
  const data = event.data;
  const currency = field(event, data, 'currency');
  const total = amountField(event, data, 'totalAmount', currency);
  if (!total.greaterThan(0)) throw new LedgerInvariantError(`${event.type} event ${event.id}: totalAmount ${total} is not positive`);
  return [{
    entryId: entryIdFor(event.id), currency, occurredAt: field(event, data, 'createdAt'),
    description: `Unassigned deposit ${field(event, data, 'paymentId')}`, sourceEventId: event.id, clientId: field(event, data, 'clientId'),
    lines: [
      { accountId: systemAccountId(currency, 'clearing'), amount: formatAmount(total.negated(), currency) },
      { accountId: systemAccountId(currency, 'suspense'), amount: formatAmount(total, currency) },
    ],
  }];
}

/**
 * A refund paid out: refunds payable −amount, clearing +amount. A SUSPENSE-funded refund never passed through
 * an account, so a first entry moves its amount from suspense to refunds payable.
 */
function refundSettledEntries(event: RecordedEvent<'RefundSettled', RefundSettledData>): JournalEntry[] {
  const data = event.data;
  const currency = field(event, data, 'currency');
  const amount = amountField(event, data, 'amount', currency);
  if (!amount.greaterThan(0)) throw new LedgerInvariantError(`RefundSettled event ${event.id}: amount ${amount} is not positive`);
  const source = field(event, data, 'fundingSource');
  if (source !== 'ACCOUNT' && source !== 'SUSPENSE') throw new LedgerInvariantError(`RefundSettled event ${event.id}: unknown fundingSource ${source}`);
  const refundId = field(event, data, 'refundId');
  const common = { currency, occurredAt: field(event, data, 'at'), sourceEventId: event.id, clientId: field(event, data, 'clientId') };
  const move = (from: SystemAccountKind, to: SystemAccountKind) => [
    { accountId: systemAccountId(currency, from), amount: formatAmount(amount.negated(), currency) },
    { accountId: systemAccountId(currency, to), amount: formatAmount(amount, currency) },
  ];
  const paidOut = `Refund ${refundId} of payment ${field(event, data, 'parentPaymentId')} paid out`;
  if (source === 'ACCOUNT') return [{ ...common, entryId: entryIdFor(event.id), description: paidOut, lines: move('refunds_payable', 'clearing') }];
  return [
    { ...common, entryId: entryIdFor(event.id, 0), description: `Refund ${refundId} funded from suspense`, lines: move('suspense', 'refunds_payable') },
    { ...common, entryId: entryIdFor(event.id, 1), description: paidOut, lines: move('refunds_payable', 'clearing') },
  ];
}

/**
 * What a context's money events post, keyed by stored event type: each mapper reads its event through the ledger's
 * own contract (src/ledger/events.ts), and keyed by stored event type, the compiler checks that the producer's data
 * satisfies it. Each context's manifest carries its own (src/<context>/module.ts); the ledger projector is built
 * from all of them together (`Registered.postings`).
 */
export interface LedgerPostings {
  /** Event type → its journal entries. */
  readonly entries?: EventHandlers<StoredEventData, [], JournalEntry[]>;
  /** Event type → the changes of held funds it makes (no money moves, available funds change). */
  readonly holds?: EventHandlers<StoredEventData, [], HoldChange[]>;
}

/** The accounts' postings: adjustments, credits of payments' funds, and holds (src/accounts/). */
export const accountPostings: LedgerPostings = {
  entries: {
    [ACCOUNT_ADJUSTED]: adjustmentEntries,
    [ACCOUNT_CREDITED]: creditedEntries,
    [ACCOUNT_HOLD_DEBITED]: holdDebitedEntries,
  },
  holds: {
    [ACCOUNT_FUNDS_HELD]: (event) => holdChange(event, 1),
    [ACCOUNT_HOLD_RELEASED]: (event) => holdChange(event, -1),
    [ACCOUNT_HOLD_DEBITED]: (event) => holdChange(event, -1),
  },
};

/** The payments' postings: settlements recorded before accounts decided credits, unreconciled funds, refunds paid out (src/payments/). */
export const paymentPostings: LedgerPostings = {
  entries: { [PAYMENT_SETTLED]: settlementEntries, [PAYMENT_UNSETTLED]: unsettledEntries, [REFUND_SETTLED]: refundSettledEntries },
};

/** The deposits' postings: an unassigned deposit's funds into suspense (src/deposits/). */
export const depositPostings: LedgerPostings = { entries: { [DEPOSIT_RECEIVED]: unassignedDepositEntries } };

/** Every context's postings as one (a type posted by two contexts is a wiring error, refused at start). */
export function postingsOf(parts: readonly LedgerPostings[]): LedgerPostings {
  return {
    entries: unionOfHandlers(parts.map((p) => p.entries), 'ledger entries'),
    holds: unionOfHandlers(parts.map((p) => p.holds), 'ledger holds'),
  };
}

/** The event types that move or hold money: the ledger projector handles exactly these. */
export function ledgerEventTypesOf(postings: LedgerPostings): StoredEventType[] {
  return [...new Set([...Object.keys(postings.entries ?? {}), ...Object.keys(postings.holds ?? {})] as StoredEventType[])];
}

/** A money event whose data is not an object is malformed: refused as such (never read as if it were empty). */
function withData<E extends RecordedEvent>(event: E): E {
  if (typeof event.data === 'object' && event.data !== null) return event;
  throw new LedgerInvariantError(`${event.type} event ${event.id} on ${event.stream}: data must be an object`);
}

/**
 * The journal entries an event produces (none for an event that moves no money). Pure and deterministic.
 * Every entry returned has passed `assertBalanced`; a malformed money event throws `LedgerInvariantError`.
 */
export function entriesFor(event: RecordedEvent, postings: LedgerPostings): JournalEntry[] {
  const typed = recordedAs<StoredEventData>(event);
  const mapper = handlerOf(postings.entries ?? {}, typed.type);
  if (!mapper) return [];
  const entries = mapper(withData(typed));
  for (const entry of entries) assertBalanced(entry);
  return entries;
}
