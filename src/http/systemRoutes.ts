/** Operations: liveness, readiness, metrics, and the API's own description. */
import { readFile } from 'node:fs/promises';
import { comparePositions } from '../eventstore/position.ts';
import type { Request, Response } from 'express';
import { defineRoute, type AnyRoute, type HandlerResult } from './route.ts';
import type { Services } from './services.ts';
import { DOCS_ASSETS, DOCS_ASSETS_PATH, DOCS_CONTENT_SECURITY_POLICY, operationsOf, renderDocsPage } from './docs.ts';
import { sendStatic, staticBody, type StaticBody } from './staticBody.ts';

/** A projection behind the head of the feed for longer than this makes the service not ready. */
const READY_LAG_MS = 5_000;
/** How long a browser may keep the reference page's assets without asking again (they change with a release). */
const DOCS_ASSET_MAX_AGE_MS = 3_600_000;

const statusSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: {
    status: { type: 'string' },
    lagging: { type: 'array', items: { type: 'string' } },
  },
} as const;

/**
 * Lag of each active projector (the read models readers see): events behind the head, and the age of the
 * oldest one not yet applied. Reactors are left out: their effects are commands of their own, and one may run
 * behind the head by design (the customers reactor waits for reservations to age).
 */
async function projectionLag({ storage, projections }: Services) {
  const [head, states] = await Promise.all([storage.store.headPosition(), projections.status()]);
  return Promise.all(states.filter((s) => s.kind === 'projector' && s.status === 'active').map(async (s) => {
    const behind = head !== null && (s.checkpoint === null || comparePositions(s.checkpoint, head) < 0);
    if (!behind) return { name: s.name, lagEvents: 0, lagSeconds: 0 };
    const [oldest] = await storage.store.readAll({ after: s.checkpoint, limit: 1 });
    return {
      name: s.name,
      // Exact on Postgres (a global sequence); an approximation on EventStoreDB (log offsets).
      lagEvents: Math.max(1, Number(head.prepare - (s.checkpoint?.prepare ?? 0n))),
      lagSeconds: oldest ? Math.max(0, (Date.now() - oldest.recordedAt.getTime()) / 1000) : 0,
    };
  }));
}

/** The API's own description and reference page, each built on first use and kept. */
class DocsBodies {
  private html: string | null = null;
  private documentBody: StaticBody | null = null;
  // One per file of DOCS_ASSETS, read on first use: a fixed set, about 1.6 MB with their gzipped copies.
  private readonly assets = new Map<string, StaticBody>();

  constructor(private readonly document: () => Record<string, unknown>) {}

  openApi(): StaticBody {
    this.documentBody ??= staticBody(JSON.stringify(this.document()), 'application/json; charset=utf-8');
    return this.documentBody;
  }

  page(): string {
    if (this.html === null) {
      const doc = this.document();
      this.html = renderDocsPage(String((doc.info as { title?: string } | undefined)?.title ?? 'API'), operationsOf(doc));
    }
    return this.html;
  }

  async asset(file: string): Promise<StaticBody> {
    let body = this.assets.get(file);
    if (!body) {
      const asset = DOCS_ASSETS[file]!;
      body = staticBody(asset.text ?? await readFile(asset.file!), asset.contentType);
      this.assets.set(file, body);
    }
    return body;
  }
}

