/**
 * Request validation with ajv, from the route's JSON Schemas. Bodies are taken as sent (no coercion, unknown
 * fields refused by the schemas); query strings and path parameters are strings on the wire, so they are
 * coerced to the schema's types and get its defaults. Every message names the field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { HttpError } from './errors.ts';

// ajv-formats is CommonJS with a default export; under ESM interop it may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as
  (ajv: Ajv) => Ajv;

export type RequestPart = 'body' | 'query' | 'path';

/**
 * Every route's validators are compiled when the app is assembled: about 400 ms of CPU at each start, of
 * which two options save more than half. The schemas are this service's own, so a test checks them against
 * the JSON Schema meta-schema (test/http.platform.test.ts) instead of every start (`validateSchema`); and
 * ajv's pass that tidies the generated code (`code.optimize`) makes no measurable difference to the time a
 * request's validation takes.
 */
const compileOptions = { validateSchema: false, code: { optimize: false } } as const;
const bodyAjv = addFormats(new Ajv({ ...compileOptions, allErrors: false, strict: false }));
const stringAjv = addFormats(new Ajv({ ...compileOptions, allErrors: false, strict: false, coerceTypes: true, useDefaults: true }));
export const responseAjv = addFormats(new Ajv({ allErrors: true, strict: false }));

export type Validator = (value: unknown) => unknown;

function fieldName(part: RequestPart, error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return path ? `${path}.${missing}` : missing;
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return path ? `${path}.${extra}` : extra;
  }
  return path || (part === 'body' ? 'body' : part);
}

function describe(part: RequestPart, error: ErrorObject): HttpError {
  const where = part === 'body' ? 'body field' : part === 'query' ? 'query parameter' : 'path parameter';
  const field = fieldName(part, error);
  switch (error.keyword) {
    case 'required':
      return new HttpError(400, 'missingParam', `${where} ${field} is required`);
    case 'additionalProperties':
      return new HttpError(400, 'invalidParam', `${where} ${field} is not allowed`);
    case 'enum':
      return new HttpError(400, 'invalidParam',
        `${where} ${field} must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`);
    case 'type':
      return new HttpError(400, 'invalidParam', field === 'body' && part === 'body'
        ? `request body must be a JSON ${(error.params as { type: string }).type}`
        : `${where} ${field} must be ${(error.params as { type: string }).type}`);
    default:
      return new HttpError(400, 'invalidParam', `${where} ${field} ${error.message ?? 'is invalid'}`);
  }
}

/** Returns a function that validates (and, for strings, coerces a copy of) a value, or throws a 400. */
export function compileValidator(part: RequestPart, schema: object | boolean): Validator {
  const validate: ValidateFunction = (part === 'body' ? bodyAjv : stringAjv).compile(schema as object);
  return (value) => {
    const copy = part === 'body' ? value : { ...(value as object) };
    if (!validate(copy)) throw describe(part, validate.errors![0]!);
    return copy;
  };
}
