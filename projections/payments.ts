/**
 * Read model of payments: one row per payment with every listing filter and sort as a column, the nodes, fees
 * and exchange as JSON, and one row per review document. Every value comes from the events (timestamps
 * included), so a rebuild gives identical rows.
 */
import { CompiledQuery, sql, type ColumnType, type Generated, type Insertable, type Kysely, type RawBuilder, type Selectable, type Updateable } from 'kysely';
import { defineProjector, type LaterWrites, type Projector } from '../src/projection/projector.ts';
import { isOneOf } from '../src/eventstore/typedEvents.ts';
import type { StoredEvent, StoredEventData, StoredEventType } from '../src/storedEvents/registry.ts';
import type { PaymentStatus } from '../src/payments/events.ts';
import type { PaymentFee, PaymentExchange, PaymentFlow, SettlementPeriod } from '../src/payments/events.ts';
import type { PaymentNode } from '../schemas/paymentNodes.ts';
import type { Instant, Json, NullableInstant } from './columns.ts';
import { zeroAmount } from '../src/domain/money.ts';
import { scopedTo, type PageWindow } from '../src/db/owned.ts';
import { PREPARED } from '../src/db/preparedStatements.ts';
import { createTableSql, insertJsonRowsSql, sqlTypeOf as sqlTypeOfDefinition } from '../src/db/jsonRows.ts';
import type { CompanionStatus } from '../src/deposits/events.ts';

/** Statuses a payment can still expire from (directly, or under review having come from one). */
export const EXPIRABLE_STATUSES: readonly PaymentStatus[] = ['CREATED', 'PENDING', 'AUTHORIZED', 'CAPTURED', 'REQUIRES_REVIEW'];

/**
 * The payments table: each column's TypeScript type (kysely `ColumnType`: timestamps are written as the
 * events' ISO strings and read back as Dates, JSON is written as text and read back parsed; numeric amounts
 * are decimal strings both ways).
 */
export interface PaymentsTable {
  payment_id: string;
  client_id: string;
  external_id: string;
  /** Null on a deposit awaiting assignment (as are the account's columns). */
  identity_id: string | null;
  identity_external_id: string | null;
  identity_email: string | null;
  account_id: string | null;
  account_number: string | null;
  total_amount: string;
  currency: string;
  description: string | null;
  product: string | null;
  type: string;
  /** A payment's status, or a deposit companion's (which may also be CANCELLED). */
  status: PaymentStatus | CompanionStatus;
  resume_status: PaymentStatus | null;
  purchase_amount: string | null;
  purchase_currency: string | null;
  exchange: ColumnType<PaymentExchange | null, string | null, string | null>;
  origins: Json<PaymentNode[]>;
  destinations: Json<PaymentNode[]>;
  fees: Json<PaymentFee[]>;
  fee_amount: string;
  flow: PaymentFlow;
  method: string | null;
  settlement: SettlementPeriod;
  customer_id: string | null;
  checkout_session_id: string | null;
  expires_at: NullableInstant;
  payable_until: NullableInstant;
  created_at: Instant;
  updated_at: Instant;
  authorized_at: NullableInstant;
  captured_at: NullableInstant;
  received_at: NullableInstant;
  received_amount: string | null;
  settled_at: NullableInstant;
  expired_at: NullableInstant;
  unsettled_at: NullableInstant;
  unsettled_reason: string | null;
  failed_at: NullableInstant;
  failure_reason: string | null;
  settlement_batch_id: string | null;
  review_documents: Generated<number>;
  /** When a refund of the payment last settled (the payment itself stays SETTLED). */
  refunded_at: NullableInstant;
  /** An assigned deposit's: PAID, UNDERPAID or OVERPAID. */
  reconciliation_status: string | null;
  /** A deposit's companion child, and the companion's deposit. */
  related_payment_id: string | null;
  /** A child's parent (a deposit's companion, a refund child). */
  parent_payment_id: string | null;
  /** The test clock the payment was created under (its rules of time read that clock), or null. */
  test_clock_id: string | null;
}

/**
 * The same columns' SQL definitions, in table order (the compiler checks that they are exactly the columns of
 * `PaymentsTable`): the CREATE TABLE, the insert of new rows, the casts of a patch and how a written row reads back
 * derive from them.
 */
const paymentColumns = {
  payment_id: 'text PRIMARY KEY',
  client_id: 'text NOT NULL',
  external_id: 'text NOT NULL',
  identity_id: 'text',
  identity_external_id: 'text',
  identity_email: 'text',
  account_id: 'text',
  account_number: 'text',
  total_amount: 'numeric NOT NULL',
  currency: 'text NOT NULL',
  description: 'text',
  product: 'text',
  type: 'text NOT NULL',
  status: 'text NOT NULL',
  resume_status: 'text',
  purchase_amount: 'text',
  purchase_currency: 'text',
  exchange: 'jsonb',
  origins: 'jsonb NOT NULL',
  destinations: 'jsonb NOT NULL',
  fees: 'jsonb NOT NULL',
  fee_amount: 'text NOT NULL',
  flow: 'text NOT NULL',
  method: 'text',
  settlement: 'text NOT NULL',
  customer_id: 'text',
  checkout_session_id: 'text',
  expires_at: 'timestamptz',
  payable_until: 'timestamptz',
  created_at: 'timestamptz NOT NULL',
  updated_at: 'timestamptz NOT NULL',
  authorized_at: 'timestamptz',
  captured_at: 'timestamptz',
  received_at: 'timestamptz',
  received_amount: 'text',
  settled_at: 'timestamptz',
  expired_at: 'timestamptz',
  unsettled_at: 'timestamptz',
  unsettled_reason: 'text',
  failed_at: 'timestamptz',
  failure_reason: 'text',
  settlement_batch_id: 'text',
  review_documents: 'integer NOT NULL DEFAULT 0',
  refunded_at: 'timestamptz',
  reconciliation_status: 'text',
  related_payment_id: 'text',
  parent_payment_id: 'text',
  test_clock_id: 'text',
} as const satisfies Record<keyof PaymentsTable, string>;

