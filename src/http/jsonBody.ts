/**
 * JSON request bodies: bounded in bytes (BODY_LIMIT_BYTES) and in nesting, each object's keys named once. The
 * nesting and the keys are checked on the raw bytes before JSON.parse runs, so no recursive step (parsing,
 * validation, storing the event) ever meets a value deeper than MAX_BODY_DEPTH. Bodies are UTF-8, as JSON between systems must be (RFC 8259 section 8.1):
 * the check reads bytes, and every byte it looks for is ASCII, which UTF-8 never uses inside a multi-byte
 * character.
 */
import express, { type RequestHandler } from 'express';
import { HttpError, invalidParam } from './errors.ts';

/** Nesting levels of a whole body (objects and arrays); free-form fields have tighter bounds (validation.ts). */
export const MAX_BODY_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/** What the scan found wrong with a body: nesting past the bound, under a top-level `field` ('' for none), or a key repeated in one object. */
export type BodyShapeProblem = { tooDeep: string } | { repeatedKey: string };

const COMMA = 0x2c;

/** FNV-1a, 32 bits: the hash of a key's bytes, so that comparing keys needs no string until two hashes meet. */
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const SMALL_INTEGER_MASK = 0x3fffffff;

function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, FNV_PRIME);
  return hash;
}

/** The keys one object has named so far: their hashes, where the first key of each hash starts, and (rarely) keys whose hash another key had. */
interface ObjectKeys {
  firstAt: Map<number, number>;
  collided: Set<string> | null;
}

/**
 * Null, or the first problem of `json` found in one pass over its bytes, before it is parsed: it nests deeper
 * than `maxDepth` (objects and arrays), or an object names a key twice (at any depth). JSON.parse would keep the
 * last of two values silently, where another reader (a proxy, a WAF, a log pipeline) may keep the first: the
 * same body would mean two things. Keys are compared as the parser reads them (escapes decoded, `"\u0075rl"`
 * is `"url"`): by a hash of their bytes, and as strings only when two hashes meet (the same key, or a
 * collision), so a body whose keys all differ costs no string at all. One Map per nesting level, reused.
 * Malformed JSON is left to the parser.
 */
export function bodyShapeProblem(json: Uint8Array, maxDepth: number): BodyShapeProblem | null {
  // Per level (1 = the body itself): the keys an object has named (null for an array), and where the scan is
  // in it (the object's current key's start, the array's index) for naming a path.
  const keys: Array<ObjectKeys | null> = [];
  const at: number[] = [];
  let depth = 0;
  // Inside an object, after `{` or `,`: the next string is a key.
  let expectKey = false;
  const length = json.length;
  for (let i = 0; i < length; i++) {
    const byte = json[i]!;
    if (byte === QUOTE) {
      // A string, read to its closing quote in a loop of its own; a key's bytes are hashed on the way.
      const start = i;
      if (!expectKey) {
        for (i++; i < length; i++) {
          const inner = json[i]!;
          if (inner === QUOTE) break;
          if (inner === BACKSLASH) i++;
        }
        continue;
      }
      expectKey = false;
      let hash = FNV_OFFSET;
      let escaped = false;
      for (i++; i < length; i++) {
        const inner = json[i]!;
        if (inner === QUOTE) break;
        if (inner === BACKSLASH) {
          escaped = true;
          i++;
        } else {
          hash = Math.imul(hash ^ inner, FNV_PRIME);
        }
      }
      if (escaped) {
        // Hashed as the bytes it stands for, as the same key written without escapes is.
        const decoded = Buffer.from(keyText(json, start));
        hash = fnv1a(decoded, 0, decoded.length);
      }
      // Kept to 30 bits: a small integer to V8, which a Map keys without allocating.
      if (repeats(json, keys[depth]!, hash & SMALL_INTEGER_MASK, start)) return { repeatedKey: pathOf(json, keys, at, depth, start) };
      at[depth] = start;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > maxDepth) return { tooDeep: keys[1] && at[1]! >= 0 ? keyText(json, at[1]!) : '' };
      if (byte === OPEN_OBJECT) {
        const reused = keys[depth];
        if (reused) {
          reused.firstAt.clear();
          reused.collided = null;
        } else {
          keys[depth] = { firstAt: new Map(), collided: null };
        }
        at[depth] = -1;
        expectKey = true;
      } else {
        // An array's level holds no keys; an object later at this level makes its own again.
        keys[depth] = null;
        at[depth] = 0;
        expectKey = false;
      }
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
      expectKey = false;
    } else if (byte === COMMA && depth > 0) {
      if (keys[depth]) expectKey = true;
      else at[depth]! += 1;
    }
  }
  return null;
}

