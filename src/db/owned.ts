/**
 * Tenant-scoped reads of the read models, for commands that start from one: rows carry `client_id`, and
 * another client's row, like a missing one, is a DomainError notFound (the HTTP edge answers 404).
 */
import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import { domainNotFound } from '../domain/errors.ts';
import type { Tenant } from '../domain/tenancy.ts';

/** The tables of `DB` that belong to a client: those with a `client_id` column. */
type TenantTable<DB> = { [T in keyof DB & string]: DB[T] extends { client_id: unknown } ? T : never }[keyof DB & string];

/** What these helpers know of a tenant table, whichever it is: its `client_id`. */
type SomeTenantTables = Record<string, { client_id: string; [column: string]: unknown }>;

/**
 * kysely cannot type a query over a table named by a type parameter: the query is built over what every
 * tenant table has, and its rows are the named table's (`selectAll`), as the caller's `DB` declares them.
 */
function overSomeTenantTable<DB>(db: Kysely<DB>): Kysely<SomeTenantTables> {
  return db as unknown as Kysely<SomeTenantTables>;
}

/** `SELECT * FROM table WHERE client_id = <clientId>`: the start of every tenant query. */
export function scopedTo<DB, T extends TenantTable<DB>>(
  db: Kysely<DB>, table: T, clientId: string,
): SelectQueryBuilder<DB, T, Selectable<DB[T]>> {
  const name: string = table;
  const query = overSomeTenantTable(db).selectFrom(name).selectAll().where(`${name}.client_id`, '=', clientId);
  return query as unknown as SelectQueryBuilder<DB, T, Selectable<DB[T]>>;
}

/** One row by its id column, if `tenant` may see it (`'any'`: whichever client's), or notFound naming the resource. */
export async function findOwned<DB, T extends TenantTable<DB>>(
  db: Kysely<DB>, table: T, tenant: Tenant, idColumn: keyof DB[T] & string, id: string, resource: string,
): Promise<Selectable<DB[T]>> {
  const name: string = table;
  const idName: string = idColumn;
  const query = tenant === 'any'
    ? overSomeTenantTable(db).selectFrom(name).selectAll()
    : overSomeTenantTable(db).selectFrom(name).selectAll().where(`${name}.client_id`, '=', tenant.clientId);
  const row = await query.where(`${name}.${idName}`, '=', id).executeTakeFirst();
  if (!row) throw domainNotFound(`${resource} ${id} not found`);
  return row as Selectable<DB[T]>;
}

/** The rows of one page: at most `limit` (rows), after skipping `offset` (rows). */
export interface PageWindow { limit: number; offset: number }

/**
 * One page of a tenant query, newest first (`created_at`, then the id column, both descending), and the
 * number of rows matching the filters.
 */
export async function newestFirstPage<DB, TB extends keyof DB, Row>(
  filtered: SelectQueryBuilder<DB, TB, Row>, idColumn: string, page: PageWindow,
): Promise<{ rows: Row[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered.orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref(idColumn), 'desc').limit(page.limit).offset(page.offset).execute(),
    filtered.clearSelect().select(sql<string>`count(*)`.as('n')).executeTakeFirst(),
  ]);
  return { rows, total: Number((count as { n?: string } | undefined)?.n ?? 0) };
}
