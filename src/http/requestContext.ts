/**
 * Per-request context: a request id (the caller's X-Request-Id when it is sane, else a new one, echoed
 * back), a logger carrying it, the request's log line when its response ends, and, after authentication, who is
 * calling.
 */
import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../logging.ts';

export type Caller = { kind: 'client'; clientId: string } | { kind: 'operator' } | { kind: 'provider' } | { kind: 'anonymous' };

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    caller: Caller;
    /** The request's logger: every line it writes carries the request id. */
    log: Logger;
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
 * `{requestId, method, path, status, ms, caller, msg: "request"}`, always at `info` (a failed request's error is
 * logged where it is handled, src/http/errors.ts). Headers and bodies are not logged; the logger's redaction
 * (src/logging.ts) covers what other lines may carry.
 *
 * Written here rather than through an HTTP-logging middleware: that one made a child logger and listeners per
 * request whether or not anything else was logged, a tenth of the service's CPU per write request under load.
 * The request's own logger is made the first time it is used.
 */
export function requestContext(logger: Logger): RequestHandler {
  let installed: object | null = null;
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    req.id = id;
    req.caller = { kind: 'anonymous' };
    // `req.log` is a getter of the app's request prototype, set once: defining it on each request made every
    // request object slower to use.
    const prototype = Object.getPrototypeOf(req) as object;
    if (installed !== prototype) {
      installRequestLogger(prototype, logger);
      installed = prototype;
    }
    const started = performance.now();
    // A response emits 'close' once, when it has been sent or its connection closed before.
    res.once('close', () => {
      const caller = req.caller.kind === 'client' ? req.caller.clientId : req.caller.kind;
      logger.info({
        requestId: id, method: req.method, path: req.path, status: res.statusCode, ms: Math.round(performance.now() - started), caller,
      }, 'request');
    });
    next();
  };
}

const REQUEST_LOGGER = Symbol('the request\'s logger');

/** `log` on the requests of one app: a child of `logger` carrying the request's id, made when first used. */
function installRequestLogger(prototype: object, logger: Logger): void {
  type WithLogger = Request & { [REQUEST_LOGGER]?: Logger };
  Object.defineProperty(prototype, 'log', {
    configurable: true,
    get(this: WithLogger) {
      return (this[REQUEST_LOGGER] ??= logger.child({ requestId: this.id }));
    },
    set(this: WithLogger, value: Logger) {
      this[REQUEST_LOGGER] = value;
    },
  });
}
