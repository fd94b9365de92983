/**
 * Tenant scoping at the edge: the caller's client, as the tenant its commands act for and whose rows of the read
 * models its queries read (projections/, through `scopedTo`). Rows carry `client_id`, and another client's object
 * answers 404, never 403, so ids of other tenants cannot even be probed; the commands themselves refuse another
 * client's object (src/domain/tenancy.ts).
 */
import type { Request } from 'express';
import { clientTenant, type Tenant } from '../domain/tenancy.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { unauthorized } from './errors.ts';

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
