/**
 * A body that is the same for every request until the process restarts (the OpenAPI document, the reference
 * page's files): encoded once, gzipped once, served with a strong ETag per encoding, so a client that has it
 * gets a 304 and one that accepts gzip gets about a tenth of the bytes.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Request, Response } from 'express';

export interface StaticBody {
  contentType: string;
  identity: Buffer;
  gzip: Buffer;
  /** Of the content, without quotes; the gzip representation's tag has `-gzip` appended. */
  tag: string;
}

export function staticBody(content: string | Buffer, contentType: string): StaticBody {
  const identity = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return {
    contentType, identity,
    // Once per process and body, so the slowest level costs nothing per request.
    gzip: gzipSync(identity, { level: 9 }),
    tag: createHash('sha256').update(identity).digest('base64url').slice(0, 27),
  };
}

/**
 * Answers `body`: gzip when the request accepts it (Accept-Encoding, with its q-values), a 304 without a body when
 * If-None-Match names the representation's ETag.
 */
export function sendStatic(req: Request, res: Response, body: StaticBody, cacheControl: string): void {
  const gzip = req.acceptsEncodings('gzip', 'identity') === 'gzip';
  res.vary('Accept-Encoding');
  res.set({
    'Content-Type': body.contentType, 'Cache-Control': cacheControl, 'X-Content-Type-Options': 'nosniff',
    ETag: gzip ? `"${body.tag}-gzip"` : `"${body.tag}"`,
  });
  if (req.fresh) {
    res.status(304).end();
    return;
  }
  const bytes = gzip ? body.gzip : body.identity;
  if (gzip) res.set('Content-Encoding', 'gzip');
  res.set('Content-Length', String(bytes.length)).status(200).end(bytes);
}