type PaymentColumn = keyof typeof paymentColumns;

/** The SQL type of a column: the first word of its definition. */
const sqlTypeOf = (column: PaymentColumn) => sqlTypeOfDefinition(paymentColumns[column]);
const columnsOfType = (type: string) => (Object.keys(paymentColumns) as PaymentColumn[]).filter((column) => sqlTypeOf(column) === type);

/** One row per review document of a payment. */
export interface PaymentDocumentsTable {
  document_id: string;
  payment_id: string;
  client_id: string;
  type: string;
  url: string | null;
  content_type: string | null;
  created_at: Instant;
}

/**
 * How many of a client's payments have each value of a listing filter (`dimension` '' and value '': all of them):
 * the `total` of a page filtered by at most one of them, without counting the matches. Every statement of this
 * projector that writes payments moves the counts in the same statement (`COUNTED`), from the rows it wrote (and,
 * for an update, the rows as they were).
 */
export interface PaymentCountsTable {
  client_id: string;
  dimension: string;
  value: string;
  n: string;
}

export type PaymentTables = { payments: PaymentsTable; payment_documents: PaymentDocumentsTable; payment_counts: PaymentCountsTable };
export type PaymentRow = Selectable<PaymentsTable>;

/** The filters a count is kept for, as columns of the payments table. */
const COUNTED_FILTERS = ['status', 'identity_id', 'account_number', 'type'] as const;
type CountedFilter = (typeof COUNTED_FILTERS)[number];
/** What a statement's written rows give back to be counted. */
const COUNTED_COLUMNS = ['client_id', ...COUNTED_FILTERS] as const;
/** The counted columns of the rows named `alias`, for a SELECT list or a RETURNING clause. */
const countedOf = (alias: string) => sql.raw(COUNTED_COLUMNS.map((column) => `${alias}.${column}`).join(', '));

/** Each row of `rows` once per kept count it belongs to, with `sign` (1 or -1): a row without a value has no count of it. */
function countedValues(rows: string, sign: 1 | -1): string {
  const dimensions = ["('', '')", ...COUNTED_FILTERS.map((column) => `('${column}', r.${column})`)].join(', ');
  return `SELECT r.client_id, d.dimension, d.value, ${sign} AS n FROM ${rows} r, LATERAL (VALUES ${dimensions}) AS d(dimension, value)
           WHERE d.value IS NOT NULL`;
}

/** The CTE body that adds `changes` (rows of client_id, dimension, value, n) to the counts, answering each count moved. */
function countedUpsert(changes: string): string {
  return `INSERT INTO payment_counts AS c (client_id, dimension, value, n)
    SELECT client_id, dimension, value, sum(n) FROM (${changes}) AS change
     GROUP BY client_id, dimension, value HAVING sum(n) <> 0
    ON CONFLICT (client_id, dimension, value) DO UPDATE SET n = c.n + EXCLUDED.n
    RETURNING c.client_id, c.dimension, c.value, c.n`;
}

/** A statement's counts as they are after it: none below zero, and a count that reached zero has no row. */
async function settleCounts(
  trx: Kysely<PaymentTables>, counted: ReadonlyArray<{ client_id: string; dimension: string; value: string; n: string | number }>,
): Promise<void> {
  // Below zero: a payment left a value it was never counted in, so the read model is broken.
  const broken = counted.find((row) => Number(row.n) < 0);
  if (broken) throw new Error(`payments projector: the count of ${broken.client_id}'s payments by ${broken.dimension || 'all'} ${broken.value} fell below zero`);
  // A value no payment has any more has no row, as in a rebuild that never saw it: the two compare equal.
  const emptied = counted.filter((row) => Number(row.n) === 0);
  if (emptied.length === 0) return;
  await sql`DELETE FROM payment_counts c USING jsonb_to_recordset(${JSON.stringify(emptied)}::jsonb) AS e(client_id text, dimension text, value text)
    WHERE c.client_id = e.client_id AND c.dimension = e.dimension AND c.value = e.value AND c.n = 0`.execute(trx);
}

/**
 * An update of payments whose CTEs `ctes` end with `old` (the rows to change, as they are) and `updated` (them as
 * changed, RETURNING the counted columns): the counts move in the same statement. Answers how many rows changed.
 */
