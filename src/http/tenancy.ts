/**
 * Tenant scoping. Every query of a client's data goes through these: rows carry `client_id`, and another
 * client's object answers 404, never 403, so ids of other tenants cannot even be probed.
 */
import type { Request } from 'express';
import type { Kysely, SelectQueryBuilder } from 'kysely';
import { notFound, unauthorized } from './errors.ts';

export function clientIdOf(req: Request): string {
  if (req.caller.kind !== 'client') throw unauthorized();
  return req.caller.clientId;
}

/** `SELECT * FROM table WHERE client_id = <caller>`: the start of every tenant query. */
export function scopedTo(db: Kysely<any>, table: string, clientId: string): SelectQueryBuilder<any, any, any> {
  return db.selectFrom(table).selectAll().where(`${table}.client_id`, '=', clientId);
}

/** One row of the caller's, by its id column, or a 404 naming the resource. */
export async function findOwned<T>(
  db: Kysely<any>, table: string, clientId: string, idColumn: string, id: string, resource: string,
): Promise<T> {
  const row = await scopedTo(db, table, clientId).where(`${table}.${idColumn}`, '=', id).executeTakeFirst();
  if (!row) throw notFound(`${resource} ${id} not found`);
  return row as T;
}

/**
 * One page of a tenant query, newest first (`created_at`, then the id column, both descending), and the
 * number of rows matching the filters.
 */
export async function newestFirstPage<Row>(
  filtered: SelectQueryBuilder<any, any, any>, idColumn: string, page: { limit: number; offset: number },
): Promise<{ rows: Row[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered.orderBy('created_at', 'desc').orderBy(idColumn, 'desc').limit(page.limit).offset(page.offset).execute(),
    filtered.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst(),
  ]);
  return { rows: rows as Row[], total: Number((count as { n?: string } | undefined)?.n ?? 0) };
}
