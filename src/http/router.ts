/**
 * Mounts declared routes on express. Every route runs the same chain: authenticate → rate limit → validate
 * path, query and body → (provider routes) verify the signature → (POST) idempotency → handler → JSON answer.
 * Domain refusals become their HTTP errors.
 *
 * Requests that are not authenticated as a client, operator or provider are rate limited per source address:
 * public routes and POST /auth take a token up front; on the other routes a request that fails before its
 * caller is known (a wrong key or signature, a bad provider body) takes one, and past the budget the answer
 * is a 429. A credential that needs a slow verification (scrypt) is verified only while the address has a
 * token left; a client whose key was verified before is served whatever its address's budget.
 * A public route may name a budget of its own instead (`budgetKey`: the checkout status poll, per checkout token);
 * a key new to it needs a token left at its address, and a refusal takes one.
 * A write's answer says `X-Read-Models: stale` when its wait for the read models ran out.
 */
import type { Express, Request, Response } from 'express';
import { DomainError } from '../domain/errors.ts';
import { CONTENTION_RETRY_AFTER_SECONDS } from '../eventstore/commandHandler.ts';
import { emptyObjectSchema } from '../../schemas/common.ts';
import { authenticate, type AuthenticationDeps } from './authentication.ts';
import { asUnavailable, HttpError, invalidParam } from './errors.ts';
import type { Caller } from './requestContext.ts';
import { IDEMPOTENCY_KEY, IN_FLIGHT_RETRY_AFTER_SECONDS, requestFingerprint, requestKeyFor, type IdempotencyStore } from './idempotency.ts';
import type { RateLimiter } from './rateLimit.ts';
import { READ_MODELS_HEADER, type ReadModelFreshness } from './readModelFreshness.ts';
import type { AnyRoute, HandlerResult, UncheckedInput } from './route.ts';
import { compileValidator } from './validation.ts';

export interface RouterDeps {
  auth: AuthenticationDeps;
  rateLimiter: RateLimiter;
  addressRateLimiter: RateLimiter;
  budgetRateLimiter: RateLimiter;
  idempotency: IdempotencyStore;
  freshness: ReadModelFreshness;
}

const domainStatus = { notFound: 404, alreadyExists: 409, failedPrecondition: 422, invalid: 400, contention: 409 } as const;
const domainCategory = {
  notFound: 'notFound', alreadyExists: 'alreadyExist', failedPrecondition: 'failedPrecondition', invalid: 'invalidParam',
  contention: 'alreadyExist',
} as const;

export function toHttpError(error: unknown): unknown {
  if (error instanceof DomainError) {
    const headers: Record<string, string> = error.kind === 'contention' ? { 'Retry-After': String(CONTENTION_RETRY_AFTER_SECONDS) } : {};
    return new HttpError(domainStatus[error.kind], domainCategory[error.kind], error.message, headers);
  }
  return error;
}

function send(res: Response, result: HandlerResult, replayed = false, stale = false): void {
  if (result.headers) res.set(result.headers);
  if (replayed) res.set('Idempotent-Replayed', 'true');
  if (stale) res.set(READ_MODELS_HEADER, 'stale');
  res.status(result.status);
  if (result.body === undefined) res.end();
  else res.json(result.body);
}

/** What may be kept for a replay: the body less the fields shown only once. */
function withoutSecrets(body: unknown, secretFields: readonly string[] | undefined): unknown {
  if (!secretFields || typeof body !== 'object' || body === null) return body;
  const kept = { ...(body as Record<string, unknown>) };
  for (const field of secretFields) delete kept[field];
  return kept;
}

function isEmptyBody(body: unknown): boolean {
  return body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0);
}

/**
 * Keys belong to an authenticated caller. An anonymous request has no scope: a key it sends is not claimed
 * (one scope shared by every anonymous caller would let anyone block anyone's key).
 */
