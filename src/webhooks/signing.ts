/**
 * How a delivery is signed (README, "Webhooks": verifying a signature). Three signatures, each HMAC-SHA256:
 * - `X-Webhook-Signature`: hex, over the raw body, under the secretKey's bytes, as the interface says;
 * - `X-Webhook-Signature-Timestamped`: hex, over `"<X-Webhook-Timestamp>.<raw body>"`, same key, for receivers
 *   that refuse old or replayed deliveries;
 * - `webhook-signature` (Standard Webhooks, with `webhook-id` and `webhook-timestamp`): `v1,<base64>` over
 *   `"<webhook-id>.<webhook-timestamp>.<raw body>"`, under the endpoint's Standard Webhooks key
 *   (`standardWebhooksKey`), so a receiver verifies it with any Standard Webhooks library.
 */
import { createHmac } from 'node:crypto';

const SIGNATURE_HEADER = 'x-webhook-signature';
const TIMESTAMPED_SIGNATURE_HEADER = 'x-webhook-signature-timestamped';
const TIMESTAMP_HEADER = 'x-webhook-timestamp';
const ID_HEADER = 'x-webhook-id';
const EVENT_ID_HEADER = 'x-webhook-event-id';
const SEQUENCE_HEADER = 'x-webhook-sequence';
const EVENT_TYPE_HEADER = 'x-webhook-event-type';
const STANDARD_ID_HEADER = 'webhook-id';
const STANDARD_TIMESTAMP_HEADER = 'webhook-timestamp';
const STANDARD_SIGNATURE_HEADER = 'webhook-signature';

/** The prefix the Standard Webhooks specification gives a serialized symmetric secret. */
export const STANDARD_SECRET_PREFIX = 'whsec_';
/** Bytes of a Standard Webhooks symmetric key, as that specification bounds them (192 to 512 bits). */
export const STANDARD_KEY_MIN_BYTES = 24;
export const STANDARD_KEY_MAX_BYTES = 64;
/** Standard base64 (RFC 4648 section 4) with its padding: the encoding Standard Webhooks libraries decode. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The key of the Standard Webhooks signature for an endpoint's secretKey:
 * - a secretKey in that specification's form (`whsec_` then standard base64 of 24 to 64 bytes, as the generated
 *   ones are): the decoded bytes, which is how its libraries read such a secret (`new Webhook(secretKey)`);
 * - any other secretKey: its own bytes (printable ASCII), the key of the other two signatures, which those
 *   libraries take as `new Webhook(secretKey, { format: 'raw' })`, or serialized as `whsec_<base64 of secretKey>`.
 * Registration refuses a `whsec_` secretKey that is not in that form (`standardSecretProblem`); one generated before
 * this rule (base64url, which the libraries do not decode) counts as any other.
 */
export function standardWebhooksKey(secretKey: string): Buffer {
  return decodedStandardSecret(secretKey) ?? Buffer.from(secretKey, 'utf8');
}

function decodedStandardSecret(secretKey: string): Buffer | null {
  if (!secretKey.startsWith(STANDARD_SECRET_PREFIX)) return null;
  const encoded = secretKey.slice(STANDARD_SECRET_PREFIX.length);
  if (!CANONICAL_BASE64.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= STANDARD_KEY_MIN_BYTES && key.length <= STANDARD_KEY_MAX_BYTES ? key : null;
}

/** Why a secretKey to be registered cannot be read as its `whsec_` prefix announces; null when it can, or has no such prefix. */
export function standardSecretProblem(secretKey: string): string | null {
  if (!secretKey.startsWith(STANDARD_SECRET_PREFIX) || decodedStandardSecret(secretKey)) return null;
  return `secretKey: one starting with ${STANDARD_SECRET_PREFIX} is a Standard Webhooks secret, standard base64 (with its = padding) ` +
    `of ${STANDARD_KEY_MIN_BYTES} to ${STANDARD_KEY_MAX_BYTES} bytes after the prefix; send it so, or a secret without that prefix`;
}

export function signBody(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

export function signTimestamped(secret: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.${body}`, 'utf8').digest('hex');
}

/** The Standard Webhooks `webhook-signature` value: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`. */
export function signStandard(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', standardWebhooksKey(secret)).update(`${messageId}.${timestampSeconds}.${body}`, 'utf8');
  return `v1,${mac.digest('base64')}`;
}

/** The headers of one attempt of a delivery. `timestampSeconds`: Unix time of the attempt. */
export function deliveryHeaders(input: {
  secret: string; body: string; deliveryId: string; eventId: string; eventType: string; sequence: number | null; timestampSeconds: number;
}): Record<string, string> {
  const timestamp = String(input.timestampSeconds);
  return {
    'content-type': 'application/json',
    'user-agent': 'payments-ledger-webhooks/1',
    [ID_HEADER]: input.deliveryId,
    [EVENT_ID_HEADER]: input.eventId,
    [EVENT_TYPE_HEADER]: input.eventType,
    [TIMESTAMP_HEADER]: timestamp,
    [SIGNATURE_HEADER]: signBody(input.secret, input.body),
    [TIMESTAMPED_SIGNATURE_HEADER]: signTimestamped(input.secret, input.timestampSeconds, input.body),
    // The delivery id is a UUID: it holds no '.', which the signed content uses as its separator.
    [STANDARD_ID_HEADER]: input.deliveryId,
    [STANDARD_TIMESTAMP_HEADER]: timestamp,
    [STANDARD_SIGNATURE_HEADER]: signStandard(input.secret, input.deliveryId, input.timestampSeconds, input.body),
    ...(input.sequence !== null ? { [SEQUENCE_HEADER]: String(input.sequence) } : {}),
  };
}
