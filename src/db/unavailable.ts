/**
 * Whether an error says the database or the event store could not be reached (or is restarting), rather than
 * that a request or the code was wrong: such a fault is answered 503 with Retry-After, never 500.
 */

/** SQLSTATE classes and codes of a server going away or not taking sessions now. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, or in recovery
  '53300', // too_many_connections
]);

/** Node socket errors of a connection refused, reset or timed out. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** What pg and pg-pool say, without a code, when a connection is lost or cannot be had in time. */
const PG_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^Cannot use a pool after calling end on the pool/,
];

/** EventStoreDB client error types of a server not reachable or not answering in time. */
const EVENT_STORE_TYPES = new Set(['unavailable', 'timeout', 'deadline-exceeded', 'not-leader']);

/** Causes are followed this deep (an error wrapping an error …). */
const MAX_CAUSE_DEPTH = 4;

export function isUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > MAX_CAUSE_DEPTH) return false;
  const { code, message, type, cause } = error as { code?: unknown; message?: unknown; type?: unknown; cause?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || NETWORK_CODES.has(code)) return true;
  }
  if (typeof message === 'string' && PG_MESSAGES.some((pattern) => pattern.test(message))) return true;
  if (typeof type === 'string' && EVENT_STORE_TYPES.has(type)) return true;
  if (error instanceof AggregateError && error.errors.some((inner) => isUnavailable(inner, depth + 1))) return true;
  return isUnavailable(cause, depth + 1);
}
