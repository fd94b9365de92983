/**
 * The HTTP load generator of the benchmarks: autocannon in a process of its own (forked by bench/http.ts),
 * so the service's event loop under test is not shared with the client's. Runs one load per message and
 * answers with the figures; `{ kind: 'exit' }` ends it.
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

export interface LoadSpec {
  kind: 'run';
  baseUrl: string;
  connections: number;
  seconds: number;
  method: 'GET' | 'POST';
  /** Paths sent in turn by each connection (one for a single endpoint). */
  paths: string[];
  headers: Record<string, string>;
  /** POST only: the JSON body; every request gets a new `uniqueField` (and Idempotency-Key when asked). */
  body?: Record<string, unknown>;
  /** The field of `body` made unique per request (default `externalId`; '' for none), its value `uniquePrefix` + a sequence. */
  uniqueField?: string;
  uniquePrefix?: string;
  /**
   * POST only, instead of `body`: bodies sent as they are, in turn. Runs that name the same `bodiesKey` share one
   * cursor (a warm-up and its measured run never send the same body twice); past the last, from the first again.
   */
  bodies?: Array<Record<string, unknown> | null>;
  /**
   * POST only, with `bodies`: the path of each body (same length), for requests that may each be sent once (an
   * assignment of one deposit); `paths` is then ignored.
   */
  bodyPaths?: string[];
  bodiesKey?: string;
  idempotencyKeys?: boolean;
}

export interface LoadResult {
  seconds: number;
  completed: number;
  requestsPerSecond: number;
  latency: { mean: number; p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  firstError: { status: number; body: string } | null;
  /** CPU the load generator itself used (user + system), ms. */
  cpuMs: number;
}

/** Where each `bodiesKey`'s runs are in their bodies. */
const cursors = new Map<string, number>();

async function run(spec: LoadSpec): Promise<LoadResult> {
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  let sequence = 0;
  let firstError: LoadResult['firstError'] = null;
  const onResponse = (status: number, body: string) => {
    if ((status < 200 || status > 299) && !firstError) firstError = { status, body: body.slice(0, 2000) };
  };
  const requests = spec.paths.map((path) => ({
    method: spec.method,
    path,
    onResponse,
    ...(spec.bodies ? {
      setupRequest: (request: { headers: Record<string, string> }) => {
        const key = spec.bodiesKey ?? '';
        const at = cursors.get(key) ?? 0;
        cursors.set(key, at + 1);
        const i = at % spec.bodies!.length;
        // A null body: the route takes none (a move such as POST /payments/:id/authorized).
        const body = spec.bodies![i];
        const headers: Record<string, string> = { ...request.headers, ...(body === null ? {} : { 'content-type': 'application/json' }) };
        if (spec.idempotencyKeys) headers['idempotency-key'] = `${prefix}-key-${++sequence}`;
        return { ...request, ...(spec.bodyPaths ? { path: spec.bodyPaths[i] } : {}), headers, ...(body === null ? {} : { body: JSON.stringify(body) }) };
      },
    } : spec.body ? {
      setupRequest: (request: { headers: Record<string, string> }) => {
        const n = ++sequence;
        const headers: Record<string, string> = { ...request.headers, 'content-type': 'application/json' };
        if (spec.idempotencyKeys) headers['idempotency-key'] = `${prefix}-key-${n}`;
        const field = spec.uniqueField ?? 'externalId';
        const body = field ? { ...spec.body, [field]: `${spec.uniquePrefix ?? ''}${prefix}-${n}` } : spec.body;
        return { ...request, headers, body: JSON.stringify(body) };
      },
    } : {}),
  }));
  const cpu = process.cpuUsage();
  const result = await autocannon({
    url: spec.baseUrl,
    connections: spec.connections,
    duration: spec.seconds,
    timeout: 30,
    headers: spec.headers,
    requests,
  });
  const used = process.cpuUsage(cpu);
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  return {
    seconds: result.duration,
    completed: result.requests.total,
    requestsPerSecond: result.requests.total / result.duration,
    latency: { mean: result.latency.mean, p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    firstError,
    cpuMs: (used.user + used.system) / 1000,
  };
}

process.on('message', (message: LoadSpec | { kind: 'exit' }) => {
  if (message.kind === 'exit') {
    process.disconnect();
    return;
  }
  run(message).then(
    (result) => process.send!({ kind: 'result', result }),
    (error: unknown) => process.send!({ kind: 'error', message: error instanceof Error ? error.stack ?? error.message : String(error) }),
  );
});
process.send?.({ kind: 'ready' });
