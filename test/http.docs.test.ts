import { expect } from 'chai';
import http, { type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import type { Database } from '../src/db/database.ts';
import { DOCS_ASSETS } from '../src/http/docs.ts';
import { openApiPath } from '../src/http/openapi.ts';
import { compileValidator } from '../src/http/validation.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';
import { installedChromium } from './support/chromium.ts';

interface Parameter { name: string; in: string; required: boolean; schema: object; example?: unknown }
interface Media { schema: object; example?: unknown }
interface Operation {
  operationId: string;
  parameters: Parameter[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content?: Record<string, Media> }>;
}
type Document = {
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, object>; parameters?: Record<string, Parameter>; responses?: Record<string, Operation['responses'][string]> };
};

/** The category the service answers each error status with (src/http/errors.ts, router.ts, DESIGN section 9). */
const CATEGORY_OF_STATUS: Record<number, string[]> = {
  400: ['invalidParam', 'missingParam'], 401: ['unauthorized'], 403: ['forbiddenOperation'], 404: ['notFound'],
  409: ['alreadyExist'], 410: ['invalidParam'], 413: ['invalidParam'], 415: ['invalidParam'], 422: ['failedPrecondition'], 429: ['tooManyRequests'],
  500: ['serverError'], 503: ['serviceUnavailable'],
};

/** `schema` with every `$ref` to the document's components replaced by what it names (a `description` beside it kept). */
function inlined(schema: unknown, document: Document): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inlined(item, document));
  if (typeof schema !== 'object' || schema === null) return schema;
  const { $ref, ...rest } = schema as { $ref?: string };
  const target = $ref === undefined ? {} : document.components.schemas[$ref.replace('#/components/schemas/', '')];
  expect(target, `${$ref} is in components`).to.be.an('object');
  return Object.fromEntries(Object.entries({ ...target, ...rest }).map(([key, value]) =>
    [key, key === 'examples' || key === 'example' || key === 'enum' || key === 'const' ? value : inlined(value, document)]));
}

/** A parameter or response as written, or the shared one its `$ref` names (components/parameters, components/responses). */
function resolved<T>(part: T | { $ref: string }, document: Document): T {
  const ref = (part as { $ref?: string }).$ref;
  if (ref === undefined) return part as T;
  const [, , kind, name] = ref.split('/') as [string, string, 'parameters' | 'responses', string];
  const target = (document.components[kind] as Record<string, T> | undefined)?.[name];
  expect(target, `${ref} is in components`).to.be.an('object');
  return target!;
}

/** Without the annotations a `$ref` may carry beside it (a description), so that a schema compares by what it admits. */
function withoutDescriptions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (typeof schema !== 'object' || schema === null) return schema;
  return Object.fromEntries(Object.entries(schema).filter(([key, value]) => !(key === 'description' && typeof value === 'string'))
    .map(([key, value]) => [key, key === 'examples' || key === 'enum' || key === 'const' ? value : withoutDescriptions(value)]));
}

/** A GET with exactly these headers (fetch would add its own Accept-Encoding and decode the answer); the body as sent. */
function requestRaw(url: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    }).on('error', reject);
  });
}

/** Every operation of the document with its method and path. */
function operationsOf(document: Document): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method, path, operation })));
}

/** Debian's Chromium, when installed; the browser test needs it (CI installs it, .ci/run). */

/** The acceptance's bound on the reference page: every operation listed within this, in headless Chromium. */
const DOCS_READY_MS = 2_000;

