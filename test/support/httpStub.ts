/**
 * A stub of the network in front of the real service: an HTTP server that forwards every request to the service,
 * except those the test tells it to answer itself (a 503 from a proxy, a 409, a 401, a rewritten answer). It records
 * every request it receives, so a test sees what a client sent, retries included.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface StubAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * Decides what to do with a request: an answer of its own, or undefined to forward it. `forward` sends it on and
 * gives the service's answer, which the rule may return changed.
 */
export type StubRule = (request: SeenRequest, forward: () => Promise<StubAnswer>) => Promise<StubAnswer | undefined> | StubAnswer | undefined;

export interface HttpStub {
  url: string;
  seen: SeenRequest[];
  rule: StubRule;
  close(): Promise<void>;
}

/** Headers not passed on: hop-by-hop ones, and those fetch recomputes (it decodes the body it forwards). */
const NOT_FORWARDED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'content-encoding', 'keep-alive']);

export async function startHttpStub(target: string, rule: StubRule = () => undefined): Promise<HttpStub> {
  const stub: HttpStub = {
    url: '', seen: [], rule,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const seen: SeenRequest = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      stub.seen.push(seen);
      const forward = async (): Promise<StubAnswer> => {
        const headers = Object.fromEntries(Object.entries(req.headers)
          .filter(([name, value]) => !NOT_FORWARDED.has(name) && typeof value === 'string') as Array<[string, string]>);
        const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(seen.body ? { body: seen.body } : {}) });
        const text = await answer.text();
        const kept = Object.fromEntries([...answer.headers].filter(([name]) => !NOT_FORWARDED.has(name)));
        return { status: answer.status, headers: kept, body: text ? JSON.parse(text) : undefined };
      };
      try {
        const answer = (await stub.rule(seen, forward)) ?? (await forward());
        res.writeHead(answer.status, { ...(answer.body !== undefined ? { 'content-type': 'application/json' } : {}), ...answer.headers });
        res.end(answer.body === undefined ? undefined : JSON.stringify(answer.body));
      } catch (error) {
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`stub: ${(error as Error).message}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return stub;
}