async function countedUpdate(trx: Kysely<PaymentTables>, ctes: RawBuilder<unknown>): Promise<number> {
  // Its text does not change from one batch to the next (the rows are arrays): planned once per connection.
  const { rows } = await sql<{ updated: number; counted: Array<{ client_id: string; dimension: string; value: string; n: number }> | null }>`${sql.raw(PREPARED)}
    WITH ${ctes},
    counted AS (${sql.raw(countedUpsert(`${countedValues('updated', 1)} UNION ALL ${countedValues('old', -1)}`))})
    SELECT (SELECT count(*) FROM updated)::integer AS updated, (SELECT json_agg(counted) FROM counted) AS counted`.execute(trx);
  await settleCounts(trx, rows[0]!.counted ?? []);
  return rows[0]!.updated;
}

async function setupCounts(trx: Kysely<PaymentTables>): Promise<void> {
  await sql`
    CREATE TABLE payment_counts (
      client_id text   NOT NULL,
      dimension text   NOT NULL,
      value     text   NOT NULL,
      n         bigint NOT NULL,
      PRIMARY KEY (client_id, dimension, value)
    )`.execute(trx);
}

async function setup(trx: Kysely<PaymentTables>): Promise<void> {
  await sql.raw(createTableSql('payments', paymentColumns)).execute(trx);
  // A client's externalId names one payment. A refund child's externalId is its own id, which the client did not
  // choose and may have used for a payment of its own: children are left out (their ids are unique anyway).
  await sql.raw(`CREATE UNIQUE INDEX payments_client_external ON payments (client_id, external_id) WHERE ${NOT_A_REFUND_CHILD}`).execute(trx);
  // The default listing order, and each filter followed by that order, so a filtered page is an index range.
  await sql`CREATE INDEX payments_client_created ON payments (client_id, created_at DESC, payment_id DESC)`.execute(trx);
  for (const column of ['status', 'identity_id', 'account_number', 'type']) {
    await sql.raw(`CREATE INDEX payments_client_${column} ON payments (client_id, ${column}, created_at DESC, payment_id DESC)`).execute(trx);
  }
  await sql`CREATE INDEX payments_client_checkout ON payments (client_id, checkout_session_id) WHERE checkout_session_id IS NOT NULL`.execute(trx);
  // The jobs' work queues: received payments waiting for a settlement batch, payable ones waiting to expire.
  await sql`CREATE INDEX payments_awaiting_batch ON payments (received_at) WHERE status = 'RECEIVED' AND settlement <> 'INSTANT'`.execute(trx);
  // A test clock's objects, for the effects its advances run.
  await sql`CREATE INDEX payments_test_clock ON payments (test_clock_id, status) WHERE test_clock_id IS NOT NULL`.execute(trx);
  await sql.raw(`CREATE INDEX payments_payable_until ON payments (payable_until)
    WHERE status IN (${EXPIRABLE_STATUSES.map((s) => `'${s}'`).join(', ')}) AND payable_until IS NOT NULL`).execute(trx);
  // The companions' expiry queue: amounts still due of underpaid deposits (src/deposits/jobs.ts).
  await sql`CREATE INDEX payments_companions_due ON payments (expires_at)
    WHERE status = 'CREATED' AND type = 'LOCAL_DEPOSIT' AND parent_payment_id IS NOT NULL`.execute(trx);
  await sql`
    CREATE TABLE payment_documents (
      document_id  text PRIMARY KEY,
      payment_id   text NOT NULL,
      client_id    text NOT NULL,
      type         text NOT NULL,
      url          text,
      content_type text,
      created_at   timestamptz NOT NULL
    )`.execute(trx);
  await sql`CREATE INDEX payment_documents_payment ON payment_documents (payment_id, created_at)`.execute(trx);
  await setupCounts(trx);
  await sql.raw(INSERT_FUNCTION_SQL).execute(trx);
}

type Data<T extends StoredEventType> = StoredEventData[T];

const NOT_A_REFUND_CHILD = `NOT (type = 'REFUND' AND parent_payment_id IS NOT NULL)`;

/**
 * A refund child (src/payments/refunds) as a payment of type REFUND (interface, States: the refund child): its
 * parent named as `parent_payment_id` and `related_payment_id`, its own id as `external_id`, the account that pays
 * it out (none when funded from suspense); the parent's account number is copied in by `applyBatch`.
 */
function refundChildRow(d: Data<'RefundCreated'>): NewPayment {
  return {
    payment_id: d.refundId, client_id: d.clientId, external_id: d.refundId, identity_id: d.identityId, identity_external_id: null,
    identity_email: d.identityEmail, account_id: d.funding.source === 'ACCOUNT' ? d.funding.accountId : null, account_number: null,
    total_amount: d.totalAmount, currency: d.currency, description: d.description, product: null, type: 'REFUND', status: 'RECEIVED',
    resume_status: null, purchase_amount: null, purchase_currency: null, exchange: null, origins: '[]', destinations: '[]', fees: '[]',
    fee_amount: zeroAmount(d.currency), flow: 'PUSH', method: null, settlement: 'INSTANT', customer_id: d.customerId,
    checkout_session_id: null, expires_at: null, payable_until: null, created_at: d.createdAt, updated_at: d.createdAt,
    authorized_at: null, captured_at: null, received_at: d.createdAt, received_amount: null, settled_at: null, expired_at: null,
    unsettled_at: null, unsettled_reason: null, failed_at: null, failure_reason: null, settlement_batch_id: null, review_documents: 0,
    refunded_at: null, reconciliation_status: null, related_payment_id: d.parentPaymentId, parent_payment_id: d.parentPaymentId,
    test_clock_id: null,
  };
}