function idempotencyScope(caller: Caller): string | null {
  switch (caller.kind) {
    case 'client': return `client:${caller.clientId}`;
    case 'operator': return 'operator';
    case 'provider': return 'provider';
    case 'anonymous': return null;
  }
}

/**
 * The bucket of a source address. IPv4-mapped IPv6 addresses are their IPv4 address; other IPv6 addresses
 * count per /64, the block one subscriber usually holds.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const withoutZone = address.split('%')[0]!;
  if (!withoutZone.includes(':')) return withoutZone;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(withoutZone);
  if (mapped) return mapped[1]!;
  const [head = '', tail = ''] = withoutZone.split('::');
  const first = head ? head.split(':') : [];
  const last = tail ? tail.split(':') : [];
  const groups = withoutZone.includes('::') ? [...first, ...Array<string>(Math.max(0, 8 - first.length - last.length)).fill('0'), ...last] : first;
  return `${groups.slice(0, 4).map((group) => group.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/**
 * Everything before idempotency: the per-address budget, authentication, the per-caller rate limit,
 * validation and (provider routes) the signature. Answers the validated input with `req.caller` set, or
 * throws the refusal.
 */
function admission(route: AnyRoute, deps: RouterDeps): (req: Request) => Promise<UncheckedInput> {
  if ((route.access === 'provider') !== (route.verify !== undefined)) {
    throw new Error(`${route.method.toUpperCase()} ${route.path}: provider routes, and only they, declare verify`);
  }
  if (route.budgetKey && route.access !== 'public') {
    throw new Error(`${route.method.toUpperCase()} ${route.path}: only public routes name a budget of their own`);
  }
  const countedUpFront = (route.access === 'public' && !route.budgetKey) || route.access === 'apiKey';
  const validateParams = compileValidator('path', route.schemas.params ?? emptyObjectSchema);
  const validateQuery = compileValidator('query', route.schemas.query ?? emptyObjectSchema);
  const validateBody = route.schemas.body ? compileValidator('body', route.schemas.body) : null;
  return async (req) => {
    const address = addressKey(req.socket.remoteAddress);
    if (countedUpFront) deps.addressRateLimiter.take(address);
    const budget = route.budgetKey?.(req);
    if (budget !== undefined) {
      // Without a limit there are no budgets to tell a new key by: the route's refusals still cost the address.
      if (deps.budgetRateLimiter.limits && !deps.budgetRateLimiter.has(budget)) deps.addressRateLimiter.check(address);
      deps.budgetRateLimiter.take(budget);
    }
    try {
      await authenticate(req, route.access, deps.auth, countedUpFront ? undefined : () => deps.addressRateLimiter.check(address));
      if (req.caller.kind === 'client' || req.caller.kind === 'operator') {
        deps.rateLimiter.take(req.caller.kind === 'client' ? req.caller.clientId : 'operator');
      }
      const params = validateParams(req.params);
      const query = validateQuery(req.query);
      let body: unknown;
      if (validateBody) body = validateBody(req.body);
      else if (!isEmptyBody(req.body)) throw invalidParam(`${route.method.toUpperCase()} ${route.path} takes no request body`);
      if (route.verify) {
        route.verify({ params, query, body });
        req.caller = { kind: 'provider' };
      }
      return { params, query, body };
    } catch (error) {
      const refusedBeforeCallerKnown = req.caller.kind === 'anonymous' && error instanceof HttpError && error.statusCode < 500;
      if (refusedBeforeCallerKnown && budget !== undefined) deps.budgetRateLimiter.forget(budget);
      if (refusedBeforeCallerKnown && !countedUpFront) deps.addressRateLimiter.take(address);
      throw error;
    }
  };
}

