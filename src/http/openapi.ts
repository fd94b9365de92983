/**
 * The OpenAPI 3.1 document, built from the route declarations and their JSON Schemas: what is validated is
 * what is documented.
 */
import { sample } from 'openapi-sampler';
import { errorSchema } from '../../schemas/common.ts';
import { customerEventPayloadSchema, testEventPayloadSchema, transactionEventPayloadSchema } from '../../schemas/webhooks.ts';
import { MAX_BODY_DEPTH } from './jsonBody.ts';
import { READ_MODELS_HEADER } from './readModelFreshness.ts';
import type { AnyRoute } from './route.ts';

export const API_VERSION = '1.0.0';

type Json = Record<string, unknown>;

export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const errorRef = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: errorRef } } });

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
  if (route.access === 'client') {
    parameters.push({ name: 'User-Agent', in: 'header', required: true, schema: { type: 'string' },
      description: 'identifies the calling application', example: 'my-shop/1.0' });
  }
  if (route.method === 'post') {
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: false,
      schema: { type: 'string', minLength: 1, maxLength: 255 },
      description: 'repeat a POST safely: the same key and body within 24 h replay the first answer ' +
        '(header Idempotent-Replayed: true) without fields shown only once (secrets, tokens); another body is ' +
        'a 422; while the first runs, a 409. Keys are per caller (client, operator, provider) and are claimed only ' +
        'by requests that passed authentication and validation.', example: 'order-1042-attempt-1' });
  }
  for (const header of route.headers ?? []) {
    parameters.push({ name: header.name, in: 'header', required: header.required ?? false, schema: header.schema,
      description: header.description, example: exampleOf(header.schema) });
  }
  return parameters;
}

/** On the successful answers of every write (the router sets it; see README, HTTP conventions). */
const readModelsHeader = {
  [READ_MODELS_HEADER]: {
    description: '`stale` when the read models had not caught up with this write within READ_YOUR_WRITES_TIMEOUT_MS (at once ' +
      'when no process runs the version of a read model that readers see, say while a new one is built): ' +
      'the write is recorded, but this answer and reads made now may not show it yet. Absent when they had.',
    schema: { type: 'string', enum: ['stale'] },
  },
};

function responsesOf(route: AnyRoute): Json {
  const responses: Json = {};
  const writes = route.method !== 'get' && !route.raw;
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      ...(writes && Number(status) < 300 ? { headers: readModelsHeader } : {}),
      ...(response.schema === undefined
        ? {}
        : { content: { [response.contentType ?? 'application/json']: { schema: response.schema } } }),
    };
  }
  const hasInput = route.schemas.body || route.schemas.query || route.schemas.params || route.access === 'client';
  if (hasInput) responses['400'] ??= errorResponse('invalid or missing parameter (the message names it)');
  if (route.access !== 'public') responses['401'] ??= errorResponse('missing or invalid credentials');
  if (route.access === 'operator') responses['403'] ??= errorResponse('operator routes are disabled (no OPERATOR_API_KEY)');
  if (route.schemas.body) responses['413'] ??= errorResponse('request body too large');
  if (route.method === 'post') {
    responses['409'] ??= errorResponse('conflict, a request with the same Idempotency-Key is in flight, or too many concurrent ' +
      'changes to the same object (then with Retry-After: nothing was applied, send it again)');
    responses['422'] ??= errorResponse('the request cannot be applied in the current state, or an Idempotency-Key was reused with another body');
  } else if (route.method !== 'get') {
    responses['409'] ??= errorResponse('too many concurrent changes to the same object; nothing was applied, send it again after Retry-After');
  }
  responses['429'] ??= errorResponse(route.access === 'client' || route.access === 'operator'
    ? 'rate limit exceeded (per client, or per address after failed authentication); see Retry-After'
    : 'rate limit per address exceeded; see Retry-After');
  responses['500'] ??= errorResponse('unexpected failure (never with internals)');
  responses['503'] ??= errorResponse(route.method === 'post'
    ? 'the database or the event store cannot be reached now; see Retry-After. Nothing was applied, or it was and the same ' +
      'request with the same Idempotency-Key answers what was'
    : 'the database or the event store cannot be reached now; see Retry-After');
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
];

/** What the service POSTs to registered endpoints (OpenAPI 3.1 `webhooks`), one entry per payload shape. */
const webhookDeliveries = Object.fromEntries(([
  ['transactionEvent', 'A payment event (transaction.status_changed, payment.*; refunds and purchases as they are emitted)', transactionEventPayloadSchema],
  ['customerEvent', 'customer.levelChanged', customerEventPayloadSchema],
  ['testEvent', 'The ping of POST /webhooks/{id}/test', testEventPayloadSchema],
] as const).map(([name, summary, schema]) => [name, { post: {
  summary,
  description: 'Sent to every registered endpoint of the client that subscribes to its type. A 2xx answer within 10 s ' +
    'delivers it; otherwise it is retried 30 s later, doubling up to 1 h, for 24 h after the first attempt.',
  parameters: DELIVERY_HEADERS.map(([name, description]) => ({ name, in: 'header', required: name !== 'X-Webhook-Sequence', description, schema: { type: 'string' } })),
  requestBody: { required: true, content: { 'application/json': { schema } } },
  responses: { '2XX': { description: 'delivered' } },
} }]));

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
  return {
    openapi: '3.1.0',
    info: {
      title: 'payments-ledger',
      version: API_VERSION,
      description: 'Event-sourced payments and checkout service with a double-entry ledger. Amounts are decimal ' +
        'strings; timestamps ISO 8601 UTC. Every error answers {statusCode, error, message}. Bodies are UTF-8 JSON ' +
        `nested at most ${MAX_BODY_DEPTH} levels; no string (value or key, in a body, query or path) may hold a NUL ` +
        'or an unpaired surrogate; a date-time must be a real instant (no leap second); free-form objects state their ' +
        'bounds in `x-bounds` (maxDepth, maxKeys). Each of these is a 400 naming the field.',
    },
    tags: [...new Set(routes.flatMap((r) => r.tags))].sort().map((name) => ({ name })),
    paths,
    webhooks: webhookDeliveries,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'the client’s API key' },
        bearerToken: { type: 'http', scheme: 'bearer', description: 'a token from POST /auth' },
        operatorKey: { type: 'apiKey', in: 'header', name: 'x-operator-key', description: 'OPERATOR_API_KEY' },
      },
    },
  };
}