/** A payments row with the columns every payment has, for a LOCAL_DEPOSIT that the payments context did not create. */
function localDepositRow(fields: {
  paymentId: string; clientId: string; externalId: string; totalAmount: string; currency: string; description: string;
  status: PaymentStatus; customerId: string | null; createdAt: string; expiresAt: string | null; accountId: string | null;
  accountNumber: string | null; identityId: string | null; parentPaymentId: string | null; relatedPaymentId: string | null;
  reconciliationStatus: string | null; receivedAmount: string | null; testClockId?: string | null;
}): NewPayment {
  const f = fields;
  return {
    payment_id: f.paymentId, client_id: f.clientId, external_id: f.externalId, identity_id: f.identityId, identity_external_id: null,
    identity_email: null, account_id: f.accountId, account_number: f.accountNumber, total_amount: f.totalAmount, currency: f.currency,
    description: f.description, product: null, type: 'LOCAL_DEPOSIT', status: f.status, resume_status: null, purchase_amount: null,
    purchase_currency: null, exchange: null, origins: '[]', destinations: '[]', fees: '[]', fee_amount: zeroAmount(f.currency),
    flow: 'PUSH', method: null, settlement: 'INSTANT', customer_id: f.customerId, checkout_session_id: null, expires_at: f.expiresAt,
    // Not the payments' expiry queue: the deposits' own job expires an unassigned deposit.
    payable_until: null,
    created_at: f.createdAt, updated_at: f.createdAt, authorized_at: null, captured_at: null,
    received_at: f.receivedAmount === null ? null : f.createdAt, received_amount: f.receivedAmount,
    settled_at: f.status === 'SETTLED' ? f.createdAt : null, expired_at: null, unsettled_at: null, unsettled_reason: null, failed_at: null,
    failure_reason: null, settlement_batch_id: null, review_documents: 0, refunded_at: null, reconciliation_status: f.reconciliationStatus,
    related_payment_id: f.relatedPaymentId, parent_payment_id: f.parentPaymentId, test_clock_id: f.testClockId ?? null,
  };
}

/**
 * A deposit without a destination (src/deposits, its own read model in projections/deposits.ts) is a payment too:
 * its row on receipt, its companion child's on creation, and what its assignment sets.
 */
const receivedDepositRow = (d: Data<'DepositReceived'>) => localDepositRow({
  ...d, description: `Deposit ${d.providerDepositId} to ${d.reference}`, status: 'CREATED', accountId: null, accountNumber: null,
  identityId: null, parentPaymentId: null, relatedPaymentId: null, reconciliationStatus: null,
  // The funds arrived with the notification.
  receivedAmount: d.totalAmount,
});

const companionRow = (d: Data<'DepositCompanionCreated'>) => localDepositRow({
  ...d, description: `${d.kind === 'UNDERPAID' ? 'Amount still due' : 'Surplus'} of deposit ${d.parentPaymentId}`,
  relatedPaymentId: d.parentPaymentId, reconciliationStatus: null, receivedAmount: null,
});

const assignedDepositChanges = (d: Data<'DepositAssigned'>): PaymentChanges => ({
  account_id: d.accountId, account_number: d.accountNumber, identity_id: d.identityId, reconciliation_status: d.reconciliationStatus,
  related_payment_id: d.relatedPaymentId, updated_at: d.at,
});

const REFUND_ENDS = ['RefundSettled', 'RefundFailed', 'RefundUnsettled', 'RefundExpired'] as const satisfies readonly StoredEventType[];
type RefundEnd = (typeof REFUND_ENDS)[number];

/** What a refund child's end sets on its row. */
const refundEndStamps: { [K in RefundEnd]: (d: Data<K>) => PaymentChanges } = {
  RefundSettled: (d) => ({ settled_at: d.at }),
  RefundFailed: (d) => ({ failed_at: d.at, failure_reason: d.reason }),
  RefundUnsettled: (d) => ({ unsettled_at: d.at, unsettled_reason: d.reason }),
  RefundExpired: (d) => ({ expired_at: d.at }),
};
const refundEndStamp = <K extends RefundEnd>(type: K, data: Data<K>) => refundEndStamps[type](data);

/** Columns a status change or a document can set after creation. */
const PATCHABLE = [
  'status', 'updated_at', 'resume_status', 'authorized_at', 'captured_at', 'received_at', 'received_amount', 'settled_at',
  'settlement_batch_id', 'unsettled_at', 'unsettled_reason', 'expired_at', 'failed_at', 'failure_reason',
  'refunded_at',
  // An unassigned deposit gets its account when it is assigned (`assignedDepositChanges`).
  'account_id', 'account_number', 'identity_id', 'reconciliation_status', 'related_payment_id',
] as const satisfies readonly PaymentColumn[];

