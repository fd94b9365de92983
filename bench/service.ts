/**
 * The service as the benchmarks run it: assembled as src/main.ts does, in this process, over a given database,
 * with its scheduled jobs off; and a small JSON client for it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { storedEvents } from '../src/contexts.ts';
import type { ProjectionDaemon } from '../src/projection/daemon.ts';
import { createApp } from '../src/http/app.ts';
import type { Services } from '../src/http/services.ts';
import { systemRuntime } from '../src/domain/runtime.ts';
import { assembleService } from '../src/assemble.ts';
import { stopService } from '../src/shutdown.ts';
import type { Profiler } from './profile.ts';

export const OPERATOR_KEY = 'bench-operator-key-0123456789';

export interface BenchService {
  baseUrl: string;
  services: Services;
  projections: ProjectionDaemon;
  close(): Promise<void>;
}

/** The service as src/main.ts assembles it (logs formatted as in production, written to /dev/null). */
export async function startService(
  database: Database,
  options: {
    profiler?: Profiler; diagnose?: boolean; beforeStart?: (projections: ProjectionDaemon) => void;
    /** Settings over the benchmark's own (autopilot off, no rate limit). */
    env?: Record<string, string>;
    /** Run the scheduled jobs on their schedules (off by default: they would act on the seeded payments mid-run). */
    schedule?: boolean;
  } = {},
): Promise<BenchService> {
  const { profiler, diagnose = false, beforeStart } = options;
  const config = loadConfig({
    OPERATOR_API_KEY: OPERATOR_KEY, RATE_LIMIT_PER_SECOND: '0', SANDBOX_AUTOPILOT: 'false',
    ...(database.connectionString ? { DATABASE_URL: database.connectionString } : {}),
    ...options.env,
  });
  const logger = pino({ level: config.logLevel }, pino.destination({ dest: '/dev/null', sync: false }));
  const store = new PostgresEventStore(database, { upcasters: storedEvents.upcasters });
  const { services, projections, scheduler } = await assembleService({
    config, logger, runtime: systemRuntime,
    storage: { mode: database.kind === 'postgres' ? 'postgres' : 'embedded', database, store, describe: 'bench', close: async () => store.close() },
    schedule: options.schedule ?? false,
    beforeProjecting: beforeStart,
  });
  if (diagnose) profiler?.wrapReadYourWrites(services);
  profiler?.watchRunners(projections);
  const { app } = createApp(services);
  const server: Server = createServer(diagnose && profiler ? profiler.handler(app) : app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    services,
    projections,
    async close() {
      await stopService({ server, scheduler, projections, closeStorage: () => store.close() }, 0);
      logger.flush();
    },
  };
}

export async function call(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'user-agent': 'bench', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