export function systemRoutes(services: Services, document: () => Record<string, unknown>): AnyRoute[] {
  const docs = new DocsBodies(document);
  return [
    defineRoute({
      method: 'get', path: '/health', operationId: 'health', summary: 'Liveness: the process answers',
      tags: ['Operations'], access: 'public', schemas: {},
      responses: { 200: { description: 'alive', schema: statusSchema } },
      handler: health,
    }),
    defineRoute({
      method: 'get', path: '/ready', operationId: 'ready',
      summary: 'Readiness: the database answers and the read models are caught up',
      tags: ['Operations'], access: 'public', schemas: {},
      responses: {
        200: { description: 'ready', schema: statusSchema },
        503: { description: 'not ready: database unreachable or projections catching up', schema: statusSchema },
      },
      handler: () => ready(services),
    }),
    defineRoute({
      method: 'get', path: '/metrics', operationId: 'metrics', summary: 'Prometheus metrics',
      description: 'Request counts and latency by method, route pattern and status; event-store append latency; ' +
        'projection lag; the process’s CPU, memory, event-loop lag and garbage collection. At most 2,000 label sets ' +
        'per metric; more are counted under route="__other__".',
      tags: ['Operations'], access: 'public', schemas: {}, raw: true,
      responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain', schema: { type: 'string' } } },
      handler: ({ res }) => metricsText(services, res),
    }),
    defineRoute({
      method: 'get', path: '/openapi.json', operationId: 'openApiDocument', summary: 'This API as OpenAPI 3.1',
      description: 'Gzipped when Accept-Encoding allows it. Cacheable: it carries an ETag (one per encoding) and ' +
        '`Cache-Control: no-cache`, so a client keeps it and asks again with If-None-Match, answered 304 until the service ' +
        'changes.',
      tags: ['Operations'], access: 'public', schemas: {}, raw: true,
      responses: {
        200: { description: 'the OpenAPI document', schema: { type: 'object' } },
        304: { description: 'not modified: If-None-Match names the ETag of this document (no body)' },
      },
      handler: ({ req, res }) => openApiDocument(docs, req, res),
    }),
    defineRoute({
      method: 'get', path: '/docs', operationId: 'apiReference',
      summary: 'This API’s interactive reference (Swagger UI, served by the service itself: works offline)',
      description: 'Every operation with its parameters, schemas and an example request; “Try it out” calls this ' +
        'service. The page loads its script and styles from /docs/assets only.',
      tags: ['Operations'], access: 'public', schemas: {}, raw: true,
      responses: { 200: { description: 'HTML', contentType: 'text/html', schema: { type: 'string' } } },
      handler: ({ res }) => apiReference(docs, res),
    }),
    defineRoute({
      method: 'get', path: `${DOCS_ASSETS_PATH}/:file`, operationId: 'apiReferenceAsset',
      summary: 'A file of the reference page (Swagger UI’s stylesheet and script, its start script, the icon)',
      tags: ['Operations'], access: 'public', raw: true,
      schemas: {
        params: {
          type: 'object', additionalProperties: false, required: ['file'],
          properties: { file: { type: 'string', enum: Object.keys(DOCS_ASSETS), description: 'one of the page’s files' } },
        } as const,
      },
      responses: {
        200: { description: 'the file (CSS, JavaScript or PNG), gzipped when Accept-Encoding allows it', contentType: 'application/octet-stream' },
        304: { description: 'not modified: If-None-Match names the file’s ETag (no body)' },
      },
      handler: ({ params, req, res }) => apiReferenceAsset(docs, params.file, req, res),
    }),
  ];
}

async function health(): Promise<HandlerResult> {
  return { status: 200, body: { status: 'ok' } };
}

async function ready(services: Services): Promise<HandlerResult> {
  try {
    const lagging = (await projectionLag(services)).filter((p) => p.lagSeconds * 1000 > READY_LAG_MS).map((p) => p.name);
    return lagging.length === 0
      ? { status: 200, body: { status: 'ready', lagging } }
      : { status: 503, body: { status: 'catchingUp', lagging } };
  } catch {
    return { status: 503, body: { status: 'databaseUnreachable', lagging: [] } };
  }
}

async function metricsText(services: Services, res: Response): Promise<void> {
  const { metrics, projections } = services;
  for (const lag of await projectionLag(services).catch(() => [])) {
    metrics.setProjectionLag(lag.name, lag.lagEvents, lag.lagSeconds);
  }
  // Every projection this process runs shows its lease counters, at 0 until its first lease change.
  for (const runner of projections.projectionRunners) {
    metrics.countLeaseChange(runner.name, 'acquired', 0);
    metrics.countLeaseChange(runner.name, 'lost', 0);
  }
  res.type(metrics.contentType).send(await metrics.render());
}

async function openApiDocument(docs: DocsBodies, req: Request, res: Response): Promise<void> {
  // Kept, and checked again on each use: a restart with another version answers another ETag at once.
  sendStatic(req, res, docs.openApi(), 'no-cache');
}

async function apiReference(docs: DocsBodies, res: Response): Promise<void> {
  res.set({ 'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY, 'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer' }).type('html').send(docs.page());
}

async function apiReferenceAsset(docs: DocsBodies, file: string, req: Request, res: Response): Promise<void> {
  sendStatic(req, res, await docs.asset(file), `public, max-age=${DOCS_ASSET_MAX_AGE_MS / 1000}`);
}
