/**
 * Webhook benchmarks: the service's emitter and dispatcher in this process, a node:http receiver in this process
 * answering 200 at once.
 *
 *   deliveries/s          BENCH_WEBHOOK_DELIVERIES queued pings (default 5,000) over 4 endpoints, sent by one
 *                         dispatcher (32 attempts in flight, 4 per endpoint), from the first claim to the last answer
 *   append → first attempt  events appended at BENCH_WEBHOOK_RATE per second (default 100; on PGlite
 *                         BENCH_WEBHOOK_RATE_PGLITE, default 20) for BENCH_WEBHOOK_SECONDS
 *                         (default 5) by a client with one endpoint: from the append's answer to the moment the
 *                         receiver has the POST, p50 and p99 (the emitter's batch and transaction, the dispatcher's
 *                         claim, the request)
 *
 * Prints figures; never fails.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { storedEvents } from '../src/contexts.ts';
import { assembleService } from '../src/assemble.ts';
import { systemRuntime } from '../src/domain/runtime.ts';
import { silentLogger } from '../src/logging.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { registerWebhook, secretBoxOf } from '../src/webhooks/handlers.ts';
import { enqueueTestPing } from '../src/webhooks/outbox.ts';
import { customerStream } from '../src/customers/events.ts';
import { WEBHOOKS_PROJECTOR } from '../projections/webhooks.ts';
import type { Report } from './loadReport.ts';

const DELIVERIES = Number(process.env.BENCH_WEBHOOK_DELIVERIES ?? 5_000);
const RATE_PER_SECOND = Number(process.env.BENCH_WEBHOOK_RATE ?? 100);
// PGlite runs in this process's event loop beside the receiver and every projector: a lower pace keeps the figure one
// of latency rather than of a queue that grows.
const RATE_PER_SECOND_PGLITE = Number(process.env.BENCH_WEBHOOK_RATE_PGLITE ?? 20);
const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 5);
const ENDPOINTS = 4;
/** How long the run waits for the last deliveries before it reports what arrived. */
const DRAIN_TIMEOUT_MS = 60_000;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export async function benchWebhooks(target: string, database: Database, report: Report): Promise<void> {
  const received: Array<{ body: string; at: number }> = [];
  let onReceived: (() => void) | null = null;
  const receiver: Server = createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), at });
      res.writeHead(200).end();
      onReceived?.();
    });
  });
  receiver.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

  const config = loadConfig({ LOG_LEVEL: 'silent', SANDBOX_AUTOPILOT: 'false', WEBHOOK_ALLOW_PRIVATE: 'true' });
  const store = new PostgresEventStore(database, { upcasters: storedEvents.upcasters });
  const { services, projections, scheduler } = await assembleService({
    config, logger: silentLogger, runtime: systemRuntime, schedule: false,
    storage: { mode: database.kind === 'postgres' ? 'postgres' : 'embedded', database, store, describe: 'bench', close: async () => store.close() },
  });
  const dispatcher = new WebhookDispatcher({
    database, secrets: () => secretBoxOf(services), logger: silentLogger, now: () => new Date(), owner: 'bench', allowPrivate: true,
    maxConcurrent: config.webhookMaxConcurrent, maxPerEndpoint: config.webhookMaxPerEndpoint,
  });
  for (const runner of projections.projectionRunners) if (runner.name === WEBHOOKS_PROJECTOR) runner.on('advanced', () => dispatcher.nudge());
  const waitFor = async (count: number) => {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while (received.length < count && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        onReceived = resolve;
        setTimeout(resolve, 100);
      });
    }
    onReceived = null;
  };
  try {
    const clientId = `bench-${randomUUID()}`;
    const endpoints: string[] = [];
    for (let n = 0; n < ENDPOINTS; n++) {
      endpoints.push((await registerWebhook(services, clientId, { url: n === 0 ? url : `${url}?endpoint=${n}` }, { clientId, actor: 'bench' })).endpointId);
    }

    // Throughput: a queue of pings, then the dispatcher drains it.
    for (let n = 0; n < DELIVERIES; n += 500) {
      await Promise.all(Array.from({ length: Math.min(500, DELIVERIES - n) }, (_, i) =>
        enqueueTestPing(database, endpoints[(n + i) % ENDPOINTS]!, clientId, new Date())));
    }
    const started = performance.now();
    dispatcher.start();
    await waitFor(DELIVERIES);
    const took = performance.now() - started;
    report(target, `webhook deliveries to a local receiver (${ENDPOINTS} endpoints)`,
      `${Math.round(received.length / (took / 1000)).toLocaleString('en-US')}/s (${received.length} in ${(took / 1000).toFixed(1)} s)`);

    // Latency: appended events, paced, of a client with one endpoint: one delivery each.
    received.length = 0;
    const paced = `bench-${randomUUID()}`;
    await registerWebhook(services, paced, { url }, { clientId: paced, actor: 'bench' });
    const appendedAt = new Map<string, number>();
    const pace = database.kind === 'postgres' ? RATE_PER_SECOND : RATE_PER_SECOND_PGLITE;
    const total = Math.round(pace * SECONDS);
    const pacing = performance.now();
    for (let n = 0; n < total; n++) {
      const due = pacing + (n * 1000) / pace;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const customerId = randomUUID();
      await store.append(customerStream(customerId), [{
        type: 'CustomerLevelChanged', metadata: { clientId: paced, actor: 'bench' },
        data: {
          customerId, clientId: paced, firstName: null, lastName: null, email: null, documentNumber: null, operationLevel: 'BASIC',
          previousOperationLevel: 'BASIC', autoCreated: false, documentsCount: 1, isDocumented: true, reason: 'DOCUMENTED',
          changedAt: new Date().toISOString(),
        },
      }], 'any');
      appendedAt.set(customerId, performance.now());
    }
    await waitFor(total);
    const latencies = received.flatMap(({ body, at }) => {
      const id = (JSON.parse(body) as { customer?: { id: string } }).customer?.id;
      const appended = id ? appendedAt.get(id) : undefined;
      return appended === undefined ? [] : [at - appended];
    }).sort((a, b) => a - b);
    report(target, `webhook append → first attempt (${pace} events/s, ${latencies.length} deliveries)`,
      `p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms`);
  } finally {
    await dispatcher.stop();
    await new Promise<void>((resolve) => {
      receiver.closeAllConnections();
      receiver.close(() => resolve());
    });
    await scheduler.stop();
    await projections.stop();
    await store.close();
  }
}
