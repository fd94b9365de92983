/**
 * Mounts declared routes on express. Every route runs the same chain: authenticate → rate limit → validate
 * path, query and body → (POST) idempotency → handler → JSON answer. Domain refusals become their HTTP errors.
 */
import type { Express, Request, Response } from 'express';
import { DomainError } from '../domain/errors.ts';
import { CONTENTION_RETRY_AFTER_SECONDS } from '../eventstore/commandHandler.ts';
import { emptyObjectSchema } from '../../schemas/common.ts';
import { authenticate, type AuthenticationDeps } from './authentication.ts';
import { HttpError, invalidParam } from './errors.ts';
import { IDEMPOTENCY_KEY, requestFingerprint, type IdempotencyStore } from './idempotency.ts';
import type { RateLimiter } from './rateLimit.ts';
import type { AnyRoute, HandlerResult } from './route.ts';
import { compileValidator } from './validation.ts';

export interface RouterDeps {
  auth: AuthenticationDeps;
  rateLimiter: RateLimiter;
  idempotency: IdempotencyStore;
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

function send(res: Response, result: HandlerResult, replayed = false): void {
  if (result.headers) res.set(result.headers);
  if (replayed) res.set('Idempotent-Replayed', 'true');
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

    app[route.method](route.path, async (req: Request, res: Response) => {
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
          if (!route.raw && result) send(res, result);
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
        // A refusal is the request's answer and is replayed; a server error or contention is not (a retry may succeed).
        const retryable = error instanceof DomainError && error.kind === 'contention';
        if (httpError instanceof HttpError && httpError.statusCode < 500 && !retryable) {
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
      send(res, result);
    });
  }
}
