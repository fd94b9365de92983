/**
 * Read model of identities. A child's parent lives on the child's row; a parent's `children` are the rows
 * pointing at it. Links come from the client's identity graph stream (and, made before it, from the children's
 * own streams). Access rules are kept as the current list of scopes.
 */
import { sql, type ColumnType, type Kysely, type Selectable } from 'kysely';
import { defineProjector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { StoredAccessScope } from '../src/identities/events.ts';
import type { IdentityRecord } from '../schemas/identities.ts';
import type { Instant } from './columns.ts';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';

export interface IdentitiesTable {
  identity_id: string;
  client_id: string;
  type: 'ORGANIZATION' | 'USER';
  name: string;
  nickname: string | null;
  email: string | null;
  phone: string | null;
  document_number: string | null;
  document_type: string | null;
  idv: string | null;
  country: string | null;
  status: IdentityRecord['status'];
  external_id: string | null;
  lastname: string | null;
  gender: string | null;
  /** jsonb, written as JSON text. */
  rules: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  /** jsonb, written as JSON text; `[]` until a rule is granted. */
  scopes: ColumnType<StoredAccessScope[], string | undefined, string>;
  parent_id: string | null;
  created_at: Instant;
  updated_at: Instant;
}
export type IdentityTables = { identities: IdentitiesTable };
export type IdentityRow = Selectable<IdentitiesTable>;

async function setParent(trx: Kysely<IdentityTables>, identityId: string, parentId: string | null, at: string): Promise<void> {
  await trx.updateTable('identities').set({ parent_id: parentId, updated_at: at }).where('identity_id', '=', identityId).execute();
}

export const identitiesProjector = defineProjector<IdentityTables, StoredEventData>({
  name: 'identities',
  version: 1,
  tables: ['identities'],
  async setup(trx) {
    await trx.schema.createTable('identities')
      .addColumn('identity_id', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('nickname', 'text')
      .addColumn('email', 'text')
      .addColumn('phone', 'text')
      .addColumn('document_number', 'text')
      .addColumn('document_type', 'text')
      .addColumn('idv', 'text')
      .addColumn('country', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text')
      .addColumn('lastname', 'text')
      .addColumn('gender', 'text')
      .addColumn('rules', 'jsonb')
      .addColumn('scopes', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
      .addColumn('parent_id', 'text')
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
      .execute();
    await sql`CREATE INDEX identities_client_created ON identities (client_id, created_at DESC, identity_id DESC)`.execute(trx);
    for (const column of ['email', 'document_number', 'phone', 'country', 'status', 'type', 'parent_id']) {
      await sql.raw(`CREATE INDEX identities_client_${column} ON identities (client_id, ${column})`).execute(trx);
    }
  },
  handlers: {
    async IdentityCreated(trx, event) {
      const d = event.data;
      await trx.insertInto('identities').values({
        identity_id: d.identityId, client_id: d.clientId, type: d.type, name: d.name, nickname: d.nickname ?? null,
        email: d.email?.toLowerCase() ?? null, phone: d.phone ?? null, document_number: d.documentNumber ?? null,
        document_type: d.documentType ?? null, idv: d.idv ?? null, country: d.country ?? null, status: 'PENDING',
        external_id: d.externalId ?? null, lastname: d.lastname ?? null, rules: d.rules ? JSON.stringify(d.rules) : null,
        created_at: d.createdAt, updated_at: d.createdAt,
      }).execute();
    },
    async IdentityUpdated(trx, event) {
      const d = event.data;
      const c = d.changes;
      // Fields the update did not change are undefined, which kysely leaves out of the SET.
      await trx.updateTable('identities').set({
        name: c.name, nickname: c.nickname, country: c.country, external_id: c.externalId, lastname: c.lastname,
        gender: c.gender, rules: c.rules === undefined ? undefined : JSON.stringify(c.rules), updated_at: d.updatedAt,
      }).where('identity_id', '=', d.identityId).execute();
    },
    async IdentityStatusChanged(trx, event) {
      const d = event.data;
      await trx.updateTable('identities').set({ status: d.to, updated_at: d.changedAt }).where('identity_id', '=', d.identityId).execute();
    },
    async IdentityParentSet(trx, event) {
      const d = event.data;
      await setParent(trx, d.identityId, d.parentId, d.at);
    },
    async IdentityParentCleared(trx, event) {
      const d = event.data;
      await setParent(trx, d.identityId, null, d.at);
    },
    // IdentityGraphSeeded restates links the rows already have from IdentityParentSet: nothing to write.
    async IdentityChildLinked(trx, event) {
      const d = event.data;
      await setParent(trx, d.childId, d.parentId, d.at);
    },
    async IdentityChildUnlinked(trx, event) {
      const d = event.data;
      await setParent(trx, d.childId, null, d.at);
    },
    async IdentityLeftGraph(trx, event) {
      const d = event.data;
      if (d.parentId !== null) await setParent(trx, d.identityId, null, d.at);
    },
    async IdentityAccessRuleAdded(trx, event) {
      const d = event.data;
      await sql`UPDATE identities SET updated_at = ${d.at},
        scopes = (SELECT coalesce(jsonb_agg(s), '[]'::jsonb) FROM jsonb_array_elements(scopes) s
                   WHERE NOT (s->>'resource' = ${d.scope.resource} AND s->>'reference' = ${d.scope.reference}))
                 || jsonb_build_array(${JSON.stringify(d.scope)}::jsonb)
        WHERE identity_id = ${d.identityId}`.execute(trx);
    },
    async IdentityAccessRuleRemoved(trx, event) {
      const d = event.data;
      const row = await trx.selectFrom('identities').select('scopes').where('identity_id', '=', d.identityId).executeTakeFirst();
      const scopes = (row?.scopes ?? []).flatMap((s) => {
        if (s.resource !== d.scope.resource || s.reference !== d.scope.reference) return [s];
        const permissions = s.permissions.filter((p) => !d.scope.permissions.includes(p));
        return permissions.length > 0 ? [{ ...s, permissions }] : [];
      });
      await trx.updateTable('identities').set({ scopes: JSON.stringify(scopes), updated_at: d.at })
        .where('identity_id', '=', d.identityId).execute();
    },
    async IdentityDeleted(trx, event) {
      const d = event.data;
      await trx.deleteFrom('identities').where('identity_id', '=', d.identityId).execute();
    },
  },
});

/** The API shape of identities, with their children (one query for the children of the whole page). */
export async function identityRecords(db: Pick<Kysely<IdentityTables>, 'selectFrom'>, rows: IdentityRow[]): Promise<IdentityRecord[]> {
  if (rows.length === 0) return [];
  const children = await db.selectFrom('identities').select(['identity_id', 'name', 'email', 'parent_id'])
    .where('client_id', '=', rows[0]!.client_id).where('parent_id', 'in', rows.map((r) => r.identity_id))
    .orderBy('created_at').orderBy('identity_id').execute();
  return rows.map((row) => ({
    id: row.identity_id, type: row.type, name: row.name, nickname: row.nickname, email: row.email, phone: row.phone,
    documentNumber: row.document_number, documentType: row.document_type, idv: row.idv,
    securityOptions: { twoFactorAuth: false, signTrx: false, signAccountsOperations: false, accessControl: { scopes: row.scopes } },
    country: row.country,
    children: children.filter((c) => c.parent_id === row.identity_id)
      .map((c) => ({ id: c.identity_id, name: c.name, email: c.email })),
    parentId: row.parent_id, status: row.status, externalId: row.external_id, lastname: row.lastname, bankAccount: null,
    rules: row.rules, gender: row.gender, kyc: null, watchList: null, extendedData: [], address: null,
    createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
  }));
}

/** The filters of a client's list of identities: exact matches (`email` as stored, lower case). */
export interface IdentityFilters {
  type?: IdentitiesTable['type']; email?: string; documentNumber?: string; phone?: string; country?: string; status?: IdentitiesTable['status'];
}

/** One page of a client's identities, newest first (ties broken by id), and how many match the filters. */
export async function identitiesPage<DB extends IdentityTables>(
  db: Kysely<DB>, clientId: string, filters: IdentityFilters, page: PageWindow,
): Promise<{ rows: IdentityRow[]; total: number }> {
  let filtered = scopedTo(db as unknown as Kysely<IdentityTables>, 'identities', clientId);
  if (filters.type) filtered = filtered.where('type', '=', filters.type);
  if (filters.email) filtered = filtered.where('email', '=', filters.email);
  if (filters.documentNumber) filtered = filtered.where('document_number', '=', filters.documentNumber);
  if (filters.phone) filtered = filtered.where('phone', '=', filters.phone);
  if (filters.country) filtered = filtered.where('country', '=', filters.country);
  if (filters.status) filtered = filtered.where('status', '=', filters.status);
  return newestFirstPage(filtered, 'identity_id', page);
}
