/**
 * The client: openapi-fetch over the generated types, with what every call of this API needs done once here.
 *
 * - Authentication: POST /auth with clientId and clientSecret (and the x-api-key header) gives a bearer token; it is
 *   renewed before it expires (REFRESH_BEFORE_EXPIRY_MS ahead) and once more when the service answers 401 anyway.
 *   Concurrent calls share one authentication.
 * - Idempotency: every POST carries an `Idempotency-Key`, a fresh UUID per call unless the caller gives one, and the
 *   same key on each retry of that call, so a retry never applies twice (POST /auth excepted: a token is not
 *   stored for replays, so it is asked for anew).
 * - Retries, at most `maxAttempts` sends per call (default MAX_ATTEMPTS, 4): after a 429 or a 503, and after a 409
 *   that carries Retry-After (a request with the same key still in flight, or contention on one object: nothing was
 *   applied). The wait is the answer's Retry-After (1 s when a 429 or 503 has none); a Retry-After longer than
 *   `maxRetryAfterMs` (default 30 s) is not waited for: the answer is returned. Other answers are returned at once.
 */
import createClient, { type Client } from 'openapi-fetch';
import { LedgerApiError, retryAfterMs } from './errors.ts';
import type { paths } from './openapi.ts';

/** Sends of one call at most: the first and three retries. */
export const MAX_ATTEMPTS = 4;
/** The longest Retry-After waited for. */
export const MAX_RETRY_AFTER_MS = 30_000;
/** The wait after a 429 or 503 without Retry-After. */
const DEFAULT_RETRY_AFTER_MS = 1_000;
/** A token is renewed this long before it expires (or halfway through a shorter life). */
export const REFRESH_BEFORE_EXPIRY_MS = 60_000;

export interface LedgerClientOptions {
  /** The service, e.g. http://localhost:3000 */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  /** Sent as User-Agent, which the service requires of client calls: name your application. */
  userAgent?: string;
  maxAttempts?: number;
  maxRetryAfterMs?: number;
  /** The fetch to send with (tests, proxies); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/** The headers the client sends itself: optional in every call's parameters (the service requires User-Agent). */
type SentByClient = 'User-Agent' | 'Idempotency-Key';
type WithClientHeaders<Operation> = Operation extends { parameters: { header: infer Header } }
  ? Omit<Operation, 'parameters'> & {
    parameters: Omit<Operation['parameters'], 'header'> & { header?: Omit<Header, SentByClient> & Partial<Pick<Header, Extract<keyof Header, SentByClient>>> };
  }
  : Operation;
/** The API's paths as this client's callers see them. */
export type ClientPaths = { [Path in keyof paths]: { [Method in keyof paths[Path]]: WithClientHeaders<paths[Path][Method]> } };

export interface LedgerClient extends Client<ClientPaths> {
  /** A bearer token, renewed when it is about to expire (for a call made without this client). */
  token(): Promise<string>;
}

interface Token { value: string; refreshAt: number }

export function createLedgerClient(options: LedgerClientOptions): LedgerClient {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
  const userAgent = options.userAgent ?? 'payments-ledger-client/0.1';
  const base = options.baseUrl.replace(/\/+$/, '');
  let current: Token | null = null;
  let authenticating: Promise<Token> | null = null;

  /** How long to wait before sending again, or null to answer with `response`. */
  function retryDelay(response: Response, attempt: number): number | null {
    if (attempt >= maxAttempts) return null;
    const asked = retryAfterMs(response.headers.get('retry-after'));
    const retryable = response.status === 429 || response.status === 503 || (response.status === 409 && asked !== null);
    if (!retryable) return null;
    const wait = asked ?? DEFAULT_RETRY_AFTER_MS;
    return wait > maxRetryAfterMs ? null : wait;
  }

  /** Sends `request` until an answer is not to be retried; `authorize` adds the bearer token. */
  async function withRetries(request: Request, authorize: boolean): Promise<Response> {
    const body = request.body === null ? undefined : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    if (!headers.has('user-agent')) headers.set('user-agent', userAgent);
    headers.set('x-api-key', options.apiKey);
    if (request.method === 'POST' && authorize && !headers.has('idempotency-key')) headers.set('idempotency-key', crypto.randomUUID());
    let renewedAfter401 = false;
    for (let attempt = 1; ; attempt++) {
      if (authorize) headers.set('authorization', `Bearer ${(await token()).value}`);
      const response = await send(new Request(request.url, { method: request.method, headers, body, signal: request.signal }));
      if (response.status === 401 && authorize && !renewedAfter401) {
        // The token was refused (revoked, or the service's signing key changed): one new token, one more try.
        renewedAfter401 = true;
        await response.body?.cancel();
        current = null;
        attempt--;
        continue;
      }
      const wait = retryDelay(response, attempt);
      if (wait === null) return response;
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  }

  function token(): Promise<Token> {
    if (current && Date.now() < current.refreshAt) return Promise.resolve(current);
    authenticating ??= authenticate().finally(() => { authenticating = null; });
    return authenticating;
  }

  async function authenticate(): Promise<Token> {
    const request = new Request(`${base}/auth`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: options.clientId, clientSecret: options.clientSecret }),
    });
    const response = await withRetries(request, false);
    const body = await response.json().catch(() => null) as { accessToken?: string; expiresIn?: number } | null;
    if (!response.ok || typeof body?.accessToken !== 'string' || typeof body.expiresIn !== 'number') {
      throw LedgerApiError.of(response, body);
    }
    const lifetimeMs = body.expiresIn * 1000;
    current = { value: body.accessToken, refreshAt: Date.now() + lifetimeMs - Math.min(REFRESH_BEFORE_EXPIRY_MS, lifetimeMs / 2) };
    return current;
  }

  const client = createClient<ClientPaths>({ baseUrl: base, fetch: (request) => withRetries(request, true) });
  return Object.assign(client, { token: async () => (await token()).value });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/**
 * The data of a call, or its failure as a LedgerApiError:
 * `const payment = await ok(ledger.POST('/payments', { body }))`.
 */
export async function ok<Data>(call: Promise<{ data?: Data; error?: unknown; response: Response }>): Promise<Data> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw LedgerApiError.of(response, error);
  return data as Data;
}
