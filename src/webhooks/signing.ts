/**
 * How a delivery is signed (README, "Webhooks": verifying a signature). Both signatures are hex HMAC-SHA256
 * under the endpoint's secret:
 * - `X-Webhook-Signature`: over the raw body, as the interface says;
 * - `X-Webhook-Signature-Timestamped`: over `"<X-Webhook-Timestamp>.<raw body>"`, for receivers that refuse
 *   old or replayed deliveries (a receiver checks the timestamp is recent and the signature matches).
 */
import { createHmac } from 'node:crypto';

const SIGNATURE_HEADER = 'x-webhook-signature';
const TIMESTAMPED_SIGNATURE_HEADER = 'x-webhook-signature-timestamped';
const TIMESTAMP_HEADER = 'x-webhook-timestamp';
const ID_HEADER = 'x-webhook-id';
const EVENT_ID_HEADER = 'x-webhook-event-id';
const SEQUENCE_HEADER = 'x-webhook-sequence';
const EVENT_TYPE_HEADER = 'x-webhook-event-type';

export function signBody(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

export function signTimestamped(secret: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.${body}`, 'utf8').digest('hex');
}

/** The headers of one attempt of a delivery. `timestampSeconds`: Unix time of the attempt. */
export function deliveryHeaders(input: {
  secret: string; body: string; deliveryId: string; eventId: string; eventType: string; sequence: number | null; timestampSeconds: number;
}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'payments-ledger-webhooks/1',
    [ID_HEADER]: input.deliveryId,
    [EVENT_ID_HEADER]: input.eventId,
    [EVENT_TYPE_HEADER]: input.eventType,
    [TIMESTAMP_HEADER]: String(input.timestampSeconds),
    [SIGNATURE_HEADER]: signBody(input.secret, input.body),
    [TIMESTAMPED_SIGNATURE_HEADER]: signTimestamped(input.secret, input.timestampSeconds, input.body),
    ...(input.sequence !== null ? { [SEQUENCE_HEADER]: String(input.sequence) } : {}),
  };
}
