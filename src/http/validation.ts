/**
 * Request validation with ajv, from the route's JSON Schemas. Bodies are taken as sent (no coercion, unknown
 * fields refused by the schemas); query strings and path parameters are strings on the wire, so they are
 * coerced to the schema's types and get its defaults. Every message names the field.
 *
 * Beyond the schemas, the same path refuses what the store cannot keep or the service cannot walk safely:
 * - strings (values and object keys) with a NUL character or an unpaired surrogate, in bodies, query strings
 *   and path parameters: Postgres text and jsonb cannot hold NUL, and a lone surrogate is not UTF-8;
 * - `date-time` values that are no instant (`Date.parse` fails, e.g. a leap second, 23:59:60);
 * - free-form objects (schema keyword `x-bounds`) nested deeper or holding more keys than their bounds;
 * - a query parameter sent more than once.
 * The whole body's nesting is bounded, and its objects' keys checked for repeats, before it is parsed (see
 * jsonBody.ts).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { HttpError, invalidParam } from './errors.ts';

// ajv-formats is CommonJS with a default export; under ESM interop it may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as
  (ajv: Ajv) => Ajv;

declare global {
  interface String {
    /** ES2024 (Node 20 has it): false when the string holds an unpaired surrogate. */
    isWellFormed(): boolean;
  }
}

export type RequestPart = 'body' | 'query' | 'path';

interface Bounds {
  maxDepth: number;
  maxKeys: number;
}

/** The first bound `value` breaks, or null. Recursion stops past `maxDepth`, so it is bounded too. */
function breaksBounds(value: unknown, bounds: Bounds): string | null {
  let keys = 0;
  const walk = (node: unknown, level: number): string | null => {
    if (typeof node !== 'object' || node === null) return null;
    if (level > bounds.maxDepth) return `nests deeper than ${bounds.maxDepth} levels`;
    if (Array.isArray(node)) {
      for (const item of node) {
        const broken = walk(item, level + 1);
        if (broken) return broken;
      }
      return null;
    }
    for (const key in node) {
      if (++keys > bounds.maxKeys) return `has more than ${bounds.maxKeys} keys in all`;
      const broken = walk((node as Record<string, unknown>)[key], level + 1);
      if (broken) return broken;
    }
    return null;
  };
  return walk(value, 1);
}

function configured(ajv: Ajv): Ajv {
  addFormats(ajv);
  // ajv-formats accepts any well-formed date-time, including a leap second that Date.parse (and so every
  // later use of the value) cannot represent: a date-time must also be an instant.
  const wellFormed = ajv.formats['date-time'] as { validate: (value: string) => boolean };
  ajv.addFormat('date-time', { type: 'string', validate: (value: string) => wellFormed.validate(value) && !Number.isNaN(Date.parse(value)) });
  ajv.addKeyword({
    keyword: 'x-bounds',
    schemaType: 'object',
    errors: true,
    validate: function bounded(bounds: Bounds, value: unknown): boolean {
      const broken = breaksBounds(value, bounds);
      if (broken) (bounded as { errors?: Partial<ErrorObject>[] }).errors = [{ keyword: 'x-bounds', message: broken, params: bounds }];
      return broken === null;
    },
  });
  return ajv;
}

/**
 * Every route's validators are compiled when the app is assembled: about 400 ms of CPU at each start, of
 * which two options save more than half. The schemas are this service's own, so a test checks them against
 * the JSON Schema meta-schema (test/http.platform.test.ts) instead of every start (`validateSchema`); and
 * ajv's pass that tidies the generated code (`code.optimize`) makes no measurable difference to the time a
 * request's validation takes.
 */
const compileOptions = { validateSchema: false, code: { optimize: false } } as const;
const bodyAjv = configured(new Ajv({ ...compileOptions, allErrors: false, strict: false }));
const stringAjv = configured(new Ajv({ ...compileOptions, allErrors: false, strict: false, coerceTypes: true, useDefaults: true }));


export type Validator = (value: unknown) => unknown;

