/**
 * Read models of checkout sessions and payment links: one row each, with every list filter and sort as a
 * column, the items, configs and nodes as JSON. A session's stored status is what its stream recorded: an open
 * session past expires_at reads as EXPIRED (src/checkout/records.ts) before the expiry job records it. A link's
 * `status` depends on the clock the same way (active_until), and a deleted link keeps its row (`deleted`), so its
 * URL can still show the deactivated page while the API answers 404.
 */
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { defineProjector, writesNow, type ProjectorHandlers } from '../src/projection/projector.ts';
import { isOneOf } from '../src/eventstore/typedEvents.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { CheckoutSessionCreatedData, CheckoutTerms, CurrencyConfig, SessionItem, SessionStatus } from '../src/checkout/events.ts';
import type { Instant, Json, NullableInstant } from './columns.ts';
import { judgedAt } from './testClocks.ts';
import { scopedTo, type PageWindow } from '../src/db/owned.ts';

/** Columns a session and a link share: what they sell and to whom. */
interface TermsColumns {
  client_id: string;
  checkout_token: string;
  currency: string;
  /** numeric: a decimal string both ways. */
  pre_tax_amount: string;
  total_amount: string;
  items: Json<SessionItem[]>;
  payment_methods_allowed: Json<string[]>;
  destinations: Json<Array<Record<string, unknown>>>;
  /** The ACCOUNT destinations' account numbers (jsonb array), for the accountNumber filters. */
  account_numbers: Json<string[]>;
  owner: Json<Record<string, unknown>>;
  owner_identity_id: string;
  customer: Json<Record<string, unknown> | null>;
  /** Lower-case, for the customerEmails filter. */
  customer_email: string | null;
  customer_requirements: Json<string[]>;
  success_url: string | null;
  failed_url: string | null;
  redirect_url: string | null;
  duration: number;
  created_at: Instant;
  updated_at: Instant;
  /** The test clock it was created under (its status is judged at that clock's time), or null. */
  test_clock_id: string | null;
}

export interface CheckoutSessionsTable extends TermsColumns {
  session_id: string;
  payment_link_id: string | null;
  status: SessionStatus;
  payment_configs: Json<CurrencyConfig[]>;
  payment_id: string | null;
  /**
   * When the store recorded the session's reservation for `payment_id` (PROCESSING_PAYMENT; the wall clock's time, on
   * a test clock too); null otherwise: the release job's queue.
   */
  payment_started_at: NullableInstant;
  expires_at: Instant;
}

export interface PaymentLinksTable extends TermsColumns {
  link_id: string;
  active_until: Instant;
  deleted: boolean;
}

export type CheckoutTables = { checkout_sessions: CheckoutSessionsTable; payment_links: PaymentLinksTable };
export type CheckoutSessionRow = Selectable<CheckoutSessionsTable>;
export type PaymentLinkRow = Selectable<PaymentLinksTable>;

type TermsData = CheckoutTerms & { checkoutToken: string; createdAt: string; testClockId?: string | null };

/** The columns kept for the list filters alone. */
type FilterColumns = 'account_numbers' | 'owner_identity_id' | 'customer_email';
type TermsView = Omit<Selectable<TermsColumns>, FilterColumns>;

/** What a session's or link's row shows of its terms, read back: the one source of the columns below. */
function termsView(d: TermsData): TermsView {
  return {
    client_id: d.clientId, checkout_token: d.checkoutToken, currency: d.currency, pre_tax_amount: d.preTaxAmount,
    total_amount: d.totalAmount, items: d.items, payment_methods_allowed: d.paymentMethodsAllowed,
    destinations: d.destinations as TermsView['destinations'], owner: d.owner as TermsView['owner'],
    customer: d.customer as TermsView['customer'], customer_requirements: d.customerRequirements, success_url: d.successUrl,
    failed_url: d.failedUrl, redirect_url: d.redirectUrl, duration: d.duration, created_at: new Date(d.createdAt),
    updated_at: new Date(d.createdAt), test_clock_id: d.testClockId ?? null,
  };
}

