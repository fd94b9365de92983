/**
 * Every error the service answers has the shape `{statusCode, error, message}`; `error` is one of a fixed
 * set of categories. Handlers throw `HttpError`; anything else becomes a 500 without internals.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { ErrorPayload } from '../../schemas/common.ts';
import { isUnavailable } from '../db/unavailable.ts';
import type { Logger } from '../logging.ts';

export type ErrorCategory = ErrorPayload['error'];

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly statusCode: number,
    readonly category: ErrorCategory,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toPayload(): ErrorPayload {
    return { statusCode: this.statusCode, error: this.category, message: this.message };
  }
}

export const invalidParam = (message: string) => new HttpError(400, 'invalidParam', message);
export const missingParam = (message: string) => new HttpError(400, 'missingParam', message);
export const unauthorized = (message = 'authentication failed') => new HttpError(401, 'unauthorized', message);
export const forbidden = (message: string) => new HttpError(403, 'forbiddenOperation', message);
export const notFound = (message: string) => new HttpError(404, 'notFound', message);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new HttpError(429, 'tooManyRequests', `rate limit exceeded; retry after ${retryAfterSeconds} s`,
    { 'Retry-After': String(retryAfterSeconds) });

/** Seconds a client is told to wait when the database or the event store cannot be reached. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

export const serviceUnavailable = () => new HttpError(503, 'serviceUnavailable',
  'the service cannot reach its database right now; retry after a moment (with the same Idempotency-Key, a request that was ' +
  'applied answers what it did, and one that was not is applied once)',
  { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) });

/** A fault of the database or the event store as its 503; anything else as it is. */
export function asUnavailable(error: unknown): unknown {
  return !(error instanceof HttpError) && isUnavailable(error) ? serviceUnavailable() : error;
}

export const unknownRoute: RequestHandler = (req, _res, next) => {
  next(notFound(`no route for ${req.method} ${req.path}`));
};

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/** Maps what the body parser and handlers throw to the error payload; logs 5xx with their stack. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    let httpError: HttpError;
    const parserError = error as BodyParserError;
    if (error instanceof HttpError) {
      httpError = error;
    } else if (parserError?.type === 'entity.parse.failed') {
      httpError = invalidParam('request body is not valid JSON');
    } else if (parserError?.type === 'entity.too.large') {
      httpError = new HttpError(413, 'invalidParam', `request body exceeds the limit of ${parserError.limit} bytes`);
    } else if (parserError?.type === 'encoding.unsupported' || parserError?.type === 'charset.unsupported') {
      httpError = new HttpError(415, 'invalidParam', 'request body encoding is not supported; send UTF-8 JSON');
    } else if (error instanceof URIError || /failed to decode param/i.test((error as Error)?.message ?? '')) {
      // The router could not percent-decode a path parameter.
      httpError = invalidParam('request path has a malformed percent-encoding (each % must start %XX, in UTF-8)');
    } else if (typeof parserError?.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
      httpError = invalidParam('request could not be read');
    } else if (isUnavailable(error)) {
      httpError = serviceUnavailable();
    } else {
      httpError = new HttpError(500, 'serverError', 'the service failed to handle the request; it has been logged');
    }
    if (httpError.statusCode === 503) {
      (req.log ?? logger).warn({ err: error }, 'request refused: the database or the event store is unreachable');
    } else if (httpError.statusCode >= 500) {
      (req.log ?? logger).error({ err: error }, 'request failed');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(httpError.statusCode).set(httpError.headers).json(httpError.toPayload());
  };
}
