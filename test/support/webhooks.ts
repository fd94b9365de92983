/** What the webhook tests share: a dispatcher of their own (their clock, their database), payload schemas, signatures. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Database } from '../../src/db/database.ts';
import { silentLogger } from '../../src/logging.ts';
import type { Services } from '../../src/http/services.ts';
import { WebhookDispatcher, type DispatcherOptions } from '../../src/webhooks/dispatcher.ts';
import { webhookSecretBox } from '../../src/webhooks/secrets.ts';
import {
  customerEventPayloadSchema, testClockEventPayloadSchema, testEventPayloadSchema, transactionEventPayloadSchema,
} from '../../schemas/webhooks.ts';

export function testDispatcher(
  services: Services, options: Partial<DispatcherOptions> & { database?: Database } = {},
): WebhookDispatcher {
  const database = options.database ?? services.storage.database;
  return new WebhookDispatcher({
    database, secrets: () => webhookSecretBox(database, services.config.webhookSecretsKey), logger: silentLogger,
    now: () => services.runtime.now(), owner: 'test', allowPrivate: true, maxConcurrent: 16, maxPerEndpoint: 4, idlePollMs: 20,
    ...options,
  });
}

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => void;
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validators = {
  transaction: ajv.compile(transactionEventPayloadSchema),
  customer: ajv.compile(customerEventPayloadSchema),
  test: ajv.compile(testEventPayloadSchema),
  testClock: ajv.compile(testClockEventPayloadSchema),
};

/** The payload's problems against the schema written from the interface for its type (empty when it conforms). */
export function payloadProblems(payload: { eventType: string }): string[] {
  const validate = payload.eventType === 'customer.levelChanged' ? validators.customer
    : payload.eventType === 'webhook.test' ? validators.test
      : payload.eventType === 'test_clock.ready' ? validators.testClock : validators.transaction;
  return validate(payload) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** How a receiver checks a delivery, in the few lines README shows: both signatures, over the raw body. */
export function verifySignatures(secret: string, rawBody: string, headers: Record<string, string | string[] | undefined>): boolean {
  const same = (expected: string, given: unknown) => typeof given === 'string' && given.length === expected.length &&
    timingSafeEqual(Buffer.from(expected), Buffer.from(given));
  const body = createHmac('sha256', secret).update(rawBody).digest('hex');
  const timestamped = createHmac('sha256', secret).update(`${headers['x-webhook-timestamp']}.${rawBody}`).digest('hex');
  return same(body, headers['x-webhook-signature']) && same(timestamped, headers['x-webhook-signature-timestamped']);
}