// Long as one request's chain in the order it runs (admission, Idempotency-Key claim, handler, kept answer), read as one protocol.
export function mountRoutes(app: Express, routes: readonly AnyRoute[], deps: RouterDeps): void {
  for (const route of routes) {
    const admit = admission(route, deps);

    const handle = async (req: Request, res: Response): Promise<void> => {
      const { params, query, body } = await admit(req);

      const key = route.method === 'post' ? req.get('idempotency-key') : undefined;
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
        throw invalidParam('header Idempotency-Key must be 1 to 255 printable ASCII characters');
      }
      const scope = idempotencyScope(req.caller);
      if (key === undefined || scope === null || route.raw) {
        try {
          const result = await route.handler({ params, query, body, req, res });
          await result?.readModels;
          if (!route.raw && result) send(res, result, false, deps.freshness.isStale(req.id));
        } catch (error) {
          const httpError = toHttpError(error);
          if (route.budgetKey && httpError instanceof HttpError && httpError.statusCode < 500) {
            // A key the route refused (no such session): its budget goes, and the guess costs its address a token.
            deps.budgetRateLimiter.forget(route.budgetKey(req));
            deps.addressRateLimiter.take(addressKey(req.socket.remoteAddress));
          }
          throw httpError;
        }
        return;
      }

      const fingerprint = requestFingerprint(req.method, req.originalUrl, body);
      const outcome = await deps.idempotency.begin(scope, key, fingerprint);
      if (outcome.kind === 'mismatch') {
        throw new HttpError(422, 'failedPrecondition', 'Idempotency-Key was already used with a different request');
      }
      if (outcome.kind === 'inFlight') {
        throw new HttpError(409, 'alreadyExist', 'a request with this Idempotency-Key is still being processed; send it again after Retry-After',
          { 'Retry-After': String(IN_FLIGHT_RETRY_AFTER_SECONDS) });
      }
      if (outcome.kind === 'replay') {
        send(res, { status: outcome.status, ...(outcome.body === null ? {} : { body: outcome.body }) }, true);
        return;
      }
      const { owner } = outcome;
      // What the request's commands create takes ids derived from it: run again, it finds what it made.
      req.requestKey = requestKeyFor(scope, key, fingerprint);
      let result: HandlerResult;
      try {
        result = (await route.handler({ params, query, body, req, res })) ?? { status: 204 };
      } catch (error) {
        const httpError = asUnavailable(toHttpError(error));
        // A refusal is the request's answer and is replayed; a server error, an outage or contention is not (a
        // retry may succeed, and finds whatever this run recorded).
        const retryable = error instanceof DomainError && error.kind === 'contention';
        if (httpError instanceof HttpError && httpError.statusCode < 500 && !retryable) {
          // Not kept (the database gone meanwhile): the key is released, and a retry is refused the same way.
          await deps.idempotency.complete(scope, key, owner, httpError.statusCode, httpError.toPayload()).catch(() => undefined);
        } else {
          await deps.idempotency.abandon(scope, key, owner);
        }
        throw httpError;
      }
      // Applied: the answer goes out even when it cannot be kept (the key is then released, and a retry answers the
      // same from what this run recorded). It is kept while the read models catch up, riding with the claims of the
      // requests that arrive meanwhile; on its own only once the wait is over.
      const kept = deps.idempotency.complete(scope, key, owner, result.status, withoutSecrets(result.body, route.secretFields), { lazy: true })
        .catch((error: unknown) => req.log.warn({ err: error }, 'the answer of an applied request could not be kept for its Idempotency-Key'));
      try {
        await result.readModels;
      } finally {
        deps.idempotency.sendWaiting();
      }
      await kept;
      send(res, result, false, deps.freshness.isStale(req.id));
    };

    if (route.method === 'get') {
      app.get(route.path, handle);
      continue;
    }
    // Only writes wait for the read models; their appends and waits are followed while they run.
    app[route.method](route.path, async (req: Request, res: Response) => {
      deps.freshness.begin(req.id);
      try {
        await handle(req, res);
      } finally {
        deps.freshness.end(req.id);
      }
    });
  }
}
