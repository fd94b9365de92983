/**
 * Shared contracts. Every schema is a `const` JSON Schema: ajv validates with it, `FromSchema` derives the
 * TypeScript type from it, and the OpenAPI document embeds it. One source, no hand-kept duplicates.
 */
import type { FromSchema } from 'json-schema-to-ts';

export const errorCategories = [
  'invalidParam', 'missingParam', 'unauthorized', 'forbiddenOperation', 'notFound', 'alreadyExist',
  'failedPrecondition', 'tooManyRequests', 'serverError', 'serviceUnavailable',
] as const;

export const errorSchema = {
  title: 'Error',
  type: 'object',
  additionalProperties: false,
  required: ['statusCode', 'error', 'message'],
  properties: {
    statusCode: { type: 'integer', minimum: 400, maximum: 599, description: 'the HTTP status' },
    error: { type: 'string', enum: errorCategories, description: 'the category of the error' },
    message: { type: 'string', description: 'what went wrong, naming the field or resource' },
  },
} as const;
export type ErrorPayload = FromSchema<typeof errorSchema>;

export const paginationSchema = {
  title: 'Pagination',
  type: 'object',
  additionalProperties: false,
  required: ['count', 'next', 'previous', 'total'],
  properties: {
    count: { type: 'integer', minimum: 0, description: 'items in this page' },
    next: { type: 'integer', minimum: 0, description: 'offset of the next page (equals total when none)' },
    previous: { type: 'integer', minimum: 0, description: 'offset of the previous page (0 when none)' },
    total: { type: 'integer', minimum: 0, description: 'items matching the filters' },
  },
} as const;
export type Pagination = FromSchema<typeof paginationSchema>;

/** Query parameters every list accepts. `cursor` is an opaque offset, accepted where the interface names one. */
export const pageQueryProperties = {
  limit: { type: 'integer', minimum: 1, maximum: 500, default: 50, description: 'page size (at most 500)' },
  offset: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 0, description: 'items skipped' },
  cursor: { type: 'string', pattern: '^\\d{1,8}$', examples: ['50'], description: 'the `next` value of a previous page' },
} as const;

export function pageOf<const Item extends object>(item: Item) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['pagination', 'results'],
    properties: { pagination: paginationSchema, results: { type: 'array', items: item } },
  } as const;
}

export const idParamSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' } },
} as const;

export const emptyObjectSchema = { type: 'object', additionalProperties: false, properties: {} } as const;

export const amountPattern = '^\\d{1,18}(\\.\\d{1,18})?$';

/** Nesting levels of a free-form object, the object itself being level 1 (arrays count as levels). */
export const MAX_FREE_FORM_DEPTH = 8;
/** Keys of a free-form object, counted at every level. */
export const MAX_FREE_FORM_KEYS = 500;

/**
 * Bounds a free-form object (one whose content the schema does not describe): the keyword `x-bounds`, which
 * src/http/validation.ts enforces. Every free-form object of a request schema carries it (test/http.edge.test.ts
 * walks the routes to check).
 */
export function freeFormBounds(maxDepth = MAX_FREE_FORM_DEPTH, maxKeys = MAX_FREE_FORM_KEYS) {
  return { 'x-bounds': { maxDepth, maxKeys } } as const;
}
