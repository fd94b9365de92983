/**
 * The OpenAPI 3.1 document, built from the route declarations and their JSON Schemas: what is validated is
 * what is documented.
 */
import { sample } from 'openapi-sampler';
import { errorSchema } from '../../schemas/common.ts';
import {
  customerEventPayloadSchema, testClockEventPayloadSchema, testEventPayloadSchema, transactionEventPayloadSchema,
} from '../../schemas/webhooks.ts';
import { MAX_BODY_DEPTH } from './jsonBody.ts';
import { READ_MODELS_HEADER } from './readModelFreshness.ts';
import type { AnyRoute } from './route.ts';

export const API_VERSION = '1.0.0';

type Json = Record<string, unknown>;

export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const ERROR_REF = '#/components/schemas/Error';
const errorRef = { $ref: ERROR_REF };

/**
 * The category each error status answers with (src/http/errors.ts, router.ts), and a message of the kind it carries:
 * the example of every error response, so the reference shows a 404 as a 404 rather than a sample of the schema.
 */
const ERROR_EXAMPLES: Readonly<Record<number, { error: string; message: string }>> = {
  400: { error: 'invalidParam', message: 'query parameter limit must be <= 500' },
  401: { error: 'unauthorized', message: 'authentication failed' },
  403: { error: 'forbiddenOperation', message: 'operator routes are disabled: OPERATOR_API_KEY is not set' },
  404: { error: 'notFound', message: 'payment 7d9f2c1e-4b8a-4c3d-9e6f-1a2b3c4d5e6f not found' },
  409: { error: 'alreadyExist', message: 'a request with this Idempotency-Key is still being processed; send it again after Retry-After' },
  413: { error: 'invalidParam', message: 'request body exceeds the limit of 1048576 bytes' },
  410: { error: 'invalidParam', message: 'cursor: the events feed keeps the events of the last WEBHOOK_DELIVERY_RETENTION_DAYS (30); this cursor is older: read again without one' },
  415: { error: 'invalidParam', message: 'request body encoding is not supported; send UTF-8 JSON' },
  422: { error: 'failedPrecondition', message: 'payment 7d9f2c1e-4b8a-4c3d-9e6f-1a2b3c4d5e6f is CREATED; it must be SETTLED to be refunded' },
  429: { error: 'tooManyRequests', message: 'rate limit exceeded; retry after 1 s' },
  500: { error: 'serverError', message: 'the service failed to handle the request; it has been logged' },
  503: { error: 'serviceUnavailable', message: 'the service cannot reach its database right now; retry after a moment' },
};

/** The example error payload of a status (its category, a message of that kind). */
export function errorExample(status: number): { statusCode: number; error: string; message: string } {
  const known = ERROR_EXAMPLES[status];
  if (!known) throw new Error(`no example error for status ${status}: add one to ERROR_EXAMPLES`);
  return { statusCode: status, ...known };
}

const errorContent = (status: number) => ({ 'application/json': { schema: errorRef, example: errorExample(status) } });
const errorResponse = (status: number, description: string) => ({ description, content: errorContent(status) });

/**
 * The error answers many operations share, written once under `components/responses` and referred to (an
 * operation's own answer for a status, with its own description, replaces the shared one).
 */
const SHARED_ERRORS = {
  BadRequest: errorResponse(400, 'invalid or missing parameter (the message names it)'),
  Unauthorized: errorResponse(401, 'missing or invalid credentials'),
  OperatorRoutesDisabled: errorResponse(403, 'operator routes are disabled (no OPERATOR_API_KEY)'),
  PayloadTooLarge: errorResponse(413, 'request body too large'),
  Conflict: errorResponse(409, 'conflict, a request with the same Idempotency-Key is in flight, or too many concurrent ' +
    'changes to the same object (then with Retry-After: nothing was applied, send it again)'),
  ConcurrentChange: errorResponse(409, 'too many concurrent changes to the same object; nothing was applied, send it again after Retry-After'),
  Unprocessable: errorResponse(422, 'the request cannot be applied in the current state, or an Idempotency-Key was reused with another body'),
  TooManyRequests: errorResponse(429, 'rate limit exceeded (per client, or per address after failed authentication); see Retry-After'),
  TooManyRequestsPerAddress: errorResponse(429, 'rate limit per address exceeded; see Retry-After'),
  ServerError: errorResponse(500, 'unexpected failure (never with internals)'),
  ServiceUnavailable: errorResponse(503, 'the database or the event store cannot be reached now; see Retry-After'),
  ServiceUnavailableForWrite: errorResponse(503, 'the database or the event store cannot be reached now; see Retry-After. Nothing ' +
    'was applied, or it was and the same request with the same Idempotency-Key answers what was'),
} as const;
const shared = (name: keyof typeof SHARED_ERRORS) => ({ $ref: `#/components/responses/${name}` });