/** Records the key starting at `start` in `named`; true when the object already has it. */
function repeats(json: Uint8Array, named: ObjectKeys, hash: number, start: number): boolean {
  const first = named.firstAt.get(hash);
  if (first === undefined) {
    named.firstAt.set(hash, start);
    return false;
  }
  const key = keyText(json, start);
  if (key === keyText(json, first)) return true;
  named.collided ??= new Set();
  if (named.collided.has(key)) return true;
  named.collided.add(key);
  return false;
}

/** The key whose opening quote is at `start`, as the parser reads it; JSON.parse only for one with an escape. */
function keyText(json: Uint8Array, start: number): string {
  let end = start + 1;
  let escaped = false;
  while (end < json.length && json[end] !== QUOTE) {
    if (json[end] === BACKSLASH) {
      escaped = true;
      end++;
    }
    end++;
  }
  const bytes = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  if (!escaped) return bytes.toString('utf8', start + 1, end);
  try {
    const text: unknown = JSON.parse(bytes.toString('utf8', start, end + 1));
    return typeof text === 'string' ? text : '';
  } catch {
    return bytes.toString('utf8', start + 1, end); // a malformed key: the parser refuses the body anyway
  }
}

/** `a.b[2].c`: the keys and indexes from the body down to the key at `keyStart`, in the object at level `depth`. */
function pathOf(json: Uint8Array, keys: ReadonlyArray<ObjectKeys | null>, at: readonly number[], depth: number, keyStart: number): string {
  let path = '';
  for (let level = 1; level < depth; level++) {
    if (keys[level]) {
      const key = keyText(json, at[level]!);
      path += path === '' ? key : `.${key}`;
    } else {
      path += `[${at[level]}]`;
    }
  }
  const key = keyText(json, keyStart);
  return path === '' ? key : `${path}.${key}`;
}

function checkShape(buffer: Buffer, encoding: string): void {
  if (encoding !== 'utf-8' && encoding !== 'utf8') {
    throw new HttpError(415, 'invalidParam', 'request body encoding is not supported; send UTF-8 JSON');
  }
  const problem = bodyShapeProblem(buffer, MAX_BODY_DEPTH);
  if (problem === null) return;
  if ('repeatedKey' in problem) {
    throw invalidParam(`body field ${problem.repeatedKey} appears more than once in its object; send each key once`);
  }
  throw invalidParam(problem.tooDeep
    ? `body field ${problem.tooDeep} nests deeper than the request body's bound of ${MAX_BODY_DEPTH} levels`
    : `request body nests deeper than ${MAX_BODY_DEPTH} levels`);
}

/**
 * Bodies are JSON. A body sent with another declared type would otherwise reach the routes as no body at all,
 * and be refused for a missing field: say what is wrong instead. (A body without a Content-Type is read as JSON.)
 */
export function jsonBody(bodyLimitBytes: number): RequestHandler {
  const parse = express.json({ limit: bodyLimitBytes, strict: false, verify: (_req, _res, buffer, encoding) => checkShape(buffer, encoding) });
  return (req, res, next) => {
    const declared = req.headers['content-type'];
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    const type = declared?.split(';')[0]!.trim().toLowerCase();
    if (type !== undefined && hasBody && type !== 'application/json') {
      next(new HttpError(415, 'invalidParam', `request body must be JSON, sent with Content-Type: application/json (it came as ${type || 'an empty type'})`));
      return;
    }
    parse(req, res, next);
  };
}
