/**
 * The whole service in-process on an ephemeral port, over a test database (PGlite or Postgres), with
 * helpers to provision clients and call the API as they would.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Database } from '../../src/db/database.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres/postgresEventStore.ts';
import { contexts as serviceContexts, eventContractsOf } from '../../src/contexts.ts';
import { createApp, type AppOptions } from '../../src/http/app.ts';
import type { Services } from '../../src/http/services.ts';
import { assembleService } from '../../src/assemble.ts';
import { systemRuntime, type Runtime } from '../../src/domain/runtime.ts';
import { silentLogger } from '../../src/logging.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { checkResponse } from './responseContract.ts';
import { stopService } from '../../src/shutdown.ts';

export const OPERATOR_KEY = 'test-operator-key-0123456789';

export interface Credentials {
  clientId: string;
  clientSecret: string;
  apiKey: string;
  name: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is, instead of JSON-encoding `body`. */
  rawBody?: string;
  headers?: Record<string, string | undefined>;
  /** Skip checking the answer against the OpenAPI document. */
  unchecked?: boolean;
}

export interface TestService {
  baseUrl: string;
  /** `method path` of every route express has registered (OpenAPI path syntax). */
  expressRoutes(): string[];
  services: Services;
  routes: AnyRoute[];
  database: Database;
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>;
  operator(method: string, path: string, body?: unknown): Promise<ApiResponse>;
  createClient(name?: string): Promise<Credentials>;
  token(client: Credentials): Promise<string>;
  /** Headers of an authenticated client call. */
  as(client: Credentials): Promise<Record<string, string>>;
  eventCount(): Promise<number>;
  close(): Promise<void>;
}

export async function startTestService(
  database: Database,
  options: AppOptions & {
    env?: Record<string, string>; runtime?: Runtime;
    /** Run the scheduled jobs on their cron schedules (tests otherwise call the jobs themselves). */
    schedule?: boolean;
  } = {},
): Promise<TestService> {
  const config: Config = loadConfig({
    OPERATOR_API_KEY: OPERATOR_KEY, RATE_LIMIT_PER_SECOND: '0', ADDRESS_RATE_LIMIT_PER_SECOND: '0', ...options.env });
  // The service's contexts, or those a test gives (test/registration.test.ts adds one): its stored events with them.
  const contexts = options.contexts ?? serviceContexts;
  const store = new PostgresEventStore(database, { upcasters: eventContractsOf(contexts).upcasters });
  const { services, projections, scheduler } = await assembleService({
    contexts,
    config, logger: silentLogger, runtime: options.runtime ?? systemRuntime,
    storage: { mode: 'embedded', database, store, describe: 'test', close: async () => store.close() },
    daemon: { idlePollMs: 50 }, schedule: options.schedule ?? false,
  });
  const { app, routes } = createApp(services, options);
  const expressRoutes = () => {
    const stack = (app as unknown as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }).router.stack;
    return stack.flatMap((layer) => layer.route
      ? Object.keys(layer.route.methods).filter((m) => m !== '_all').map((m) => `${m} ${layer.route!.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`)
      : []);
  };
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as Record<string, unknown>;

  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = {};
    if (opts.body !== undefined || opts.rawBody !== undefined) headers['content-type'] = 'application/json';
    for (const [name, value] of Object.entries(opts.headers ?? {})) if (value !== undefined) headers[name] = value;
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(opts.rawBody !== undefined ? { body: opts.rawBody } : opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await response.text();
    let body: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) body = JSON.parse(text);
    const result = { status: response.status, headers: response.headers, body, text };
    // Checked against the path the request reached, after the client resolved any dot segments.
    if (!opts.unchecked) checkResponse(document, method, new URL(path, baseUrl).pathname, result);
    return result;
  };

  const operator = (method: string, path: string, body?: unknown) =>
    request(method, path, { body, headers: { 'x-operator-key': OPERATOR_KEY, 'user-agent': 'ops-tests' } });

  const token = async (client: Credentials) => {
    const response = await request('POST', '/auth', {
      body: { clientId: client.clientId, clientSecret: client.clientSecret },
      headers: { 'x-api-key': client.apiKey, 'user-agent': 'tests' },
    });
    if (response.status !== 200) throw new Error(`auth failed: ${response.status} ${response.text}`);
    return response.body.accessToken as string;
  };

  return {
    baseUrl, services, routes, database, request, operator, token, expressRoutes,
    async createClient(name = 'Test merchant') {
      const response = await operator('POST', '/operator/clients', { name });
      if (response.status !== 201) throw new Error(`client creation failed: ${response.status} ${response.text}`);
      return response.body as Credentials;
    },
    async as(client) {
      return { 'x-api-key': client.apiKey, 'user-agent': 'tests', authorization: `Bearer ${await token(client)}` };
    },
    async eventCount() {
      return Number((await database.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
    },
    async close() {
      await stopService({ server, scheduler, projections, closeStorage: () => store.close() }, 0);
    },
  };
}