/** Request headers many operations take, under `components/parameters`. */
const SHARED_PARAMETERS = {
  'User-Agent': {
    name: 'User-Agent', in: 'header', required: true, schema: { type: 'string' },
    description: 'identifies the calling application', example: 'my-shop/1.0',
  },
  'Idempotency-Key': {
    name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
    description: 'repeat a POST safely: the same key and body within 24 h replay the first answer ' +
      '(header Idempotent-Replayed: true) without fields shown only once (secrets, tokens); another body is ' +
      'a 422; while the first runs, a 409. Keys are per caller (client, operator, provider) and are claimed only ' +
      'by requests that passed authentication and validation.',
    example: 'order-1042-attempt-1',
  },
} as const;
const sharedParameter = (name: keyof typeof SHARED_PARAMETERS) => ({ $ref: `#/components/parameters/${name}` });

/**
 * An example value for a request schema, shown by the API reference: openapi-sampler's, which takes a
 * schema's own `examples` first (the schemas carry hand-written ones where a sample made up from the type
 * alone would be refused, e.g. amounts and dates under a pattern). A body shows its required fields only,
 * unless it has none. Tests check that every example passes the request validation.
 */
function exampleOf(schema: unknown, requiredOnly = false): unknown {
  const draw = (skipNonRequired: boolean) => sample(schema as object, { skipReadOnly: true, skipNonRequired, quiet: true });
  const drawn = draw(requiredOnly);
  const empty = typeof drawn === 'object' && drawn !== null && !Array.isArray(drawn) && Object.keys(drawn).length === 0;
  return requiredOnly && empty ? draw(false) : drawn;
}

function parametersOf(route: AnyRoute): Json[] {
  const parameters: Json[] = [];
  const add = (where: 'path' | 'query', schema: unknown) => {
    const s = schema as { properties?: Record<string, Json>; required?: readonly string[] } | undefined;
    for (const [name, property] of Object.entries(s?.properties ?? {})) {
      const { description, ...rest } = property as Json & { description?: string };
      parameters.push({
        name, in: where, required: where === 'path' || (s?.required ?? []).includes(name), schema: rest,
        ...(description ? { description } : {}), example: exampleOf(rest),
      });
    }
  };
  add('path', route.schemas.params);
  add('query', route.schemas.query);
  if (route.access === 'client') parameters.push(sharedParameter('User-Agent'));
  if (route.method === 'post') parameters.push(sharedParameter('Idempotency-Key'));
  for (const header of route.headers ?? []) {
    parameters.push({ name: header.name, in: 'header', required: header.required ?? false, schema: header.schema,
      description: header.description, example: exampleOf(header.schema) });
  }
  return parameters;
}

/** On the successful answers of every write (the router sets it; see README, HTTP conventions); under `components/headers`. */
const READ_MODELS_HEADER_SPEC = {
  description: '`stale` when the read models had not caught up with this write within READ_YOUR_WRITES_TIMEOUT_MS (at once ' +
    'when no process runs the version of a read model that readers see, say while a new one is built): ' +
    'the write is recorded, but this answer and reads made now may not show it yet. Absent when they had.',
  schema: { type: 'string', enum: ['stale'] },
};
const readModelsHeader = { [READ_MODELS_HEADER]: { $ref: `#/components/headers/${READ_MODELS_HEADER}` } };

function responsesOf(route: AnyRoute): Json {
  const responses: Json = {};
  const writes = route.method !== 'get' && !route.raw;
  for (const [status, response] of Object.entries(route.responses)) {
    const isError = (response.schema as { $ref?: string } | undefined)?.$ref === ERROR_REF;
    responses[status] = {
      description: response.description,
      ...(writes && Number(status) < 300 ? { headers: readModelsHeader } : {}),
      ...(response.schema === undefined
        ? {}
        : isError
          ? { content: errorContent(Number(status)) }
          : { content: { [response.contentType ?? 'application/json']: { schema: response.schema } } }),
    };
  }
  const hasInput = route.schemas.body || route.schemas.query || route.schemas.params || route.access === 'client';
  if (hasInput) responses['400'] ??= shared('BadRequest');
  if (route.access !== 'public') responses['401'] ??= shared('Unauthorized');
  if (route.access === 'operator') responses['403'] ??= shared('OperatorRoutesDisabled');
  if (route.schemas.body) responses['413'] ??= shared('PayloadTooLarge');
  if (route.method === 'post') {
    responses['409'] ??= shared('Conflict');
    responses['422'] ??= shared('Unprocessable');
  } else if (route.method !== 'get') {
    responses['409'] ??= shared('ConcurrentChange');
  }
  responses['429'] ??= shared(route.access === 'client' || route.access === 'operator' ? 'TooManyRequests' : 'TooManyRequestsPerAddress');
  responses['500'] ??= shared('ServerError');
  responses['503'] ??= shared(route.method === 'post' ? 'ServiceUnavailableForWrite' : 'ServiceUnavailable');
  return responses;
}

