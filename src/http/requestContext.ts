/**
 * Per-request context: a request id (the caller's X-Request-Id when it is sane, else a new one, echoed
 * back), a logger carrying it, and, after authentication, who is calling.
 */
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logging.ts';

export type Caller = { kind: 'client'; clientId: string } | { kind: 'operator' } | { kind: 'provider' } | { kind: 'anonymous' };

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    log: Logger;
    caller: Caller;
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const given = req.get('x-request-id');
    req.id = given && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    req.log = logger.child({ requestId: req.id });
    req.caller = { kind: 'anonymous' };
    res.setHeader('X-Request-Id', req.id);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      req.log.info({ method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10,
        caller: req.caller.kind === 'client' ? req.caller.clientId : req.caller.kind }, 'request');
    });
    next();
  };
}
