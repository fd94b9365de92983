/**
 * Tenant scoping at the edge: the caller's client, as the tenant its commands act for, and its pages of the
 * read models. Rows carry `client_id`, and another client's object answers 404, never 403, so ids of other
 * tenants cannot even be probed; the commands themselves refuse another client's object (src/domain/tenancy.ts).
 */
import type { Request } from 'express';
import { sql, type SelectQueryBuilder } from 'kysely';
import { clientTenant, type Tenant } from '../domain/tenancy.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { unauthorized } from './errors.ts';

export { scopedTo } from '../db/owned.ts';

export function clientIdOf(req: Request): string {
  if (req.caller.kind !== 'client') throw unauthorized();
  return req.caller.clientId;
}

/**
 * What a request's commands record of it: the client they act for (the caller's own, or the object's for the
 * operator and the provider, who act across clients), who acts, the request id, and the request's key when it
 * sent an Idempotency-Key.
 */
export function commandMetadata(req: Request, acting: { clientId?: string; actor?: string } = {}): EventMetadata {
  const clientId = acting.clientId ?? (req.caller.kind === 'client' ? req.caller.clientId : undefined);
  const actor = acting.actor ?? (req.caller.kind === 'client' ? `client:${req.caller.clientId}` : req.caller.kind);
  return {
    ...(clientId === undefined ? {} : { clientId }), actor, correlationId: req.id,
    ...(req.requestKey === undefined ? {} : { requestKey: req.requestKey }),
  };
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
