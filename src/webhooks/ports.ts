/**
 * What the webhook commands read of the endpoints read model (projections/webhooks.queries.ts implements it; the
 * composition root wires it into `Platform.reads`): the outbox calls check the endpoint is the caller's. The
 * endpoint's stream decides every change of the endpoint itself.
 */
import type { Tenant } from '../domain/tenancy.ts';

export interface WebhookReads {
  /** The endpoint, if `tenant` may see it (notFound otherwise). */
  owned(tenant: Tenant, endpointId: string): Promise<{ endpoint_id: string; client_id: string }>;
}