function termsColumns(d: TermsData) {
  const view = termsView(d);
  const owner = d.owner as { identityId: string };
  const customer = d.customer as { email?: string } | null;
  const accountNumbers = (d.destinations as Array<{ type: string; account?: { accountNumber: string } }>)
    .flatMap((destination) => (destination.type === 'ACCOUNT' && destination.account ? [destination.account.accountNumber] : []));
  return {
    ...view, items: JSON.stringify(view.items), payment_methods_allowed: JSON.stringify(view.payment_methods_allowed),
    destinations: JSON.stringify(view.destinations), owner: JSON.stringify(view.owner), customer: JSON.stringify(view.customer),
    customer_requirements: JSON.stringify(view.customer_requirements), created_at: d.createdAt, updated_at: d.createdAt,
    account_numbers: JSON.stringify(accountNumbers), owner_identity_id: owner.identityId,
    customer_email: customer?.email?.toLowerCase() ?? null,
  };
}

/**
 * A new session as its row reads once the projector has written its creation: what the request that created it
 * answers, without reading the row back.
 */
export function sessionViewOf(d: CheckoutSessionCreatedData): Omit<CheckoutSessionRow, FilterColumns | 'payment_started_at'> {
  return {
    ...termsView(d), session_id: d.sessionId, payment_link_id: d.paymentLinkId, status: d.status,
    payment_configs: d.paymentConfigs, payment_id: null, expires_at: new Date(d.expiresAt),
  };
}

function sessionColumns(d: CheckoutSessionCreatedData) {
  return {
    ...termsColumns(d), session_id: d.sessionId, payment_link_id: d.paymentLinkId, status: d.status,
    payment_configs: JSON.stringify(d.paymentConfigs), payment_id: null, payment_started_at: null, expires_at: d.expiresAt,
  };
}