/** What a status change or a document sets (besides the count of documents). */
export type PaymentChanges = Pick<Updateable<PaymentsTable>, (typeof PATCHABLE)[number]>;
export type NewPayment = Insertable<PaymentsTable>;

/** Rows per INSERT: 47 columns each stays far below Postgres' 65,535 parameters. */
const INSERT_CHUNK = 500;

/**
 * New rows inserted from one JSON array of them (src/db/jsonRows.ts), the counts moving in the same statement; it
 * answers the counts moved (INSERT_COUNTED_SQL) or only how many (INSERT_COUNTING_SQL, for a write that goes with
 * the COMMIT).
 */
const INSERT_ROWS_SQL = insertJsonRowsSql('payments', paymentColumns, `RETURNING ${COUNTED_COLUMNS.join(', ')}`, {
  // A refund child whose parent the batch did not touch: the parent's row, older, has its account number.
  account_number: `coalesce(x.account_number, CASE WHEN x.type = 'REFUND'
    THEN (SELECT p.account_number FROM payments p WHERE p.payment_id = x.parent_payment_id) END)`,
});
const insertingAndCounting = (rows: string) =>
  `WITH inserted AS (${INSERT_ROWS_SQL.replace('$1::json', () => rows)}), counted AS (${countedUpsert(countedValues('inserted', 1))})`;
const INSERT_COUNTED_SQL = `${PREPARED} ${insertingAndCounting('$1::json')} SELECT * FROM counted`;
/**
 * The insert that goes with the COMMIT is written into a simple query, where Postgres plans every statement at each
 * call: this one took about as long to plan as to run (0.3 ms a batch). In a PL/pgSQL function of the version's own
 * schema it is planned once per connection; the function keeps the search_path it was created with (the version's
 * schema, then the main one), so a batch's search_path, which lists the batch's projectors, cannot make it plan again.
 * A replay creates its rebuilt schema's own (setup).
 */
const INSERT_FUNCTION_SQL = `CREATE FUNCTION insert_payment_rows(new_rows json) RETURNS bigint
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $function$
  DECLARE counted_rows bigint;
  BEGIN
    ${insertingAndCounting('new_rows')} SELECT count(*) INTO counted_rows FROM counted;
    RETURN counted_rows;
  END
  $function$`;
const INSERT_COUNTING_SQL = 'SELECT insert_payment_rows($1::json)';

function createdRow(d: Data<'PaymentCreated'>): NewPayment {
  const payableUntil = [d.expiresAt, d.exchange?.quoteExpiresAt].filter((t): t is string => !!t)
    .sort((a, b) => Date.parse(a) - Date.parse(b))[0] ?? null;
  return {
    payment_id: d.paymentId, client_id: d.clientId, external_id: d.externalId, identity_id: d.identityId,
    identity_external_id: d.identityExternalId, identity_email: d.identityEmail, account_id: d.accountId,
    account_number: d.accountNumber, total_amount: d.totalAmount, currency: d.currency, description: d.description,
    product: d.product, type: d.type, status: 'CREATED', resume_status: null, purchase_amount: d.purchaseAmount,
    purchase_currency: d.purchaseCurrency, exchange: d.exchange ? JSON.stringify(d.exchange) : null,
    origins: JSON.stringify(d.origins), destinations: JSON.stringify(d.destinations), fees: JSON.stringify(d.fees),
    fee_amount: d.feeAmount, flow: d.flow, method: d.method, settlement: d.settlement, customer_id: d.customerId,
    checkout_session_id: d.checkoutSessionId, expires_at: d.expiresAt, payable_until: payableUntil,
    created_at: d.createdAt, updated_at: d.createdAt, authorized_at: null, captured_at: null, received_at: null,
    received_amount: null, settled_at: null, expired_at: null, unsettled_at: null, unsettled_reason: null,
    failed_at: null, failure_reason: null, settlement_batch_id: null, review_documents: 0, refunded_at: null,
    reconciliation_status: null, related_payment_id: null, parent_payment_id: null, test_clock_id: d.testClockId ?? null,
  };
}

const STATUS_CHANGES = [
  'PaymentPending', 'PaymentAuthorized', 'PaymentCaptured', 'PaymentReceived', 'PaymentSettled', 'PaymentUnsettled', 'PaymentExpired',
  'PaymentFailed', 'PaymentReviewRequired', 'PaymentReviewApproved', 'PaymentReviewRejected', 'DepositCompanionCancelled',
] as const satisfies readonly StoredEventType[];
type StatusChange = (typeof STATUS_CHANGES)[number];

/** What a status change sets besides `status` and `updated_at`. */
const stamps: { [K in StatusChange]: (d: Data<K>) => PaymentChanges } = {
  PaymentPending: () => ({}),
  PaymentAuthorized: (d) => ({ authorized_at: d.at }),
  PaymentCaptured: (d) => ({ captured_at: d.at }),
  PaymentReceived: (d) => ({ received_at: d.at, received_amount: d.receivedAmount }),
  PaymentSettled: (d) => ({ settled_at: d.at, settlement_batch_id: d.settlementBatchId }),
  PaymentUnsettled: (d) => ({
    unsettled_at: d.at, unsettled_reason: d.reason, settlement_batch_id: d.settlementBatchId,
  }),
  PaymentExpired: (d) => ({ expired_at: d.at }),
  PaymentFailed: (d) => ({ failed_at: d.at, failure_reason: d.reason }),
  PaymentReviewRequired: (d) => ({ resume_status: d.from }),
  PaymentReviewApproved: () => ({ resume_status: null }),
  PaymentReviewRejected: (d) => ({ resume_status: null, failed_at: d.at, failure_reason: 'REVIEW_REJECTED' }),
  // A deposit's companion: the client cancelled the amount still due (src/deposits/events.ts).
  DepositCompanionCancelled: () => ({}),
};
const stamp = <K extends StatusChange>(type: K, data: Data<K>) => stamps[type](data);

