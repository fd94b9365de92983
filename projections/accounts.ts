/** Read model of internal accounts (balances come from the ledger's read model). */
import { sql, type Kysely, type Selectable } from 'kysely';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';
import { defineProjector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { AccountStatus } from '../src/accounts/events.ts';
import type { Instant } from './columns.ts';

/** The accounts table: one row per open account (a closed one is deleted). */
export interface AccountsTable {
  account_id: string;
  client_id: string;
  identity_id: string;
  external_id: string | null;
  type: 'CHECKING' | 'ASSET' | 'SAVINGS' | 'ESCROW' | 'FEE';
  custody: 'PLATFORM' | 'PARTNER_BANK' | 'SELF';
  currency: string;
  name: string | null;
  account_number: string;
  account_holder: string | null;
  country: string | null;
  status: AccountStatus;
  parent_id: string | null;
  created_at: Instant;
  updated_at: Instant;
}
export type AccountTables = { accounts: AccountsTable };
export type AccountRow = Selectable<AccountsTable>;

export const accountsProjector = defineProjector<AccountTables, StoredEventData>({
  name: 'accounts',
  version: 1,
  tables: ['accounts'],
  async setup(trx) {
    await trx.schema.createTable('accounts')
      .addColumn('account_id', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('identity_id', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text')
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('custody', 'text', (c) => c.notNull())
      .addColumn('currency', 'text', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('account_number', 'text', (c) => c.notNull().unique())
      .addColumn('account_holder', 'text')
      .addColumn('country', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('parent_id', 'text')
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
      .execute();
    await sql`CREATE INDEX accounts_client_created ON accounts (client_id, created_at DESC, account_id DESC)`.execute(trx);
    for (const column of ['parent_id', 'external_id', 'identity_id', 'type', 'country', 'status']) {
      await sql.raw(`CREATE INDEX accounts_client_${column} ON accounts (client_id, ${column})`).execute(trx);
    }
  },
  handlers: {
    async AccountOpened(trx, event) {
      const d = event.data;
      await trx.insertInto('accounts').values({
        account_id: d.accountId, client_id: d.clientId, identity_id: d.identityId, external_id: d.externalId, type: d.type,
        custody: d.custody, currency: d.currency, name: d.name, account_number: d.accountNumber, account_holder: d.accountHolder,
        country: d.country, status: 'ACTIVE', parent_id: d.parentId, created_at: d.openedAt, updated_at: d.openedAt,
      }).execute();
    },
    async AccountUpdated(trx, event) {
      const d = event.data;
      await trx.updateTable('accounts').set({
        ...(d.changes.name !== undefined ? { name: d.changes.name } : {}),
        ...(d.changes.externalId !== undefined ? { external_id: d.changes.externalId } : {}),
        updated_at: d.updatedAt,
      }).where('account_id', '=', d.accountId).execute();
    },
    async AccountStatusChanged(trx, event) {
      const d = event.data;
      await trx.updateTable('accounts').set({ status: d.to, updated_at: d.changedAt }).where('account_id', '=', d.accountId).execute();
    },
    async AccountClosed(trx, event) {
      const d = event.data;
      await trx.deleteFrom('accounts').where('account_id', '=', d.accountId).execute();
    },
  },
});

/** The filters of a client's list of accounts: exact matches, and the creation time's half-open range. */
export interface AccountFilters {
  parentId?: string; accountNumber?: string; externalId?: string; identityId?: string; type?: AccountsTable['type'];
  country?: string; status?: AccountsTable['status']; from?: Date; before?: Date;
}

/** One page of a client's accounts, newest first (ties broken by id), and how many match the filters. */
export async function accountsPage<DB extends AccountTables>(
  db: Kysely<DB>, clientId: string, filters: AccountFilters, page: PageWindow,
): Promise<{ rows: AccountRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<AccountTables>, 'accounts', clientId);
  if (filters.parentId) filtered = filtered.where('parent_id', '=', filters.parentId);
  if (filters.accountNumber) filtered = filtered.where('account_number', '=', filters.accountNumber);
  if (filters.externalId) filtered = filtered.where('external_id', '=', filters.externalId);
  if (filters.identityId) filtered = filtered.where('identity_id', '=', filters.identityId);
  if (filters.type) filtered = filtered.where('type', '=', filters.type);
  if (filters.country) filtered = filtered.where('country', '=', filters.country);
  if (filters.status) filtered = filtered.where('status', '=', filters.status);
  if (filters.from) filtered = filtered.where('created_at', '>=', filters.from);
  if (filters.before) filtered = filtered.where('created_at', '<', filters.before);
  return newestFirstPage(filtered, 'account_id', page);
}

/** A client's account by its account number, if it has one by that number. */
export async function accountByNumber<DB extends AccountTables>(db: Kysely<DB>, clientId: string, accountNumber: string): Promise<AccountRow | undefined> {
  return scopedTo(db as unknown as Kysely<AccountTables>, 'accounts', clientId).where('account_number', '=', accountNumber).executeTakeFirst();
}
