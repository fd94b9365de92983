/**
 * Tenant-scoped reads of the read models, for commands that start from one: rows carry `client_id`, and
 * another client's row, like a missing one, is a DomainError notFound (the HTTP edge answers 404).
 */
import type { Kysely, SelectQueryBuilder } from 'kysely';
import { domainNotFound } from '../domain/errors.ts';
import type { Tenant } from '../domain/tenancy.ts';

/** `SELECT * FROM table WHERE client_id = <clientId>`: the start of every tenant query. */
export function scopedTo(db: Kysely<any>, table: string, clientId: string): SelectQueryBuilder<any, any, any> {
  return db.selectFrom(table).selectAll().where(`${table}.client_id`, '=', clientId);
}

/** One row by its id column, if `tenant` may see it (`'any'`: whichever client's), or notFound naming the resource. */
export async function findOwned<T>(
  db: Kysely<any>, table: string, tenant: Tenant, idColumn: string, id: string, resource: string,
): Promise<T> {
  const query = tenant === 'any' ? db.selectFrom(table).selectAll() : scopedTo(db, table, tenant.clientId);
  const row = await query.where(`${table}.${idColumn}`, '=', id).executeTakeFirst();
  if (!row) throw domainNotFound(`${resource} ${id} not found`);
  return row as T;
}
