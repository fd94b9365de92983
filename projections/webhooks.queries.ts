/**
 * Queries of the webhook endpoints read model: the rows routes answer with, and the webhooks' port
 * (src/webhooks/ports.ts), which `webhookReads` implements.
 */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { WebhookEndpointRow } from './webhooks.ts';
import type { ReadModels } from './readModels.ts';

/** The endpoint's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedWebhook(db: Kysely<ReadModels>, tenant: Tenant, endpointId: string): Promise<WebhookEndpointRow> {
  return findOwned(db, 'webhook_endpoints', tenant, 'endpoint_id', endpointId, 'webhook');
}

/** The webhooks' port (src/webhooks/ports.ts) over the read models. */
export function webhookReads(db: Kysely<ReadModels>) {
  return { owned: (tenant: Tenant, endpointId: string) => ownedWebhook(db, tenant, endpointId) };
}
