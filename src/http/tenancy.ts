/**
 * Tenant scoping at the edge: the caller's client, as the tenant its commands act for, and its pages of the
 * read models. Rows carry `client_id`, and another client's object answers 404, never 403, so ids of other
 * tenants cannot even be probed; the commands themselves refuse another client's object (src/domain/tenancy.ts).
 */
import type { Request } from 'express';
import { sql, type SelectQueryBuilder } from 'kysely';
import { clientTenant, type Tenant } from '../domain/tenancy.ts';
import { unauthorized } from './errors.ts';

export { scopedTo } from '../db/owned.ts';

export function clientIdOf(req: Request): string {
  if (req.caller.kind !== 'client') throw unauthorized();
  return req.caller.clientId;
}

/** The tenant a client's request acts for: its own objects only. */
export function tenantOf(req: Request): Tenant {
  return clientTenant(clientIdOf(req));
}

/**
 * One page of a tenant query, newest first (`created_at`, then the id column, both descending), and the
 * number of rows matching the filters.
 */
export async function newestFirstPage<DB, TB extends keyof DB, Row>(
  filtered: SelectQueryBuilder<DB, TB, Row>, idColumn: string, page: { limit: number; offset: number },
): Promise<{ rows: Row[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered.orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref(idColumn), 'desc').limit(page.limit).offset(page.offset).execute(),
    filtered.clearSelect().select(sql<string>`count(*)`.as('n')).executeTakeFirst(),
  ]);
  return { rows, total: Number((count as { n?: string } | undefined)?.n ?? 0) };
}