interface Patch {
  set: PaymentChanges;
  documents: number;
}

/** A document as the batch writes it: its payment's client is joined in by the statement. */
type DocumentRow = Omit<Insertable<PaymentDocumentsTable>, 'client_id'>;

/**
 * A batch folded per payment: payments created in it become whole rows (later events of the batch already
 * applied), the others one patch each; documents are rows of their own. Three statements for any batch size
 * instead of one per event, which is what a rebuild or a burst of creates needs.
 */
function fold(events: readonly StoredEvent[]): { created: Map<string, NewPayment>; patches: Map<string, Patch>; documents: DocumentRow[] } {
  const created = new Map<string, NewPayment>();
  const patches = new Map<string, Patch>();
  const documents: DocumentRow[] = [];
  const refundChildren: string[] = [];
  for (const event of events) {
    if (event.type === 'PaymentCreated') {
      const d = event.data;
      created.set(d.paymentId, createdRow(d));
      continue;
    }
    if (event.type === 'RefundCreated') {
      const row = refundChildRow(event.data);
      created.set(row.payment_id, row);
      refundChildren.push(row.payment_id);
      continue;
    }
    if (event.type === 'DepositReceived' || event.type === 'DepositCompanionCreated') {
      const row = event.type === 'DepositReceived' ? receivedDepositRow(event.data) : companionRow(event.data);
      created.set(row.payment_id, row);
      continue;
    }
    let paymentId: string;
    const change: Patch = { set: {}, documents: 0 };
    if (event.type === 'PaymentDocumentAttached') {
      const d = event.data;
      paymentId = d.paymentId;
      change.set.updated_at = d.document.attachedAt;
      change.documents = 1;
      documents.push({ document_id: d.document.documentId, payment_id: d.paymentId, type: d.document.type,
        url: d.document.url, content_type: d.document.contentType, created_at: d.document.attachedAt });
    } else if (event.type === 'PaymentRefundSettled') {
      // A refund child settled: the parent stays SETTLED and records when it was (last) refunded.
      const d = event.data;
      paymentId = d.paymentId;
      Object.assign(change.set, { refunded_at: d.at, updated_at: d.at });
    } else if (isOneOf(event, REFUND_ENDS)) {
      const d = event.data;
      paymentId = d.refundId;
      // The end events' contracts record `to` as text; the refund decider only ever writes a refund status there.
      Object.assign(change.set, { status: d.to as PaymentStatus, updated_at: d.at }, refundEndStamp(event.type, d));
    } else if (event.type === 'DepositAssigned') {
      paymentId = event.data.paymentId;
      Object.assign(change.set, assignedDepositChanges(event.data));
    } else if (isOneOf(event, STATUS_CHANGES)) {
      const d = event.data;
      paymentId = d.paymentId;
      Object.assign(change.set, { status: d.to, updated_at: d.at }, stamp(event.type, d));
    } else {
      continue;
    }
    const row = created.get(paymentId);
    if (row) {
      Object.assign(row, change.set);
      row.review_documents = (row.review_documents ?? 0) + change.documents;
    } else {
      const patch = patches.get(paymentId) ?? { set: {}, documents: 0 };
      Object.assign(patch.set, change.set);
      patch.documents += change.documents;
      patches.set(paymentId, patch);
    }
  }
  // A refund child shows the account number of its parent (which pays it out), as the parent is at the end of the
  // batch: from the batch when it creates or changes that number; otherwise the insert reads the parent's row.
  for (const childId of refundChildren) {
    const child = created.get(childId)!;
    const parentId = child.parent_payment_id!;
    const parent = created.get(parentId);
    const patched = patches.get(parentId)?.set;
    if (parent) {
      // A parent created in the batch has no row yet for the insert to read: none means none (an unassigned deposit).
      child.account_number = parent.account_number ?? null;
    } else if (patched && 'account_number' in patched) {
      // Null here would send the insert to the parent's row as it was before the batch; no event takes a number away.
      if (!patched.account_number) throw new Error(`payments projector: refund ${childId}'s parent ${parentId} lost its account number`);
      child.account_number = patched.account_number;
    }
  }
  return { created, patches, documents };
}

const patchAssignments = PATCHABLE
  .map((column) => `${column} = CASE WHEN x.patch ? '${column}' THEN (x.patch->>'${column}')::${sqlTypeOf(column)} ELSE p.${column} END`)
  .join(',\n    ');