const securityOf: Record<AnyRoute['access'], Json[]> = {
  client: [{ apiKey: [], bearerToken: [] }],
  apiKey: [{ apiKey: [] }],
  operator: [{ operatorKey: [] }],
  // The provider's signature travels in the body (see the route).
  provider: [],
  public: [],
};

const DELIVERY_HEADERS: Array<[string, string]> = [
  ['X-Webhook-Signature', 'hex HMAC-SHA256 of the raw body under the endpoint’s secretKey'],
  ['X-Webhook-Timestamp', 'Unix time (seconds) of this attempt'],
  ['X-Webhook-Signature-Timestamped', 'hex HMAC-SHA256 of `<X-Webhook-Timestamp>.<raw body>` (replay protection)'],
  ['X-Webhook-Id', 'the delivery: the same on every attempt'],
  ['X-Webhook-Event-Id', 'the event, as `id` in GET /events'],
  ['X-Webhook-Event-Type', 'the payload’s eventType'],
  ['X-Webhook-Sequence', 'grows with every event of one payment or customer'],
  ['webhook-id', 'Standard Webhooks: the delivery, as X-Webhook-Id'],
  ['webhook-timestamp', 'Standard Webhooks: Unix time (seconds) of this attempt, as X-Webhook-Timestamp'],
  ['webhook-signature', 'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` under the ' +
    'endpoint’s Standard Webhooks key: the bytes a `whsec_<base64>` secretKey encodes (generated ones have that form), or the ' +
    'secretKey’s own bytes for any other (standardwebhooks: `new Webhook(secretKey)`, or `new Webhook(secretKey, { format: "raw" })`)'],
];

/**
 * What the service POSTs to registered endpoints (OpenAPI 3.1 `webhooks`), one entry per payload shape. Made anew for
 * each document, which names its schemas in place.
 */
const webhookDeliveries = () => Object.fromEntries(([
  ['transactionEvent', 'A payment event (transaction.status_changed, payment.*; refunds and purchases as they are emitted)', transactionEventPayloadSchema],
  ['customerEvent', 'customer.levelChanged', customerEventPayloadSchema],
  ['testClockEvent', 'test_clock.ready: a test clock’s advance is complete', testClockEventPayloadSchema],
  ['testEvent', 'The ping of POST /webhooks/{id}/test', testEventPayloadSchema],
] as const).map(([name, summary, schema]) => [name, { post: {
  summary,
  description: 'Sent to every registered endpoint of the client that subscribes to its type. A 2xx answer within 10 s ' +
    'delivers it; otherwise it is retried 30 s later, doubling up to 1 h, for 24 h after the first attempt.',
  parameters: DELIVERY_HEADERS.map(([name, description]) => ({ name, in: 'header', required: name !== 'X-Webhook-Sequence', description, schema: { type: 'string' } })),
  requestBody: { required: true, content: { 'application/json': { schema } } },
  responses: { '2XX': { description: 'delivered' } },
} }]));

/** Keywords of JSON Schema 2020-12 whose value is one subschema, an array of them, or a map of them. */
const ONE_SUBSCHEMA = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames',
  'unevaluatedItems', 'unevaluatedProperties'] as const;
const SUBSCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'] as const;

/**
 * Gives every titled schema one entry under `components/schemas`, named after its title, and a `$ref` to it
 * wherever it appears. The route schemas embed their parts (a payment embeds its nodes, a session its
 * payments), so inline the document repeats them: 3.1 MB, most of it the payment's node schema written out
 * dozens of times. Named once, the document is a tenth of that, and the reference and generated clients see the
 * shared types by name.
 *
 * A schema that differs from the named one only in its description (a property that says what it is for)
 * becomes a `$ref` with that description beside it; two different schemas under one title get `Title`, `Title2`.
 * Schemas are copied, never changed: the routes validate with the originals.
 */
