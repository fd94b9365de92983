/**
 * The HTTP edge, assembled: request context, metrics, JSON bodies (bounded in size and nesting), every declared route, the
 * OpenAPI document built from the same declarations, then 404 and the error payload for everything else.
 */
import express, { type Express } from 'express';
import { contexts } from '../contexts.ts';
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
}

export function allRoutes(services: Services, document: () => Record<string, unknown>): AnyRoute[] {
  return [...systemRoutes(services, document), ...contexts.flatMap((context) => context.routes?.(services) ?? [])];
}

export function createApp(services: Services, options: AppOptions = {}): { app: Express; routes: AnyRoute[] } {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('trust proxy', false);

  let document: Record<string, unknown> | null = null;
  const routes = allRoutes(services, () => (document ??= buildOpenApiDocument(routes)));

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