async function applyBatch(trx: Kysely<PaymentTables>, events: readonly StoredEvent[], later: LaterWrites): Promise<void> {
  const { created, patches, documents } = fold(events);
  const rows = [...created.values()];
  // New rows only add to the counts, so there is nothing to settle after their insert; when nothing later in the
  // batch reads what it answers (a document's owner, counted), the insert goes with the COMMIT.
  const insertLater = documents.length === 0;
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    const chunk = JSON.stringify(rows.slice(i, i + INSERT_CHUNK));
    if (insertLater) await later.add(CompiledQuery.raw(INSERT_COUNTING_SQL, [chunk]));
    else await settleCounts(trx, (await trx.executeQuery<PaymentCountsTable>(CompiledQuery.raw(INSERT_COUNTED_SQL, [chunk]))).rows);
  }
  if (patches.size > 0) {
    const ids = [...patches.keys()];
    const updated = await countedUpdate(trx, sql`
      x AS (SELECT * FROM unnest(${ids}::text[], ${ids.map((id) => JSON.stringify(patches.get(id)!.set))}::jsonb[],
                  ${ids.map((id) => patches.get(id)!.documents)}::integer[]) AS x(payment_id, patch, documents)),
      old AS (SELECT ${countedOf('p')} FROM payments p JOIN x USING (payment_id)),
      updated AS (
        UPDATE payments AS p SET
          ${sql.raw(patchAssignments)},
          review_documents = p.review_documents + x.documents
        FROM x WHERE p.payment_id = x.payment_id
        RETURNING ${countedOf('p')})`);
    // Every change follows its PaymentCreated in the feed; a missing row means the read model is broken.
    if (updated !== ids.length) {
      throw new Error(`payments projector: ${ids.length - updated} status change(s) for payments without a row`);
    }
  }
  if (documents.length > 0) {
    const inserted = await sql`
      INSERT INTO payment_documents (document_id, payment_id, client_id, type, url, content_type, created_at)
      SELECT d.document_id, d.payment_id, p.client_id, d.type, d.url, d.content_type, d.created_at
        FROM unnest(${documents.map((d) => d.document_id)}::text[], ${documents.map((d) => d.payment_id)}::text[],
                    ${documents.map((d) => d.type)}::text[], ${documents.map((d) => d.url)}::text[],
                    ${documents.map((d) => d.content_type)}::text[], ${documents.map((d) => d.created_at)}::timestamptz[])
             AS d(document_id, payment_id, type, url, content_type, created_at)
        JOIN payments p USING (payment_id)`.execute(trx);
    if (Number(inserted.numAffectedRows) !== documents.length) {
      throw new Error('payments projector: a review document for a payment without a row');
    }
  }
}

const JSON_COLUMNS = columnsOfType('jsonb');
const TIME_COLUMNS = columnsOfType('timestamptz');

/**
 * The row this projector writes for a payment whose whole history is `events`, as a query reads it back:
 * what a create answers without reading the row it just caused.
 */
export function paymentRowOf(events: readonly StoredEvent[]): PaymentRow {
  const { created, patches } = fold(events);
  const row = created.values().next().value;
  if (!row || created.size !== 1 || patches.size > 0) throw new Error('paymentRowOf needs one payment\'s history from its PaymentCreated on');
  const read: Record<string, unknown> = { ...row };
  for (const column of JSON_COLUMNS) read[column] = row[column] === null ? null : JSON.parse(row[column] as string);
  for (const column of TIME_COLUMNS) read[column] = row[column] === null ? null : new Date(row[column] as string);
  return read as unknown as PaymentRow;
}

export const paymentsProjector: Projector = defineProjector<PaymentTables, StoredEventData>({
  name: 'payments',
  // 2: refunded_at (the last settled refund of the payment); deposits and their companions (projections/deposits.ts).
  // 3: refund children as payments of type REFUND.
  // 4: the test clock of a payment (test_clock_id).
  // 5: a deposit's UNDERPAID companion expires (expires_at, the expiry queue's index) and can be CANCELLED.
  // 6: not released (a first form of payment_counts, kept by triggers).
  // 7: payment_counts, the totals of a client's list by each filter.
  // 8: insert_payment_rows, the insert that goes with the COMMIT, planned once per connection.
  version: 8,
  tables: ['payments', 'payment_documents', 'payment_counts'],
  handles: ['PaymentCreated', 'PaymentDocumentAttached', 'PaymentRefundSettled', 'RefundCreated', ...REFUND_ENDS, ...STATUS_CHANGES,
    'DepositReceived', 'DepositCompanionCreated', 'DepositAssigned'],
  setup,
  apply: applyBatch,
});

/**
 * The ORDER BY of each sort field (ties are broken by id in the same direction, so pages never overlap). Only
 * `expires_at` can be absent, so only it says NULLS LAST: on the other columns that clause would not match the
 * indexes (built DESC, nulls first) and force a sort of every match.
 */
const sortOrders: Record<PaymentSortField, (direction: 'asc' | 'desc') => string> = {
  createdAt: (d) => `created_at ${d}`, updatedAt: (d) => `updated_at ${d}`, totalAmount: (d) => `total_amount ${d}`,
  status: (d) => `status ${d}`, type: (d) => `type ${d}`, externalId: (d) => `external_id ${d}`,
  expiresAt: (d) => `expires_at ${d} NULLS LAST`,
};
export type PaymentSortField = 'createdAt' | 'updatedAt' | 'totalAmount' | 'status' | 'type' | 'externalId' | 'expiresAt';

