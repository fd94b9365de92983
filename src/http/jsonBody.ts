/**
 * JSON request bodies: bounded in bytes (BODY_LIMIT_BYTES) and in nesting. The nesting is checked on the raw
 * bytes before JSON.parse runs, so no recursive step (parsing, validation, storing the event) ever meets a
 * value deeper than MAX_BODY_DEPTH. Bodies are UTF-8, as JSON between systems must be (RFC 8259 section 8.1):
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

/**
 * Null, or the top-level field under which `json` nests deeper than `maxDepth` ('' when it is not under a
 * top-level field). One pass, no allocation unless the bound is broken. Malformed JSON is left to the parser.
 */
export function fieldNestedTooDeep(json: Uint8Array, maxDepth: number): string | null {
  let depth = 0;
  let inString = false;
  // The last string closed at depth 1: when a container opens at depth 1, that string is its key.
  let keyStart = -1;
  let keyEnd = -1;
  let stringStart = -1;
  let topLevelKeyStart = -1;
  let topLevelKeyEnd = -1;
  for (let i = 0; i < json.length; i++) {
    const byte = json[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) {
        inString = false;
        if (depth === 1) {
          keyStart = stringStart;
          keyEnd = i + 1;
        }
      }
    } else if (byte === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (depth === 1) {
        topLevelKeyStart = keyStart;
        topLevelKeyEnd = keyEnd;
      }
      if (++depth > maxDepth) return topLevelKeyName(json, topLevelKeyStart, topLevelKeyEnd);
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
    }
  }
  return null;
}

function topLevelKeyName(json: Uint8Array, start: number, end: number): string {
  if (start < 0) return '';
  try {
    const name: unknown = JSON.parse(Buffer.from(json.buffer, json.byteOffset + start, end - start).toString('utf8'));
    return typeof name === 'string' ? name : '';
  } catch {
    return ''; // a malformed key: the parser refuses the body anyway, the message just names no field
  }
}

function checkNesting(buffer: Buffer, encoding: string): void {
  if (encoding !== 'utf-8' && encoding !== 'utf8') {
    throw new HttpError(415, 'invalidParam', 'request body encoding is not supported; send UTF-8 JSON');
  }
  const field = fieldNestedTooDeep(buffer, MAX_BODY_DEPTH);
  if (field !== null) {
    throw invalidParam(field
      ? `body field ${field} nests deeper than the request body's bound of ${MAX_BODY_DEPTH} levels`
      : `request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  }
}

/**
 * Bodies are JSON. A body sent with another declared type would otherwise reach the routes as no body at all,
 * and be refused for a missing field: say what is wrong instead. (A body without a Content-Type is read as JSON.)
 */
export function jsonBody(bodyLimitBytes: number): RequestHandler {
  const parse = express.json({ limit: bodyLimitBytes, strict: false, verify: (_req, _res, buffer, encoding) => checkNesting(buffer, encoding) });
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