describe('API reference (/docs)', () => {
  let database: Database;
  let service: TestService;
  let openapi: Document;

  before(async () => {
    database = await databaseTargets()[0]!.open();
    service = await startTestService(database);
    openapi = (await service.request('GET', '/openapi.json')).body as Document;
  });

  after(async () => {
    await service?.close();
    await database?.close();
  });

  it('every operation carries an example request, and each example passes the request validation', () => {
    let bodies = 0;
    let parameters = 0;
    for (const { method, path, operation } of operationsOf(openapi)) {
      const where = `${method.toUpperCase()} ${path}`;
      const media = operation.requestBody?.content['application/json'];
      if (media) {
        expect(media, `${where}: body example`).to.have.property('example');
        const schema = inlined(media.schema, openapi) as object;
        expect(() => compileValidator('body', schema)(structuredClone(media.example)), `${where}: body example`).not.to.throw();
        bodies += 1;
      }
      for (const parameter of operation.parameters.map((p) => resolved(p, openapi))) {
        const name = `${where}: ${parameter.in} parameter ${parameter.name}`;
        expect(parameter, name).to.have.property('example');
        // On the wire every parameter is a string; the router coerces it to the schema's type, as it does here.
        const part = parameter.in === 'path' ? 'path' : 'query';
        const schema = { type: 'object', required: [parameter.name], properties: { [parameter.name]: inlined(parameter.schema, openapi) } };
        expect(() => compileValidator(part, schema)({ [parameter.name]: String(parameter.example) }), name).not.to.throw();
        parameters += 1;
      }
    }
    expect(bodies).to.be.greaterThan(10);
    expect(parameters).to.be.greaterThan(50);
  });

  it('names each shared schema once under components: the document is a fraction of its inline size and says the same', () => {
    const size = JSON.stringify(openapi).length;
    // Inline, the payment's node schema alone was written out dozens of times: 3.1 MB.
    expect(size, 'bytes of /openapi.json').to.be.below(1_000_000);
    for (const name of ['Payment', 'PaymentNode', 'CheckoutSession', 'Webhook', 'Error']) expect(openapi.components.schemas).to.have.property(name);
    let compared = 0;
    for (const route of service.routes) {
      const operation = openapi.paths[openApiPath(route.path)]![route.method]!;
      const where = `${route.method.toUpperCase()} ${route.path}`;
      if (route.schemas.body) {
        expect(withoutDescriptions(inlined(operation.requestBody!.content['application/json']!.schema, openapi)), `${where} body`)
          .to.deep.equal(withoutDescriptions(route.schemas.body));
        compared += 1;
      }
      for (const [status, response] of Object.entries(route.responses)) {
        const media = operation.responses[status]!.content?.[response.contentType ?? 'application/json'];
        if (response.schema === undefined || !media) continue;
        expect(withoutDescriptions(inlined(media.schema, openapi)), `${where} ${status}`)
          .to.deep.equal(withoutDescriptions(inlined(response.schema, openapi)));
        compared += 1;
      }
    }
    expect(compared).to.be.greaterThan(100);
  });

  it('every error response’s example has the status and category of its response', () => {
    const validateError = compileValidator('body', openapi.components.schemas.Error!);
    let examples = 0;
    for (const { method, path, operation } of [...operationsOf(openapi), ...operationsOf({ paths: openapi.webhooks ?? {} } as Document)]) {
      for (const [status, response] of Object.entries(operation.responses).map(([status, r]) => [status, resolved(r, openapi)] as const)) {
        const media = response.content?.['application/json'];
        if (Number(status) < 400 || !media || (media.schema as { $ref?: string }).$ref !== '#/components/schemas/Error') continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const example = media.example as { statusCode: number; error: string; message: string };
        expect(example, where).to.be.an('object');
        expect(example.statusCode, where).to.equal(Number(status));
        expect(CATEGORY_OF_STATUS[Number(status)], `${where}: a status with a known category`).to.be.an('array');
        expect(CATEGORY_OF_STATUS[Number(status)], where).to.include(example.error);
        expect(() => validateError(example), where).not.to.throw();
        examples += 1;
      }
    }
    expect(examples).to.be.greaterThan(300);
    // Every status the document answers with the error schema shows up, 400 to 500.
    const statuses = new Set(operationsOf(openapi).flatMap(({ operation }) => Object.keys(operation.responses)));
    for (const status of ['400', '401', '403', '404', '409', '413', '422', '429', '500']) expect(statuses, status).to.include(status);
  });

  it('serves /openapi.json gzipped when asked, with an ETag per encoding answered 304 when it matches', async () => {
    const get = (headers: Record<string, string>) => requestRaw(`${service.baseUrl}/openapi.json`, headers);
    const plain = await get({ 'accept-encoding': 'identity' });
    expect(plain.status).to.equal(200);
    expect(plain.headers['content-encoding']).to.equal(undefined);
    expect(JSON.parse(plain.body.toString('utf8'))).to.deep.equal(openapi);
    const zipped = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(zipped.status).to.equal(200);
    expect(zipped.headers['content-encoding']).to.equal('gzip');
    expect(zipped.headers.vary).to.match(/accept-encoding/i);
    expect(JSON.parse(gunzipSync(zipped.body).toString('utf8'))).to.deep.equal(openapi);
    expect(zipped.body.length, 'gzipped bytes').to.be.below(plain.body.length / 5);
    // q=0 refuses gzip.
    expect((await get({ 'accept-encoding': 'gzip;q=0, identity' })).headers['content-encoding']).to.equal(undefined);

    for (const [representation, encoding] of [[plain, 'identity'], [zipped, 'gzip']] as const) {
      const etag = representation.headers.etag as string;
      expect(etag, encoding).to.match(/^"[^"]+"$/);
      expect(representation.headers['cache-control']).to.equal('no-cache');
      const again = await get({ 'accept-encoding': encoding, 'if-none-match': etag });
      expect(again.status, encoding).to.equal(304);
      expect(again.body.length, encoding).to.equal(0);
      expect(again.headers.etag).to.equal(etag);
    }
    expect(plain.headers.etag).not.to.equal(zipped.headers.etag);
    expect((await get({ 'accept-encoding': 'gzip', 'if-none-match': plain.headers.etag as string })).status, 'another encoding’s tag').to.equal(200);
    expect((await get({ 'if-none-match': '"something-else"' })).status).to.equal(200);

    const bundle = await requestRaw(`${service.baseUrl}/docs/assets/swagger-ui-bundle.js`, { 'accept-encoding': 'gzip' });
    expect(bundle.headers['content-encoding']).to.equal('gzip');
    expect((await requestRaw(`${service.baseUrl}/docs/assets/swagger-ui-bundle.js`, { 'accept-encoding': 'gzip', 'if-none-match': bundle.headers.etag as string })).status)
      .to.equal(304);
  });

  it('serves the page with a strict Content-Security-Policy, no inline script, and its assets from the service', async () => {
    const page = await service.request('GET', '/docs', { unchecked: true });
    expect(page.status).to.equal(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).to.include("default-src 'none'");
    expect(csp).to.include("script-src 'self'");
    expect(csp).not.to.include('unsafe-inline');
    expect(csp).not.to.include('unsafe-eval');
    expect(page.text).not.to.match(/<script>(?!<\/script>)|<script(?![^>]*\bsrc=)[^>]*>/);
    const references = [...page.text.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(references.length).to.be.greaterThan(2);
    for (const reference of references) expect(reference, reference).to.match(/^\/(docs\/assets\/|openapi\.json$)/);

    for (const file of Object.keys(DOCS_ASSETS)) {
      const asset = await service.request('GET', `/docs/assets/${file}`, { unchecked: true });
      expect(asset.status, file).to.equal(200);
      expect(asset.headers.get('x-content-type-options'), file).to.equal('nosniff');
    }
    const unknown = await service.request('GET', '/docs/assets/..%2Fpackage.json', { unchecked: true });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.message).to.match(/path parameter file must be one of/);
  });

  const executablePath = installedChromium();
  const browserTitle = executablePath === null
    ? 'in headless Chromium — skipped: no `chromium` on PATH (Debian: apt-get install chromium; CI installs it)'
    : 'in headless Chromium, offline';
  (executablePath === null ? describe.skip : describe)(browserTitle, () => {
    let browser: Browser;

    before(async () => {
      browser = await chromium.launch({
        executablePath: executablePath!,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-extensions',
          '--disable-component-update', '--disable-default-apps', '--disable-sync', '--no-first-run', '--mute-audio'],
      });
    });

    after(async () => {
      await browser?.close();
    });

    /**
     * Milliseconds from the start of navigation (the page's own clock: performance.now()) until every operation is
     * listed, in a fresh context (no cache), polled at each animation frame.
     */
    async function operationsListedAfterMs(expected: number): Promise<number> {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${service.baseUrl}/docs`, { waitUntil: 'commit' });
        const listedAt = await page.waitForFunction((count) => {
          const { document } = globalThis as unknown as { document: { querySelectorAll(selector: string): { length: number } } };
          // Listed and usable: each operation's summary is there to be clicked.
          return document.querySelectorAll('.opblock').length === count
            && document.querySelectorAll('.opblock .opblock-summary-control').length === count ? performance.now() : false;
        }, expected, { polling: 'raf', timeout: 60_000 });
        return Math.round(await listedAt.jsonValue() as number);
      } finally {
        await context.close();
      }
    }

    it('lists every operation within 2 s of navigation (the page’s own clock; measured again once if the first is slower)', async function () {
      this.timeout(180_000);
      const expected = operationsOf(openapi).length + operationsOf({ paths: openapi.webhooks ?? {} } as Document).length;
      const measured = [await operationsListedAfterMs(expected)];
      // One slow measurement on a machine shared with other work is measured again; only two in a row fail.
      if (measured[0]! > DOCS_READY_MS) measured.push(await operationsListedAfterMs(expected));
      console.log(`      /docs: ${expected} operations listed after ${measured.join(' ms, then ')} ms`);
      expect(Math.min(...measured), 'ms until every operation is listed').to.be.at.most(DOCS_READY_MS);
    });

    it('lists every operation of the document and shows their example requests, loading nothing from elsewhere', async function () {
      this.timeout(180_000);
      const page = await browser.newPage();
      const origin = new URL(service.baseUrl).origin;
      const elsewhere: string[] = [];
      const problems: string[] = [];
      await page.route('**/*', async (route) => {
        const url = route.request().url();
        if (new URL(url).origin === origin) return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
      page.on('pageerror', (error) => problems.push(error.message));

      await page.goto(`${service.baseUrl}/docs`);
      const operations = operationsOf(openapi);
      // The webhooks the service sends are listed too, each as an operation named after its entry.
      const webhooks = operationsOf({ paths: openapi.webhooks ?? {} } as Document);
      const blocks = page.locator('.opblock');
      await until(async () => (await blocks.count()) === operations.length + webhooks.length, { what: 'every operation listed' });
      const listed = await blocks.evaluateAll((elements) => elements.map((block) =>
        `${block.querySelector('.opblock-summary-method')?.textContent?.toLowerCase()} ${block.querySelector('[data-path]')?.getAttribute('data-path')}`));
      expect(new Set(listed)).to.deep.equal(new Set([...operations, ...webhooks].map(({ method, path }) => `${method} ${path}`)));
      // The security schemes, which the page takes as written (docs.ts), give the Authorize button its three schemes.
      await page.locator('.btn.authorize').click();
      await until(async () => (await page.locator('.auth-container').count()) === 3, { what: 'the three security schemes offered' });
      await page.locator('.btn-done').first().click();

      // Opening an operation renders its parameters, body schema and responses, which takes a while on a busy
      // machine: two operations stand for the rest (the document-level test checks every operation's examples).
      for (const [method, path] of [['post', '/payments'], ['get', '/payments']] as const) {
        const { operation } = operations.find((o) => o.method === method && o.path === path)!;
        const block = blocks.filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
          .filter({ has: page.locator('.opblock-summary-method', { hasText: new RegExp(`^${method}$`, 'i') }) });
        await block.locator('.opblock-summary-control').click();
        const example = operation.requestBody?.content['application/json']?.example;
        if (example !== undefined) {
          const shown = await block.locator('.body-param__example').textContent();
          expect(JSON.parse(shown ?? 'null'), `${method} ${path}: example body`).to.deep.equal(example);
        }
        expect(operation.parameters.length).to.be.greaterThan(0);
        for (const parameter of operation.parameters.map((p) => resolved(p, openapi))) {
          const row = block.locator(`tr[data-param-name="${parameter.name}"][data-param-in="${parameter.in}"]`);
          expect(await row.textContent(), `${method} ${path}: example of ${parameter.in} ${parameter.name}`)
            .to.include(`Example : ${String(parameter.example)}`);
        }
      }
      expect(elsewhere, 'requests to anywhere but the service').to.deep.equal([]);
      expect(problems, 'errors in the page (a refused script or style shows here)').to.deep.equal([]);
      await page.close();
    });
  });
});
