/** What the service answers when a call fails, as a typed error. */
import type { components } from './openapi.ts';

/** The service's error categories (the `error` field of every error answer). */
export type ErrorCategory = components['schemas']['Error']['error'];

/**
 * A call the service refused or could not serve, after the client's retries: `{statusCode, error, message}` as the
 * service answered it. `error` is null when the answer was not the service's (a proxy's page, say), and `body`
 * then holds what came.
 */
export class LedgerApiError extends Error {
  override readonly name = 'LedgerApiError';

  constructor(
    readonly statusCode: number,
    readonly error: ErrorCategory | null,
    message: string,
    /** Seconds the answer's Retry-After asked to wait, when it had one. */
    readonly retryAfterSeconds: number | null,
    readonly body: unknown,
  ) {
    super(message);
  }

  /** From an answer and its body (parsed JSON, or text). */
  static of(response: Response, body: unknown): LedgerApiError {
    const retryAfter = retryAfterMs(response.headers.get('retry-after'));
    const retryAfterSeconds = retryAfter === null ? null : Math.ceil(retryAfter / 1000);
    if (isErrorBody(body)) return new LedgerApiError(body.statusCode, body.error, body.message, retryAfterSeconds, body);
    const text = typeof body === 'string' ? body.slice(0, 200) : '';
    return new LedgerApiError(response.status, null, `HTTP ${response.status}${text ? `: ${text}` : ''}`, retryAfterSeconds, body);
  }
}

function isErrorBody(body: unknown): body is components['schemas']['Error'] {
  const candidate = body as Partial<components['schemas']['Error']> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.statusCode === 'number'
    && typeof candidate.error === 'string' && typeof candidate.message === 'string';
}

/** Retry-After in milliseconds: delay-seconds or an HTTP date (RFC 9110 section 10.2.3); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
