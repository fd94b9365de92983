/**
 * Commands on webhook endpoints, and the self-service calls on their deliveries. The endpoint's stream decides
 * every change (and refuses another client's endpoint as not found); the outbox calls check the endpoint is the
 * client's first, from the read model.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { CreateWebhook, RotateSecret, UpdateWebhook } from '../../schemas/webhooks.ts';
import { runCommand } from '../eventstore/streams.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { domainInvalid, domainNotFound } from '../domain/errors.ts';
import type { Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import { definedOnly } from '../../schemas/events/common.ts';
import { webhookStreamType } from './decider.ts';
import { webhookStream } from './events.ts';
import { enqueueTestPing, retryDelivery } from './outbox.ts';
import { generateWebhookSecret, webhookSecretBox, type SecretBox } from './secrets.ts';
import { standardSecretProblem } from './signing.ts';

export function secretBoxOf(platform: Platform): Promise<SecretBox> {
  return webhookSecretBox(platform.storage.database, platform.config.webhookSecretsKey);
}

/** The secret sent, refused when its `whsec_` prefix promises a form it does not have; or a generated one. */
function chosenSecret(sent: string | undefined): string {
  if (sent === undefined) return generateWebhookSecret();
  const problem = standardSecretProblem(sent);
  if (problem) throw domainInvalid(problem);
  return sent;
}

/** Registers an endpoint; answers its id and its secret (given or generated), which is never shown again. */
export async function registerWebhook(
  platform: Platform, clientId: string, input: CreateWebhook, metadata: EventMetadata,
): Promise<{ endpointId: string; secretKey: string }> {
  const endpointId = createdId(platform.runtime, metadata, 'webhook endpoint');
  const secretKey = chosenSecret(input.secretKey);
  const box = await secretBoxOf(platform);
  const { events, repeated } = await runCommand(platform, webhookStreamType, webhookStream(endpointId), {
    type: 'RegisterEndpoint', tenant: { clientId }, allowPrivate: platform.config.webhookAllowPrivate, now: platform.runtime.now(),
    endpoint: { endpointId, clientId, url: input.url, events: input.events ? [...input.events] : null, description: input.description ?? null,
      secret: box.seal(endpointId, secretKey) },
  }, metadata);
  // The same request run again (its first answer never arrived): the secret is the one its first run recorded.
  const registered = repeated ? events.find((e) => e.type === 'WebhookEndpointRegistered') : undefined;
  return { endpointId, secretKey: registered ? box.open(endpointId, registered.data.secret) : secretKey };
}

export async function updateWebhook(platform: Platform, tenant: Tenant, endpointId: string, input: UpdateWebhook, metadata: EventMetadata): Promise<void> {
  // Field by field: a field added to the request reaches no event until the event's contract has it too.
  const changes = definedOnly({
    url: input.url, events: input.events === undefined || input.events === null ? input.events : [...input.events],
    description: input.description, enabled: input.enabled,
  });
  await runCommand(platform, webhookStreamType, webhookStream(endpointId), {
    type: 'UpdateEndpoint', tenant, changes, allowPrivate: platform.config.webhookAllowPrivate, now: platform.runtime.now(),
  }, metadata);
}

/** Replaces the secret; answers the new one, shown this once. Deliveries signed from now on use it. */
export async function rotateWebhookSecret(
  platform: Platform, tenant: Tenant, endpointId: string, input: RotateSecret, metadata: EventMetadata,
): Promise<string> {
  const secretKey = chosenSecret(input.secretKey);
  const secret = (await secretBoxOf(platform)).seal(endpointId, secretKey);
  await runCommand(platform, webhookStreamType, webhookStream(endpointId), { type: 'RotateSecret', tenant, secret, now: platform.runtime.now() }, metadata);
  return secretKey;
}

export async function deleteWebhook(platform: Platform, tenant: Tenant, endpointId: string, metadata: EventMetadata): Promise<void> {
  await runCommand(platform, webhookStreamType, webhookStream(endpointId), { type: 'DeleteEndpoint', tenant, now: platform.runtime.now() }, metadata);
}

/** Sends one of the endpoint's deliveries again (see retryDelivery). */
export async function retryWebhookDelivery(platform: Platform, tenant: Tenant, endpointId: string, deliveryId: string): Promise<void> {
  await platform.reads.webhooks.owned(tenant, endpointId);
  if (!(await retryDelivery(platform.storage.database, endpointId, deliveryId, platform.runtime.now()))) {
    throw domainNotFound(`delivery ${deliveryId} of webhook ${endpointId} not found (deliveries delivered or dropped longer ago than the `
      + 'retention, WEBHOOK_DELIVERY_RETENTION_DAYS, are purged)');
  }
}

/** Queues a signed ping to the endpoint; answers the delivery's id. */
export async function pingWebhook(platform: Platform, tenant: Tenant, endpointId: string): Promise<string> {
  const endpoint = await platform.reads.webhooks.owned(tenant, endpointId);
  return enqueueTestPing(platform.storage.database, endpointId, endpoint.client_id, platform.runtime.now());
}