const WHERE: Record<RequestPart, string> = { body: 'body field', query: 'query parameter', path: 'path parameter' };

/** `a.b[2].c` from ajv's `/a/b/2/c`; `[1]` from `/1` (an item of a bare array body). */
function dottedPath(pointer: string): string {
  return pointer.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/^\//, '').replace(/\//g, '.').replace(/~1/g, '/').replace(/~0/g, '~');
}

function fieldName(part: RequestPart, error: ErrorObject): string {
  const path = dottedPath(error.instancePath);
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

/**
 * The error to answer with: the first, except that a `oneOf` branch refused only for its type (the body is an
 * object where the branch wants an array) says less than a branch of the right type refused for a field.
 */
function mostSpecific(errors: readonly ErrorObject[]): ErrorObject {
  const oneOf = errors.find((error) => error.keyword === 'oneOf');
  if (!oneOf) return errors[0]!;
  const branches = `${oneOf.schemaPath}/`;
  const typeOnly = (error: ErrorObject) =>
    error.keyword === 'type' && error.instancePath === oneOf.instancePath && error.schemaPath.startsWith(branches);
  return errors.find((error) => error !== oneOf && !typeOnly(error)) ?? errors[0]!;
}

function describe(part: RequestPart, error: ErrorObject): HttpError {
  const where = WHERE[part];
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

/** Whether Postgres can store the string: no NUL, no unpaired surrogate. Linear, allocates nothing. */
export function storable(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}

/**
 * Where in `value` the first unstorable string is: the path to it (a value), or to the object holding it
 * (a key). Null when there is none; a path is built only on the way back from a find. Recursion follows the
 * value's nesting, which the body parser bounded (jsonBody.ts); query strings and path parameters are flat.
 */
function unstorable(value: unknown): { path: Array<string | number>; key: boolean } | null {
  if (typeof value === 'string') return storable(value) ? null : { path: [], key: false };
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorable(value[i]);
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return null;
  }
  for (const key in value) {
    if (!storable(key)) return { path: [], key: true };
    const found = unstorable((value as Record<string, unknown>)[key]);
    if (found) {
      found.path.unshift(key);
      return found;
    }
  }
  return null;
}

function unstorableError(part: RequestPart, found: { path: Array<string | number>; key: boolean }): HttpError {
  const field = found.path.map((segment, i) => (typeof segment === 'number' ? `[${segment}]` : i === 0 ? segment : `.${segment}`)).join('');
  const what = 'a NUL character or an unpaired surrogate, which cannot be stored';
  if (found.key) {
    return invalidParam(field ? `${WHERE[part]} ${field} has a key with ${what}` : `a ${WHERE[part]} name contains ${what}`);
  }
  return invalidParam(field ? `${WHERE[part]} ${field} contains ${what}` : `request ${part} contains ${what}`);
}

/**
 * A query parameter sent twice (`?limit=1&limit=2`) is refused, whatever the values: which one counts would
 * depend on the reader (the first, the last, both), and no parameter of this API takes several values that way
 * (a list is one comma-separated value). The query parser gives a repeated name an array.
 */
function refuseRepeatedParameters(query: Record<string, unknown>): void {
  for (const name in query) {
    if (Array.isArray(query[name])) {
      throw invalidParam(storable(name) ? `query parameter ${name} repeats: send it once` : 'a query parameter repeats: send it once');
    }
  }
}

/**
 * Returns a function that validates (and, for strings, coerces a copy of) a value, or throws a 400. Strings
 * are checked first, so that no schema keyword ever sees one the store would refuse.
 */
export function compileValidator(part: RequestPart, schema: object | boolean): Validator {
  const validate: ValidateFunction = (part === 'body' ? bodyAjv : stringAjv).compile(schema as object);
  return (value) => {
    if (part === 'query') refuseRepeatedParameters(value as Record<string, unknown>);
    const found = unstorable(value);
    if (found) throw unstorableError(part, found);
    const copy = part === 'body' ? value : { ...(value as object) };
    if (!validate(copy)) throw describe(part, mostSpecific(validate.errors!));
    return copy;
  };
}
