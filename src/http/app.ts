/**
 * The HTTP edge, assembled: request context, metrics, JSON bodies (bounded in size and nesting), every declared route, the
 * OpenAPI document built from the same declarations, then 404 and the error payload for everything else.
 */
import express, { type Express } from 'express';
import { contexts as serviceContexts } from '../contexts.ts';
import type { ContextModule } from '../module.ts';
import { errorHandler, unknownRoute } from './errors.ts';
import { jsonBody } from './jsonBody.ts';
import { metricsMiddleware } from './metrics.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { requestContext } from './requestContext.ts';
import type { AnyRoute } from './route.ts';
import { mountRoutes } from './router.ts';
import type { Services } from './services.ts';
import { systemRoutes } from './systemRoutes.ts';

export interface AppOptions {
  /** Routes added by tests (e.g. one that crashes on purpose); not documented. */
  extraRoutes?: AnyRoute[];
  /** The contexts whose routes to mount (src/contexts.ts unless a test adds one of its own). */
  contexts?: readonly ContextModule[];
}

export function allRoutes(
  services: Services, document: () => Record<string, unknown>, contexts: readonly ContextModule[] = serviceContexts,
): AnyRoute[] {
  return [...systemRoutes(services, document), ...contexts.flatMap((context) => context.routes?.(services) ?? [])];
}

/**
 * The OpenAPI document of every route, built without a service: what `/openapi.json` serves, for the typed client's
 * generator (`npm run client:generate`). Describing the routes reads no service; one that tried would throw here.
 */
export function describeApi(): Record<string, unknown> {
  const absent = (what: string): unknown => new Proxy(() => undefined, {
    get: (_target, key) => { throw new Error(`${what}.${String(key)}: describing the API uses no service`); },
    apply: () => { throw new Error(`${what}(): describing the API uses no service`); },
  });
  const services = new Proxy({}, { get: (_target, key) => absent(`services.${String(key)}`) }) as Services;
  let document: Record<string, unknown> | null = null;
  const routes = allRoutes(services, () => document!);
  document = buildOpenApiDocument(routes);
  return document;
}

export function createApp(services: Services, options: AppOptions = {}): { app: Express; routes: AnyRoute[] } {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('trust proxy', false);

  let document: Record<string, unknown> | null = null;
  const routes = allRoutes(services, () => (document ??= buildOpenApiDocument(routes)), options.contexts);

  app.use(requestContext(services.logger));
  app.use(metricsMiddleware(services.metrics));
  app.use(jsonBody(services.config.bodyLimitBytes));
  mountRoutes(app, [...routes, ...(options.extraRoutes ?? [])], {
    auth: { clients: services.clients, tokens: services.tokens, operatorApiKey: services.config.operatorApiKey },
    rateLimiter: services.rateLimiter,
    addressRateLimiter: services.addressRateLimiter,
    budgetRateLimiter: services.budgetRateLimiter,
    idempotency: services.idempotency,
    freshness: services.freshness,
  });
  app.use(unknownRoute);
  app.use(errorHandler(services.logger));
  return { app, routes };
}
