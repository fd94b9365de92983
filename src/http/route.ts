/**
 * A route is declared once, with its schemas: the same declaration mounts it on express (authentication,
 * rate limit, validation, idempotency, handler) and describes it in the OpenAPI document.
 */
import type { JSONSchema } from 'json-schema-to-ts';
import type { Request, Response } from 'express';

export type Access =
  /** x-api-key + User-Agent + bearer token of the same client */
  | 'client'
  /** x-api-key only (POST /auth) */
  | 'apiKey'
  /** x-operator-key */
  | 'operator'
  /** the payment provider: the route's `verify` checks the signature its body carries */
  | 'provider'
  /** nothing: health, docs, metrics */
  | 'public';

export type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';

export interface RouteResponse {
  description: string;
  schema?: JSONSchema;
  contentType?: string;
}

export interface HandlerResult {
  status: number;
  /** JSON body; omitted for an empty response. */
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * The read models catching up with what the handler wrote (read-your-writes, bounded, never rejects). The
   * answer is sent only once they have; the idempotency answer is recorded meanwhile, not after.
   */
  readModels?: Promise<void>;
}

export interface RouteSchemas {
  params?: JSONSchema;
  query?: JSONSchema;
  body?: JSONSchema;
}

/**
 * What a handler receives once validation passed. The values are typed by the handler itself with the
 * `FromSchema` types its schemas module exports (inferring them through this generic declaration would be
 * too deep for the compiler).
 */
export interface HandlerInput {
  params: any;
  query: any;
  body: any;
  req: Request;
  res: Response;
}

export interface RouteDefinition {
  method: Method;
  /** Express syntax: `/payments/:id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  schemas: RouteSchemas;
  /** Extra documented headers (e.g. service-api-version). */
  headers?: Array<{ name: string; description: string; schema: JSONSchema; required?: boolean }>;
  responses: Record<number, RouteResponse>;
  /** Answers itself (HTML, text) instead of returning a JSON result. */
  raw?: boolean;
  /**
   * Top-level response fields that are shown once (credentials, tokens): never stored for idempotent
   * replays. A replay answers the same status and body without them.
   */
  secretFields?: readonly string[];
  /**
   * For `provider` access (and only there): checks the signature of the validated request, throwing a 401
   * when it does not match. It runs after validation and before Idempotency-Key is claimed, so a request
   * that fails it claims no key.
   */
  verify?(input: Pick<HandlerInput, 'params' | 'query' | 'body'>): void;
  handler(input: HandlerInput): Promise<HandlerResult | void>;
}

export type AnyRoute = RouteDefinition;

export function defineRoute(route: RouteDefinition): RouteDefinition {
  return route;
}
