/**
 * A route is declared once, with its schemas: the same declaration mounts it on express (authentication,
 * rate limit, validation, idempotency, handler) and describes it in the OpenAPI document.
 */
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
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
 * The type a part of the request has once its schema validated it: derived from the schema (`FromSchema`),
 * so the schema is the one source. A route without a params or query schema is validated against the empty
 * object; one without a body schema takes no body.
 */
type Validated<Schema, Absent> = [Schema] extends [JSONSchema]
  // Any schema at all (the constraint, while a call is being inferred) derives nothing: deriving from every
  // schema at once is too deep for the compiler.
  ? [JSONSchema] extends [Schema] ? unknown : FromSchema<Schema>
  : Absent;

/** The validated request of a route with these schemas. */
export interface RequestInput<S extends RouteSchemas> {
  params: Validated<S['params'], Record<string, never>>;
  query: Validated<S['query'], Record<string, never>>;
  body: Validated<S['body'], undefined>;
}

/** What a handler receives once validation passed. */
export interface HandlerInput<S extends RouteSchemas> extends RequestInput<S> {
  req: Request;
  res: Response;
}

export interface RouteDefinition<S extends RouteSchemas> {
  method: Method;
  /** Express syntax: `/payments/:id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  schemas: S;
  /** Extra documented headers (e.g. service-api-version). */
  headers?: Array<{ name: string; description: string; schema: JSONSchema; required?: boolean }>;
  responses: Record<number, RouteResponse>;
  /** Answers itself (HTML, text) instead of returning a JSON result. */
  raw?: boolean;
  /**
   * `public` routes only: the budget a request draws on instead of its address's, named from the request (the
   * hosted checkout's status poll: its checkout token). A key without a budget yet is let in only while its
   * address has a token left; a request the route refuses (4xx: a malformed or unknown key) forgets the key's
   * budget and takes one of its address's tokens, so guessing keys costs what any public request costs.
   */
  budgetKey?(req: Request): string;
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
  verify?(input: RequestInput<S>): void;
  handler(input: HandlerInput<S>): Promise<HandlerResult | void>;
}

/**
 * A route as the router and the OpenAPI document see it, whatever its schemas: the router hands its handler
 * only what those schemas admitted, which is what the handler's types (derived from them) describe.
 */
export interface AnyRoute extends Omit<RouteDefinition<RouteSchemas>, 'verify' | 'handler'> {
  verify?(input: UncheckedInput): void;
  handler(input: UncheckedInput & { req: Request; res: Response }): Promise<HandlerResult | void>;
}

export interface UncheckedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** Declares a route; its handler's params, query and body are typed from the schemas it declares. */
export function defineRoute<S extends RouteSchemas>(route: RouteDefinition<S>): AnyRoute {
  return route;
}
