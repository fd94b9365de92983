/**
 * Mounts declared routes on express. Every route runs the same chain: authenticate → rate limit → validate
 * path, query and body → (POST) idempotency → handler → JSON answer. Domain refusals become their HTTP errors.
 * A write's answer says `X-Read-Models: stale` when its wait for the read models ran out.
 */
import type { Express, Request, Response } from 'express';
import { DomainError } from '../domain/errors.ts';
import { emptyObjectSchema } from '../../schemas/common.ts';
import { authenticate, type AuthenticationDeps } from './authentication.ts';
import { HttpError, invalidParam } from './errors.ts';
import { IDEMPOTENCY_KEY, requestFingerprint, type IdempotencyStore } from './idempotency.ts';
import type { RateLimiter } from './rateLimit.ts';
import { READ_MODELS_HEADER, type ReadModelFreshness } from './readModelFreshness.ts';
import type { AnyRoute, HandlerResult } from './route.ts';
import { compileValidator } from './validation.ts';

export interface RouterDeps {
  auth: AuthenticationDeps;
  rateLimiter: RateLimiter;
  idempotency: IdempotencyStore;
  freshness: ReadModelFreshness;
}

const domainStatus = { notFound: 404, alreadyExists: 409, failedPrecondition: 422, invalid: 400 } as const;
const domainCategory = {
  notFound: 'notFound', alreadyExists: 'alreadyExist', failedPrecondition: 'failedPrecondition', invalid: 'invalidParam',
} as const;

export function toHttpError(error: unknown): unknown {
  if (error instanceof DomainError) return new HttpError(domainStatus[error.kind], domainCategory[error.kind], error.message);
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

function idempotencyScope(req: Request): string {
  return req.caller.kind === 'client' ? `client:${req.caller.clientId}` : req.caller.kind;
}

export function mountRoutes(app: Express, routes: readonly AnyRoute[], deps: RouterDeps): void {
  for (const route of routes) {
    const validateParams = compileValidator('path', route.schemas.params ?? emptyObjectSchema);
    const validateQuery = compileValidator('query', route.schemas.query ?? emptyObjectSchema);
    const validateBody = route.schemas.body ? compileValidator('body', route.schemas.body) : null;

    const handle = async (req: Request, res: Response): Promise<void> => {
      await authenticate(req, route.access, deps.auth);
      if (req.caller.kind !== 'anonymous') {
        deps.rateLimiter.take(req.caller.kind === 'client' ? req.caller.clientId : 'operator');
      }
      const params = validateParams(req.params);
      const query = validateQuery(req.query);
      let body: unknown;
      if (validateBody) body = validateBody(req.body);
      else if (!isEmptyBody(req.body)) throw invalidParam(`${route.method.toUpperCase()} ${route.path} takes no request body`);

      const key = route.method === 'post' ? req.get('idempotency-key') : undefined;
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
        throw invalidParam('header Idempotency-Key must be 1 to 255 printable ASCII characters');
      }
      if (key === undefined || route.raw) {
        try {
          const result = await route.handler({ params, query, body, req, res });
          await result?.readModels;
          if (!route.raw && result) send(res, result, false, deps.freshness.isStale(req.id));
        } catch (error) {
          throw toHttpError(error);
        }
        return;
      }

      const scope = idempotencyScope(req);
      const outcome = await deps.idempotency.begin(scope, key, requestFingerprint(req.method, req.originalUrl, body));
      if (outcome.kind === 'mismatch') {
        throw new HttpError(422, 'failedPrecondition', 'Idempotency-Key was already used with a different request');
      }
      if (outcome.kind === 'inFlight') {
        throw new HttpError(409, 'alreadyExist', 'a request with this Idempotency-Key is still being processed');
      }
      if (outcome.kind === 'replay') {
        send(res, { status: outcome.status, ...(outcome.body === null ? {} : { body: outcome.body }) }, true);
        return;
      }
      const { owner } = outcome;
      let result: HandlerResult;
      try {
        result = (await route.handler({ params, query, body, req, res })) ?? { status: 204 };
      } catch (error) {
        const httpError = toHttpError(error);
        if (httpError instanceof HttpError && httpError.statusCode < 500) {
          await deps.idempotency.complete(scope, key, owner, httpError.statusCode, httpError.toPayload());
        } else {
          await deps.idempotency.abandon(scope, key, owner).catch(() => undefined);
        }
        throw httpError;
      }
      await Promise.all([
        deps.idempotency.complete(scope, key, owner, result.status, withoutSecrets(result.body, route.secretFields)),
        result.readModels,
      ]);
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
