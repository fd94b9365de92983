/**
 * Read model of customers (payers) and their documents. Documents keep the order they were added in (`seq`).
 */
import { CompiledQuery, sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Recorded } from '../src/eventstore/typedEvents.ts';
import { defineProjector, writesNow, type LaterWrites } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { DocumentStatus, OperationLevel } from '../src/customers/events.ts';
import type { CustomerRecord } from '../schemas/customers.ts';
import type { Instant, NullableInstant } from './columns.ts';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';
import { createTableSql, insertJsonRowsSql, sqlTypeOf } from '../src/db/jsonRows.ts';

export interface CustomersTable {
  customer_id: string;
  client_id: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone_number: string | null;
  phone_number_prefix: string | null;
  document_number: string | null;
  document_type: string | null;
  country: string | null;
  operation_level: OperationLevel;
  auto_created: boolean;
  is_documented: boolean;
  created_at: Instant;
  updated_at: Instant;
}

/** A customer's documents, in the order they were added (`seq`). */
export interface CustomerDocumentsTable {
  document_id: string;
  customer_id: string;
  client_id: string;
  seq: number;
  type: string;
  url: string | null;
  content_type: string | null;
  status: DocumentStatus;
  uploaded_at: NullableInstant;
  added_at: Instant;
}

export type CustomerTables = { customers: CustomersTable; customer_documents: CustomerDocumentsTable };
export type CustomerRow = Selectable<CustomersTable>;
export type CustomerDocumentRow = Selectable<CustomerDocumentsTable>;

async function decide(trx: Kysely<CustomerTables>, data: StoredEventData['CustomerDocumentApproved' | 'CustomerDocumentRejected'], status: DocumentStatus): Promise<void> {
  await trx.updateTable('customer_documents').set({ status })
    .where('customer_id', '=', data.customerId).where('document_id', '=', data.documentId).execute();
  await trx.updateTable('customers').set({ updated_at: data.decidedAt }).where('customer_id', '=', data.customerId).execute();
}

/** A customer's row as the batch leaves it: created in it (the whole row), or changed (the columns set, in order). */
type Pending = { created: Insertable<CustomersTable> | null; changes: Partial<Record<keyof CustomersTable, unknown>> };

type Event = Recorded<StoredEventData>;

/**
 * A batch of events in a few statements: creations and changes of customers are folded in memory per customer and
 * written at once (one INSERT of every row created, one UPDATE of every row changed), before the first document
 * event of the batch and at its end; document events, rare, are applied one at a time, in feed order.
 */