/** The filters of a client's list of payments: exact matches, and the creation time's half-open range. */
export interface PaymentFilters {
  identityId?: string; type?: string; accountNumber?: string; status?: PaymentsTable['status']; checkoutSessionId?: string; from?: Date; before?: Date;
}

/** One page of a client's payments in the given order (ties broken by id, the same way), and how many match. */
export async function paymentsPage<DB extends PaymentTables>(
  db: Kysely<DB>, clientId: string, filters: PaymentFilters, sort: { field: PaymentSortField; direction: 'asc' | 'desc' }, page: PageWindow,
): Promise<{ rows: PaymentRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<PaymentTables>, 'payments', clientId);
  if (filters.identityId) filtered = filtered.where('identity_id', '=', filters.identityId);
  if (filters.type) filtered = filtered.where('type', '=', filters.type);
  if (filters.accountNumber) filtered = filtered.where('account_number', '=', filters.accountNumber);
  if (filters.status) filtered = filtered.where('status', '=', filters.status);
  if (filters.checkoutSessionId) filtered = filtered.where('checkout_session_id', '=', filters.checkoutSessionId);
  if (filters.from) filtered = filtered.where('created_at', '>=', filters.from);
  if (filters.before) filtered = filtered.where('created_at', '<', filters.before);
  const kept = keptCount(filters);
  const counted = async () => Number((await filtered.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst())?.n ?? 0);
  const [rows, total] = await Promise.all([
    filtered.orderBy(sql.raw(sortOrders[sort.field](sort.direction))).orderBy('payment_id', sort.direction)
      .limit(page.limit).offset(page.offset).execute(),
    kept ? keptTotal(db as unknown as Kysely<PaymentTables>, clientId, kept).then((n) => n ?? counted()) : counted(),
  ]);
  return { rows, total };
}

/**
 * Until when (ms) the read models of a database have no kept counts: an upgrade from a version without them serves
 * the older version while the new one builds, and its lists count their matches meanwhile.
 */
const countsMissingUntil = new WeakMap<object, number>();
/** How long a missing table of counts is assumed missing before it is looked for again, in ms. */
const COUNTS_RECHECK_MS = 5_000;

/** The kept count, or null when the serving version keeps none. */
async function keptTotal(db: Kysely<PaymentTables>, clientId: string, kept: { dimension: string; value: string }): Promise<number | null> {
  if ((countsMissingUntil.get(db) ?? 0) > Date.now()) return null;
  try {
    const row = await db.selectFrom('payment_counts').select('n')
      .where('client_id', '=', clientId).where('dimension', '=', kept.dimension).where('value', '=', kept.value).executeTakeFirst();
    return Number(row?.n ?? 0);
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNDEFINED_TABLE) throw error;
    countsMissingUntil.set(db, Date.now() + COUNTS_RECHECK_MS);
    return null;
  }
}

/** Postgres's SQLSTATE for a relation that does not exist. */
const UNDEFINED_TABLE = '42P01';

/** The kept count that is a page's total: filtered by at most one of the counted filters, and nothing else. */
function keptCount(filters: PaymentFilters): { dimension: '' | CountedFilter; value: string } | null {
  if (filters.checkoutSessionId || filters.from || filters.before) return null;
  // A filter counts as given exactly as the list query applies it (a present, non-empty value).
  const given = COUNTED_FILTERS.filter((column) => Boolean(filters[FILTER_OF[column]]));
  if (given.length === 0) return { dimension: '', value: '' };
  if (given.length > 1) return null;
  const [column] = given as [CountedFilter];
  return { dimension: column, value: filters[FILTER_OF[column]]! };
}

const FILTER_OF: Readonly<Record<CountedFilter, 'status' | 'identityId' | 'accountNumber' | 'type'>> = {
  status: 'status', identity_id: 'identityId', account_number: 'accountNumber', type: 'type',
};

/** A document attached to a payment under review, by its id. */
export async function paymentDocument<DB extends PaymentTables>(db: Kysely<DB>, documentId: string): Promise<Selectable<PaymentDocumentsTable>> {
  return (db as unknown as Kysely<PaymentTables>).selectFrom('payment_documents').selectAll().where('document_id', '=', documentId)
    .executeTakeFirstOrThrow();
}

/** A client's payments of these checkout sessions, oldest first. */
export async function paymentsOfCheckoutSessions<DB extends PaymentTables>(
  db: Kysely<DB>, clientId: string, sessionIds: readonly string[],
): Promise<PaymentRow[]> {
  if (sessionIds.length === 0) return [];
  return scopedTo(db as unknown as Kysely<PaymentTables>, 'payments', clientId).where('checkout_session_id', 'in', sessionIds)
    .orderBy('created_at').execute();
}

/** A payment's status, whichever client's, if the payment is known. */
export async function paymentStatusOf<DB extends PaymentTables>(db: Kysely<DB>, paymentId: string): Promise<PaymentsTable['status'] | undefined> {
  const row = await (db as unknown as Kysely<PaymentTables>).selectFrom('payments').select('status').where('payment_id', '=', paymentId)
    .executeTakeFirst();
  return row?.status;
}
