/**
 * Per-request context: a request id (the caller's X-Request-Id when it is sane, else a new one, echoed
 * back), a logger carrying it, the request's log line when its response ends (pino-http), and, after
 * authentication, who is calling.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../logging.ts';

export type Caller = { kind: 'client'; clientId: string } | { kind: 'operator' } | { kind: 'provider' } | { kind: 'anonymous' };

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    caller: Caller;
    /**
     * Set when the request carries an Idempotency-Key: a digest of its caller, the key and the request, which
     * its commands record and derive the ids of what they create from (src/eventstore/deterministicId.ts).
     */
    requestKey?: string;
  }
}

/** At most 128 characters (plus a closed alphabet): an id of the caller's that is longer or odder is replaced. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * One line per request, when its response has been sent (or its connection closed):
 * `{requestId, method, path, status, ms, caller, msg: "request"}`. Headers and bodies are not logged; the
 * logger's redaction (src/logging.ts) covers what other lines may carry.
 */
export function requestContext(logger: Logger): RequestHandler {
  const line = (req: IncomingMessage, res: ServerResponse, ms: number) => {
    const request = req as Request;
    const caller = request.caller.kind === 'client' ? request.caller.clientId : request.caller.kind;
    return { method: request.method, path: request.path, status: res.statusCode, ms, caller };
  };
  const http = pinoHttp({
    logger,
    // pino-http binds the request to `req.log` under the `req` attribute key; named `requestId` here, with a
    // serialiser that keeps only the id, that one child logger is the request's logger and carries its id (one
    // child per request: serialising the whole request for a logger that never logs it would cost more).
    customAttributeKeys: { req: 'requestId', responseTime: 'ms' },
    wrapSerializers: false,
    serializers: { requestId: (value: IncomingMessage | string) => (typeof value === 'string' ? value : value.id) },
    genReqId(req, res) {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    // Always `info`: a failed request's error is logged where it is handled (src/http/errors.ts).
    customLogLevel: () => 'info',
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customSuccessObject: (req, res, val: { ms: number }) => line(req, res, val.ms),
    customErrorObject: (req, res, _error, val: { ms: number }) => line(req, res, val.ms),
  });
  return (req, res, next) => {
    req.caller = { kind: 'anonymous' };
    http(req, res, next);
  };
}
