/**
 * Verifying a delivery: `verifyWebhook(rawBody, headers, secret)` answers its payload, or throws
 * WebhookVerificationError. Checked, on the raw body as received (before any JSON parsing):
 * - the Standard Webhooks signature (`webhook-signature`: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
 *   any of its space-separated signatures), under the endpoint's Standard Webhooks key: the bytes a `whsec_<base64>`
 *   secret encodes (as the service generates them), or the secret's own bytes for a secret of your own;
 * - the service's own headers: `X-Webhook-Signature` (hex HMAC-SHA256 of the body under the secret) and
 *   `X-Webhook-Signature-Timestamped` (of `"<X-Webhook-Timestamp>.<body>"`).
 * Every signature the delivery carries must match, at least one of them must cover a timestamp, and that timestamp
 * must be within `toleranceSeconds` of now (300 by default), so a delivery replayed later is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './openapi.ts';

export type WebhookPayload =
  | components['schemas']['TransactionWebhookPayload']
  | components['schemas']['CustomerWebhookPayload']
  | components['schemas']['TestWebhookPayload'];

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** How far a delivery's timestamp may be from now, by default. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

const STANDARD_PREFIX = 'whsec_';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Bytes of a Standard Webhooks key, as that specification bounds them. */
const STANDARD_KEY_BYTES = { min: 24, max: 64 };

/** The endpoint's Standard Webhooks key for its secretKey (the service's rule: src/webhooks/signing.ts). */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(STANDARD_PREFIX)) {
    const encoded = secret.slice(STANDARD_PREFIX.length);
    const key = CANONICAL_BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : null;
    if (key && key.length >= STANDARD_KEY_BYTES.min && key.length <= STANDARD_KEY_BYTES.max) return key;
  }
  return Buffer.from(secret, 'utf8');
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
  const value = found?.[1];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function same(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export function verifyWebhook(
  rawBody: string | Uint8Array, headers: HeaderBag, secret: string,
  options: { toleranceSeconds?: number; now?: () => Date } = {},
): WebhookPayload {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  const hmac = (key: Buffer | string, ...parts: Array<string | Buffer>) => {
    const mac = createHmac('sha256', key);
    for (const part of parts) mac.update(part);
    return mac.digest();
  };
  const recent = (timestamp: string | null, which: string) => {
    if (timestamp === null || !/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError(`${which} is missing or not Unix seconds`);
    if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
      throw new WebhookVerificationError(`${which} is more than ${tolerance} s from now: an old or replayed delivery`);
    }
  };
  let timestamped = false;

  const standard = header(headers, 'webhook-signature');
  if (standard !== null) {
    const id = header(headers, 'webhook-id');
    const timestamp = header(headers, 'webhook-timestamp');
    if (!id) throw new WebhookVerificationError('webhook-id is missing');
    recent(timestamp, 'webhook-timestamp');
    const expected = hmac(standardWebhooksKey(secret), `${id}.${timestamp}.`, body);
    const matches = standard.split(' ').some((signature) => {
      const [version, value] = signature.split(',');
      return version === 'v1' && value !== undefined && same(expected, Buffer.from(value, 'base64'));
    });
    if (!matches) throw new WebhookVerificationError('webhook-signature does not match');
    timestamped = true;
  }

  const timestampedLegacy = header(headers, 'x-webhook-signature-timestamped');
  if (timestampedLegacy !== null) {
    const timestamp = header(headers, 'x-webhook-timestamp');
    recent(timestamp, 'X-Webhook-Timestamp');
    if (!same(hmac(secret, `${timestamp}.`, body), Buffer.from(timestampedLegacy, 'hex'))) {
      throw new WebhookVerificationError('X-Webhook-Signature-Timestamped does not match');
    }
    timestamped = true;
  }

  const legacy = header(headers, 'x-webhook-signature');
  if (legacy !== null && !same(hmac(secret, body), Buffer.from(legacy, 'hex'))) {
    throw new WebhookVerificationError('X-Webhook-Signature does not match');
  }
  if (!timestamped) {
    throw new WebhookVerificationError('no timestamped signature (webhook-signature or X-Webhook-Signature-Timestamped): cannot tell a replay');
  }
  try {
    return JSON.parse(body.toString('utf8')) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
}