async function createTermsTable(trx: Kysely<CheckoutTables>, table: 'checkout_sessions' | 'payment_links', idColumn: string,
  extra: (builder: ReturnType<Kysely<CheckoutTables>['schema']['createTable']>) => ReturnType<Kysely<CheckoutTables>['schema']['createTable']>) {
  let builder = trx.schema.createTable(table)
    .addColumn(idColumn, 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('checkout_token', 'text', (c) => c.notNull().unique())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('pre_tax_amount', 'numeric(38, 18)', (c) => c.notNull())
    .addColumn('total_amount', 'numeric(38, 18)', (c) => c.notNull())
    .addColumn('items', 'jsonb', (c) => c.notNull())
    .addColumn('payment_methods_allowed', 'jsonb', (c) => c.notNull())
    .addColumn('destinations', 'jsonb', (c) => c.notNull())
    .addColumn('account_numbers', 'jsonb', (c) => c.notNull())
    .addColumn('owner', 'jsonb', (c) => c.notNull())
    .addColumn('owner_identity_id', 'text', (c) => c.notNull())
    .addColumn('customer', 'jsonb')
    .addColumn('customer_email', 'text')
    .addColumn('customer_requirements', 'jsonb', (c) => c.notNull())
    .addColumn('success_url', 'text')
    .addColumn('failed_url', 'text')
    .addColumn('redirect_url', 'text')
    .addColumn('duration', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('test_clock_id', 'text');
  builder = extra(builder);
  await builder.execute();
  await sql.raw(`CREATE INDEX ${table}_client_created ON ${table} (client_id, created_at DESC, ${idColumn} DESC)`).execute(trx);
  await sql.raw(`CREATE INDEX ${table}_client_owner ON ${table} (client_id, owner_identity_id)`).execute(trx);
  await sql.raw(`CREATE INDEX ${table}_accounts ON ${table} USING gin (account_numbers)`).execute(trx);
  await sql.raw(`CREATE INDEX ${table}_test_clock ON ${table} (test_clock_id) WHERE test_clock_id IS NOT NULL`).execute(trx);
}

/** Every event but the creations and status moves below, one at a time. */
const handlers: ProjectorHandlers<CheckoutTables, StoredEventData> = {
  async CheckoutSessionPaymentStarted(trx, event) {
    const d = event.data;
    // When the store recorded it (the wall clock's time, also for a session on a test clock): the release job's clock.
    await trx.updateTable('checkout_sessions').set({ status: d.to, payment_id: d.paymentId, payment_started_at: event.recordedAt.toISOString(), updated_at: d.at })
      .where('session_id', '=', d.sessionId).execute();
  },
  async CheckoutSessionPaymentReleased(trx, event) {
    const d = event.data;
    await trx.updateTable('checkout_sessions').set({ status: d.to, payment_id: null, payment_started_at: null, updated_at: d.at })
      .where('session_id', '=', d.sessionId).execute();
  },
  async CheckoutSessionRefreshed(trx, event) {
    const d = event.data;
    await trx.updateTable('checkout_sessions').set({ expires_at: d.expiresAt, updated_at: d.at }).where('session_id', '=', d.sessionId).execute();
  },
  async PaymentLinkCreated(trx, event) {
    const d = event.data;
    await trx.insertInto('payment_links').values({ ...termsColumns(d), link_id: d.linkId, active_until: d.activeUntil, deleted: false }).execute();
  },
  async PaymentLinkActivated(trx, event) {
    const d = event.data;
    await trx.updateTable('payment_links').set({ active_until: d.activeUntil, updated_at: d.at }).where('link_id', '=', d.linkId).execute();
  },
  async PaymentLinkDeleted(trx, event) {
    const d = event.data;
    await trx.updateTable('payment_links').set({ deleted: true, updated_at: d.at }).where('link_id', '=', d.linkId).execute();
  },
};

/**
 * The session events that only move its status (status and updated_at from the event): a run of them in a batch
 * (a burst of expiries, a test clock's advance) is written in one statement, each session as the last of them in
 * the run left it, which is what writing them one by one in feed order leaves.
 */
const STATUS_MOVES = ['CheckoutSessionMethodChosen', 'CheckoutSessionFinished', 'CheckoutSessionFailed', 'CheckoutSessionExpired'] as const;

/** Rows per statement of a run of creations or status moves (well within Postgres's 65,535 parameters and its bounds). */
const ROWS_PER_STATEMENT = 1_000;

async function writeStatusMoves(
  trx: Kysely<CheckoutTables>, moves: Map<string, { status: string; at: string }>, writes = writesNow(trx),
): Promise<void> {
  const rows = [...moves].map(([sessionId, { status, at }]) => ({ session_id: sessionId, status, at }));
  for (let from = 0; from < rows.length; from += ROWS_PER_STATEMENT) {
    await writes.add(sql`UPDATE checkout_sessions AS s SET status = x.status, updated_at = x.at
      FROM jsonb_to_recordset(${JSON.stringify(rows.slice(from, from + ROWS_PER_STATEMENT))}::jsonb) AS x(session_id text, status text, at timestamptz)
     WHERE s.session_id = x.session_id`.compile(trx));
  }
  moves.clear();
}

/** A run of new sessions (each request's, under load many a batch): one INSERT per 1,000 rather than one each. */
async function writeCreations(trx: Kysely<CheckoutTables>, created: CheckoutSessionCreatedData[], writes = writesNow(trx)): Promise<void> {
  // 28 columns a row: 1,000 rows are 28,000 parameters.
  for (let from = 0; from < created.length; from += ROWS_PER_STATEMENT) {
    await writes.add(trx.insertInto('checkout_sessions').values(created.slice(from, from + ROWS_PER_STATEMENT).map(sessionColumns)));
  }
  created.length = 0;
}

export const checkoutProjector = defineProjector<CheckoutTables, StoredEventData>({
  name: 'checkout',
  // 2: the test clock of a session or link (test_clock_id).
  // 3: payment_started_at and the release job's index (sessions reserved for a payment that does not appear).
  version: 3,
  tables: ['checkout_sessions', 'payment_links'],
  handles: [...Object.keys(handlers) as Array<keyof typeof handlers>, 'CheckoutSessionCreated', ...STATUS_MOVES],
  async setup(trx) {
    await createTermsTable(trx, 'checkout_sessions', 'session_id', (b) => b
      .addColumn('payment_link_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('payment_configs', 'jsonb', (c) => c.notNull())
      .addColumn('payment_id', 'text')
      .addColumn('payment_started_at', 'timestamptz')
      .addColumn('expires_at', 'timestamptz', (c) => c.notNull()));
    await sql`CREATE INDEX checkout_sessions_open_expiry ON checkout_sessions (expires_at) WHERE status IN ('ATTEMPT', 'ACTIVE')`.execute(trx);
    await sql`CREATE INDEX checkout_sessions_client_status ON checkout_sessions (client_id, status)`.execute(trx);
    // The release job's queue: sessions reserved for a payment, oldest reservation first.
    await sql`CREATE INDEX checkout_sessions_reserved ON checkout_sessions (payment_started_at) WHERE status = 'PROCESSING_PAYMENT'`.execute(trx);
    await createTermsTable(trx, 'payment_links', 'link_id', (b) => b
      .addColumn('active_until', 'timestamptz', (c) => c.notNull())
      .addColumn('deleted', 'boolean', (c) => c.notNull()));
    await sql`CREATE INDEX payment_links_client_email ON payment_links (client_id, customer_email)`.execute(trx);
  },
  async apply(trx, events, later) {
    // Creations and status moves waiting to be written: a run of one kind is written when an event of another kind
    // comes, before it, so every write keeps its feed order (a session's moves follow its creation's row).
    const created: CheckoutSessionCreatedData[] = [];
    const moves = new Map<string, { status: string; at: string }>();
    for (const event of events) {
      if (isOneOf(event, STATUS_MOVES)) {
        if (created.length > 0) await writeCreations(trx, created);
        moves.set(event.data.sessionId, { status: event.data.to, at: event.data.at });
        continue;
      }
      if (moves.size > 0) await writeStatusMoves(trx, moves);
      if (isOneOf(event, ['CheckoutSessionCreated'] as const)) {
        created.push(event.data);
        continue;
      }
      if (created.length > 0) await writeCreations(trx, created);
      // Each handler takes its own type's event: the one of this event's type is given this event.
      const handler = Object.hasOwn(handlers, event.type) ? handlers[event.type as keyof typeof handlers] : undefined;
      await (handler as ((trx: Kysely<CheckoutTables>, event: RecordedEvent) => Promise<void>) | undefined)?.(trx, event);
    }
    // The batch's last writes: nothing reads them back in it, so they go with the COMMIT, in this order.
    if (created.length > 0) await writeCreations(trx, created, later);
    if (moves.size > 0) await writeStatusMoves(trx, moves, later);
  },
});

const sessionSortColumns = { createdAt: 'created_at', expiresAt: 'expires_at', totalAmount: 'total_amount', status: 'status' } as const;
export type SessionSortField = keyof typeof sessionSortColumns;

/**
 * The filters of a client's list of sessions: the owner, an ACCOUNT destination's number, the status as readers see
 * it (an open session past its expiry, judged at its clock's time, is EXPIRED), and the creation time's half-open range.
 */
export interface SessionFilters { identityId?: string; accountNumber?: string; status?: SessionStatus; from?: Date; before?: Date }

/** One page of a client's sessions in the given order (ties broken by id, the same way), and how many match. */
export async function checkoutSessionsPage<DB extends CheckoutTables>(
  db: Kysely<DB>, clientId: string, filters: SessionFilters, sort: { field: SessionSortField; direction: 'asc' | 'desc' }, now: Date,
  page: PageWindow,
): Promise<{ rows: CheckoutSessionRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<CheckoutTables>, 'checkout_sessions', clientId);
  if (filters.identityId) filtered = filtered.where('owner_identity_id', '=', filters.identityId);
  if (filters.accountNumber) filtered = filtered.where(sql<SqlBool>`account_numbers @> ${JSON.stringify([filters.accountNumber])}::jsonb`);
  const status = filters.status;
  if (status) {
    filtered = filtered.where((eb) => {
      const open = eb('status', 'in', ['ATTEMPT', 'ACTIVE']);
      if (status === 'EXPIRED') return eb.or([eb('status', '=', 'EXPIRED'), eb.and([open, eb('expires_at', '<=', judgedAt(now))])]);
      if (status === 'ATTEMPT' || status === 'ACTIVE') return eb.and([eb('status', '=', status), eb('expires_at', '>', judgedAt(now))]);
      return eb('status', '=', status) as Expression<SqlBool>;
    });
  }
  if (filters.from) filtered = filtered.where('created_at', '>=', filters.from);
  if (filters.before) filtered = filtered.where('created_at', '<', filters.before);
  const [rows, count] = await Promise.all([
    filtered.orderBy(sql.raw(`${sessionSortColumns[sort.field]} ${sort.direction}`)).orderBy('session_id', sort.direction)
      .limit(page.limit).offset(page.offset).execute(),
    filtered.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst(),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/**
 * The filters of a client's list of links, each a list of values any of which matches: ids, active or not (judged at each
 * link's clock's time), ACCOUNT destinations' numbers, customers' emails (lower case), owners.
 */
export interface LinkFilters { ids?: string[]; active?: boolean[]; accountNumbers?: string[]; customerEmails?: string[]; identityIds?: string[] }

/** One page of a client's links that are not deleted, newest first (ties broken by id), and how many match the filters. */
export async function paymentLinksPage<DB extends CheckoutTables>(
  db: Kysely<DB>, clientId: string, filters: LinkFilters, now: Date, page: PageWindow,
): Promise<{ rows: PaymentLinkRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<CheckoutTables>, 'payment_links', clientId).where('deleted', '=', false);
  if (filters.ids) filtered = filtered.where('link_id', 'in', filters.ids);
  const { active } = filters;
  if (active && !(active.includes(true) && active.includes(false))) {
    filtered = filtered.where('active_until', active[0] ? '>' : '<=', judgedAt(now));
  }
  const accounts = filters.accountNumbers;
  if (accounts) filtered = filtered.where((eb) => eb.or(accounts.map((n) => sql<SqlBool>`account_numbers @> ${JSON.stringify([n])}::jsonb`)));
  if (filters.customerEmails) filtered = filtered.where('customer_email', 'in', filters.customerEmails);
  if (filters.identityIds) filtered = filtered.where('owner_identity_id', 'in', filters.identityIds);
  const [rows, count] = await Promise.all([
    filtered.orderBy('created_at', 'desc').orderBy('link_id', 'desc').limit(page.limit).offset(page.offset).execute(),
    filtered.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst(),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/** The session a checkout token opens, whichever client's, if there is one. */
export async function sessionOfCheckoutToken<DB extends CheckoutTables>(db: Kysely<DB>, token: string): Promise<CheckoutSessionRow | undefined> {
  return (db as unknown as Kysely<CheckoutTables>).selectFrom('checkout_sessions').selectAll().where('checkout_token', '=', token).executeTakeFirst();
}

/** The link a checkout token opens, whichever client's (deleted or not), if there is one. */
export async function linkOfCheckoutToken<DB extends CheckoutTables>(db: Kysely<DB>, token: string): Promise<PaymentLinkRow | undefined> {
  return (db as unknown as Kysely<CheckoutTables>).selectFrom('payment_links').selectAll().where('checkout_token', '=', token).executeTakeFirst();
}
