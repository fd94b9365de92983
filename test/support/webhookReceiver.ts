/**
 * A webhook receiver for tests: a real node:http server that records every request (headers and raw body) and
 * answers as the test says: a status per request, or never (a hanging receiver).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The JSON body, parsed. */
  body: any;
  /** Answers a request held with `hang` (and records nothing more). */
  answer(status: number): void;
}

/** What to answer a request: a status, or 'hang' to hold it open until the test answers or closes. */
export type Responder = (request: ReceivedRequest, index: number) => number | 'hang';

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** Requests being answered now, by X-Webhook-Id. */
  inFlight: Map<string, number>;
  /** The most requests of one X-Webhook-Id seen in flight at once. */
  maxInFlightPerId: number;
  /** Requests not answered yet, and the most there were at once. */
  open: number;
  maxOpen: number;
  respond: Responder;
  close(): Promise<void>;
}

export async function startReceiver(respond: Responder = () => 200, options: { answerDelayMs?: number } = {}): Promise<Receiver> {
  const held = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '', received: [], inFlight: new Map(), maxInFlightPerId: 0, open: 0, maxOpen: 0, respond,
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['x-webhook-id']);
      const busy = (receiver.inFlight.get(id) ?? 0) + 1;
      receiver.inFlight.set(id, busy);
      receiver.maxInFlightPerId = Math.max(receiver.maxInFlightPerId, busy);
      receiver.maxOpen = Math.max(receiver.maxOpen, ++receiver.open);
      const done = () => {
        receiver.open--;
        const left = (receiver.inFlight.get(id) ?? 1) - 1;
        if (left === 0) receiver.inFlight.delete(id);
        else receiver.inFlight.set(id, left);
      };
      res.on('close', done);
      const request: ReceivedRequest = {
        headers: req.headers, rawBody, body: JSON.parse(rawBody),
        answer(status) {
          held.delete(res);
          res.writeHead(status).end();
        },
      };
      receiver.received.push(request);
      const status = receiver.respond(request, receiver.received.length - 1);
      if (status === 'hang') {
        held.add(res);
        return;
      }
      if (options.answerDelayMs) setTimeout(() => res.writeHead(status).end(), options.answerDelayMs);
      else res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}