async function apply(trx: Kysely<CustomerTables>, events: readonly Event[], later: LaterWrites): Promise<void> {
  let pending = new Map<string, Pending>();
  const change = (customerId: string, columns: Partial<Record<keyof CustomersTable, unknown>>) => {
    const entry = pending.get(customerId) ?? { created: null, changes: {} };
    // Fields the event did not change are undefined: left as they are, as an UPDATE would leave them.
    const set = Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
    if (entry.created) Object.assign(entry.created, set);
    else Object.assign(entry.changes, set);
    pending.set(customerId, entry);
  };
  const flush = async (writes = writesNow(trx)) => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const created = [...batch.values()].flatMap((entry) => (entry.created ? [entry.created] : []));
    for (let from = 0; from < created.length; from += ROWS_PER_STATEMENT) {
      await writes.add(CompiledQuery.raw(INSERT_CUSTOMERS_SQL, [JSON.stringify(created.slice(from, from + ROWS_PER_STATEMENT))]));
    }
    const changed = [...batch].flatMap(([customerId, entry]) => (entry.created ? [] : [{ customer_id: customerId, ...entry.changes }]));
    for (let from = 0; from < changed.length; from += ROWS_PER_STATEMENT) {
      await updateCustomers(trx, changed.slice(from, from + ROWS_PER_STATEMENT), writes);
    }
  };
  for (const event of events) {
    switch (event.type) {
      case 'CustomerCreated': {
        const d = event.data;
        pending.set(d.customerId, {
          created: {
            customer_id: d.customerId, client_id: d.clientId, first_name: d.firstName ?? null, last_name: d.lastName ?? null,
            email: d.email ?? null, phone_number: d.phoneNumber ?? null, phone_number_prefix: d.phoneNumberPrefix ?? null,
            document_number: d.documentNumber ?? null, document_type: d.documentType ?? null, country: d.country ?? null,
            operation_level: d.operationLevel, auto_created: d.autoCreated, is_documented: false,
            created_at: d.createdAt, updated_at: d.createdAt,
          },
          changes: {},
        });
        break;
      }
      case 'CustomerUpdated': {
        const d = event.data;
        const c = d.changes;
        change(d.customerId, {
          first_name: c.firstName, last_name: c.lastName, email: c.email, phone_number: c.phoneNumber,
          phone_number_prefix: c.phoneNumberPrefix, document_type: c.documentType, document_number: c.documentNumber,
          updated_at: d.updatedAt,
        });
        break;
      }
      case 'CustomerLevelChanged': {
        const d = event.data;
        change(d.customerId, { operation_level: d.operationLevel, is_documented: d.isDocumented, updated_at: d.changedAt });
        break;
      }
      case 'CustomerDocumentAdded': {
        await flush();
        const d = event.data;
        const customer = await trx.selectFrom('customers').select('client_id').where('customer_id', '=', d.customerId).executeTakeFirstOrThrow();
        const count = await trx.selectFrom('customer_documents').select((eb) => eb.fn.countAll<string>().as('n'))
          .where('customer_id', '=', d.customerId).executeTakeFirstOrThrow();
        await trx.insertInto('customer_documents').values({
          document_id: d.document.documentId, customer_id: d.customerId, client_id: customer.client_id, seq: Number(count.n),
          type: d.document.type, url: d.document.url, content_type: d.document.contentType, status: d.document.status,
          uploaded_at: d.document.uploadedAt, added_at: d.addedAt,
        }).execute();
        await trx.updateTable('customers').set({ updated_at: d.addedAt }).where('customer_id', '=', d.customerId).execute();
        break;
      }
      case 'CustomerDocumentUploaded': {
        await flush();
        const d = event.data;
        await trx.updateTable('customer_documents')
          .set({ url: d.url, content_type: d.contentType, status: 'UPLOADED', uploaded_at: d.uploadedAt })
          .where('customer_id', '=', d.customerId).where('document_id', '=', d.documentId).execute();
        await trx.updateTable('customers').set({ updated_at: d.uploadedAt }).where('customer_id', '=', d.customerId).execute();
        break;
      }
      case 'CustomerDocumentApproved':
      case 'CustomerDocumentRejected':
        await flush();
        await decide(trx, event.data, event.type === 'CustomerDocumentApproved' ? 'APPROVED' : 'REJECTED');
        break;
    }
  }
  // The last writes of the batch: nothing reads them back in it, so they go with the COMMIT.
  await flush(later);
}

/** Rows per INSERT or UPDATE statement (each statement's rows one JSON array: a bounded statement). */
const ROWS_PER_STATEMENT = 1_000;

/** The customers table's columns, as created; new rows are inserted from one JSON array (src/db/jsonRows.ts). */
const customerColumns = {
  customer_id: 'text PRIMARY KEY',
  client_id: 'text NOT NULL',
  first_name: 'text',
  last_name: 'text',
  email: 'text',
  phone_number: 'text',
  phone_number_prefix: 'text',
  document_number: 'text',
  document_type: 'text',
  country: 'text',
  operation_level: 'text NOT NULL',
  auto_created: 'boolean NOT NULL',
  is_documented: 'boolean NOT NULL',
  created_at: 'timestamptz NOT NULL',
  updated_at: 'timestamptz NOT NULL',
} as const satisfies Record<keyof CustomersTable, string>;
const INSERT_CUSTOMERS_SQL = insertJsonRowsSql('customers', customerColumns);

/** Columns a change may set, with their types as the UPDATE reads them from JSON. */
const changeColumns = (['first_name', 'last_name', 'email', 'phone_number', 'phone_number_prefix', 'document_type', 'document_number',
  'operation_level', 'is_documented', 'updated_at'] as const).map((column) => [column, sqlTypeOf(customerColumns[column])] as const);

/** One UPDATE for the changes of many customers: each column set where that customer's change names it (null included). */
async function updateCustomers(trx: Kysely<CustomerTables>, changes: ReadonlyArray<Record<string, unknown>>, writes: LaterWrites): Promise<void> {
  const assignments = changeColumns.map(([column, type]) =>
    `${column} = CASE WHEN x.change ? '${column}' THEN (x.change->>'${column}')::${type} ELSE c.${column} END`);
  await writes.add(sql`UPDATE customers c SET ${sql.raw(assignments.join(', '))}
    FROM jsonb_array_elements(${JSON.stringify(changes)}::jsonb) AS x(change)
   WHERE c.customer_id = x.change->>'customer_id'`.compile(trx));
}