export function withNamedSchemas(document: Json): Json {
  const components = document.components as { schemas: Record<string, Json> };
  const named = new Map<string, string>(Object.entries(components.schemas).map(([name, schema]) => [identity(schema), name]));
  const taken = new Set(named.values());

  function identity(schema: Json): string {
    const { description: _description, ...rest } = schema;
    return JSON.stringify(rest);
  }

  function named$(schema: Json): Json {
    if (typeof schema.title !== 'string') return schema;
    const key = identity(schema);
    let name = named.get(key);
    if (name === undefined) {
      name = schema.title.replace(/[^A-Za-z0-9._-]/g, '_');
      for (let n = 2; taken.has(name); n++) name = `${schema.title}${n}`;
      taken.add(name);
      named.set(key, name);
      components.schemas[name] = schema;
    }
    const ref: Json = { $ref: `#/components/schemas/${name}` };
    const local = schema.description;
    if (local !== undefined && local !== components.schemas[name]!.description) ref.description = local;
    return ref;
  }

  // The route schemas share their parts (one object for the payment's nodes, used everywhere): each is named once.
  const done = new WeakMap<object, unknown>();

  /** The schema with its subschemas named (depth first, so a named schema refers to its named parts). */
  function walk(schema: unknown): unknown {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
    if (done.has(schema)) return done.get(schema);
    const result = named$(withNamedParts(schema as Json));
    done.set(schema, result);
    return result;
  }

  function withNamedParts(schema: Json): Json {
    const copy: Json = { ...schema };
    for (const keyword of ONE_SUBSCHEMA) if (keyword in copy) copy[keyword] = walk(copy[keyword]);
    for (const keyword of SUBSCHEMA_ARRAYS) {
      if (Array.isArray(copy[keyword])) copy[keyword] = (copy[keyword] as unknown[]).map(walk);
    }
    for (const keyword of SUBSCHEMA_MAPS) {
      const map = copy[keyword];
      if (typeof map === 'object' && map !== null) {
        copy[keyword] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, walk(sub)]));
      }
    }
    return copy;
  }

  // Only the objects this document made for its operations are changed; a `$ref` to a shared part has no schema.
  const inPlace = (holder: Json) => {
    if (holder.schema !== undefined) holder.schema = walk(holder.schema);
  };
  const inMedia = (content: unknown) => Object.values((content ?? {}) as Record<string, Json>).forEach(inPlace);
  const inOperation = (operation: Json) => {
    ((operation.parameters ?? []) as Json[]).forEach(inPlace);
    inMedia((operation.requestBody as Json | undefined)?.content);
    for (const response of Object.values((operation.responses ?? {}) as Record<string, Json>)) {
      inMedia(response.content);
      Object.values((response.headers ?? {}) as Record<string, Json>).forEach(inPlace);
    }
  };
  for (const group of [document.paths, document.webhooks] as Array<Record<string, Record<string, Json>>>) {
    for (const operations of Object.values(group)) for (const operation of Object.values(operations)) inOperation(operation);
  }
  components.schemas = Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b)));
  return document;
}

export function buildOpenApiDocument(routes: readonly AnyRoute[]): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: securityOf[route.access],
      parameters: parametersOf(route),
      ...(route.schemas.body
        ? { requestBody: { required: true, content: { 'application/json': {
          schema: route.schemas.body, example: exampleOf(route.schemas.body, true) } } } }
        : {}),
      responses: responsesOf(route),
    };
  }
  return withNamedSchemas({
    openapi: '3.1.0',
    info: {
      title: 'payments-ledger',
      version: API_VERSION,
      description: 'Event-sourced payments and checkout service with a double-entry ledger. Amounts are decimal ' +
        'strings; timestamps ISO 8601 UTC. Every error answers {statusCode, error, message}. Bodies are UTF-8 JSON ' +
        `nested at most ${MAX_BODY_DEPTH} levels, each object naming a key once; a query parameter is sent once; no string (value or key, in a body, query or path) may hold a NUL ` +
        'or an unpaired surrogate; a date-time must be a real instant (no leap second); free-form objects state their ' +
        'bounds in `x-bounds` (maxDepth, maxKeys). Each of these is a 400 naming the field.',
    },
    tags: [...new Set(routes.flatMap((r) => r.tags))].sort().map((name) => ({ name })),
    paths,
    webhooks: webhookDeliveries(),
    components: {
      schemas: { Error: errorSchema },
      responses: SHARED_ERRORS,
      parameters: SHARED_PARAMETERS,
      headers: { [READ_MODELS_HEADER]: READ_MODELS_HEADER_SPEC },
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'the client’s API key' },
        bearerToken: { type: 'http', scheme: 'bearer', description: 'a token from POST /auth' },
        operatorKey: { type: 'apiKey', in: 'header', name: 'x-operator-key', description: 'OPERATOR_API_KEY' },
      },
    },
  });
}