export const customersProjector = defineProjector<CustomerTables, StoredEventData>({
  name: 'customers',
  version: 1,
  tables: ['customers', 'customer_documents'],
  async setup(trx) {
    await sql.raw(createTableSql('customers', customerColumns)).execute(trx);
    await sql`CREATE INDEX customers_client_created ON customers (client_id, created_at DESC, customer_id DESC)`.execute(trx);
    for (const column of ['email', 'document_number', 'operation_level']) {
      await sql.raw(`CREATE INDEX customers_client_${column} ON customers (client_id, ${column})`).execute(trx);
    }
    await trx.schema.createTable('customer_documents')
      .addColumn('document_id', 'text', (c) => c.primaryKey())
      .addColumn('customer_id', 'text', (c) => c.notNull())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('url', 'text')
      .addColumn('content_type', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('uploaded_at', 'timestamptz')
      .addColumn('added_at', 'timestamptz', (c) => c.notNull())
      .execute();
    await sql`CREATE INDEX customer_documents_customer ON customer_documents (customer_id, seq)`.execute(trx);
  },
  handles: [
    'CustomerCreated', 'CustomerUpdated', 'CustomerLevelChanged',
    'CustomerDocumentAdded', 'CustomerDocumentUploaded', 'CustomerDocumentApproved', 'CustomerDocumentRejected',
  ],
  apply,
});

export const customerDocumentRecord = (row: CustomerDocumentRow) => ({
  id: row.document_id, type: row.type, url: row.url, contentType: row.content_type, status: row.status,
  uploadedAt: row.uploaded_at ? row.uploaded_at.toISOString() : null,
});

/** The API shape of customers, with their documents (one query for the documents of the whole page). */
export async function customerRecords(db: Pick<Kysely<CustomerTables>, 'selectFrom'>, rows: CustomerRow[]): Promise<CustomerRecord[]> {
  if (rows.length === 0) return [];
  const documents = await db.selectFrom('customer_documents').selectAll()
    .where('customer_id', 'in', rows.map((r) => r.customer_id))
    .orderBy('customer_id').orderBy('seq').execute();
  return rows.map((row) => ({
    id: row.customer_id, clientId: row.client_id, firstName: row.first_name, lastName: row.last_name, email: row.email,
    phoneNumber: row.phone_number, phoneNumberPrefix: row.phone_number_prefix, documentNumber: row.document_number,
    documentType: row.document_type, country: row.country, operationLevel: row.operation_level, autoCreated: row.auto_created,
    isDocumented: row.is_documented,
    documents: documents.filter((d) => d.customer_id === row.customer_id).map(customerDocumentRecord),
    createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
  }));
}

/** A customer's row by its id, whichever client's (the caller has checked the object that names it). */
export async function customerById<DB extends CustomerTables>(db: Kysely<DB>, customerId: string): Promise<CustomerRow | undefined> {
  return (db as unknown as Kysely<CustomerTables>).selectFrom('customers').selectAll().where('customer_id', '=', customerId).executeTakeFirst();
}

/** The filters of a client's list of customers: exact matches (`email` as stored, lower case). */
export interface CustomerFilters { documentNumber?: string; email?: string; operationLevel?: OperationLevel }

/** One page of a client's customers, newest first (ties broken by id), and how many match the filters. */
export async function customersPage<DB extends CustomerTables>(
  db: Kysely<DB>, clientId: string, filters: CustomerFilters, page: PageWindow,
): Promise<{ rows: CustomerRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<CustomerTables>, 'customers', clientId);
  if (filters.documentNumber) filtered = filtered.where('document_number', '=', filters.documentNumber);
  if (filters.email) filtered = filtered.where('email', '=', filters.email);
  if (filters.operationLevel) filtered = filtered.where('operation_level', '=', filters.operationLevel);
  return newestFirstPage(filtered, 'customer_id', page);
}

/** One document of a customer, if the customer has it. */
export async function customerDocument<DB extends CustomerTables>(
  db: Kysely<DB>, customerId: string, documentId: string,
): Promise<CustomerDocumentRow | undefined> {
  return (db as unknown as Kysely<CustomerTables>).selectFrom('customer_documents').selectAll()
    .where('customer_id', '=', customerId).where('document_id', '=', documentId).executeTakeFirst();
}
