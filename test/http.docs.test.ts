import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';
import type { Database } from '../src/db/database.ts';
import { DOCS_ASSETS } from '../src/http/docs.ts';
import { compileValidator } from '../src/http/validation.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';

interface Parameter { name: string; in: string; required: boolean; schema: object; example?: unknown }
interface Operation {
  operationId: string;
  parameters: Parameter[];
  requestBody?: { content: Record<string, { schema: object; example?: unknown }> };
}
type Document = { paths: Record<string, Record<string, Operation>>; webhooks?: Record<string, Record<string, Operation>> };

/** Every operation of the document with its method and path. */
function operationsOf(document: Document): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method, path, operation })));
}

/** Debian's Chromium, when installed; the browser test needs it (CI installs it, .ci/run). */
function installedChromium(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

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
        expect(() => compileValidator('body', media.schema)(structuredClone(media.example)), `${where}: body example`).not.to.throw();
        bodies += 1;
      }
      for (const parameter of operation.parameters) {
        const name = `${where}: ${parameter.in} parameter ${parameter.name}`;
        expect(parameter, name).to.have.property('example');
        // On the wire every parameter is a string; the router coerces it to the schema's type, as it does here.
        const part = parameter.in === 'path' ? 'path' : 'query';
        const schema = { type: 'object', required: [parameter.name], properties: { [parameter.name]: parameter.schema } };
        expect(() => compileValidator(part, schema)({ [parameter.name]: String(parameter.example) }), name).not.to.throw();
        parameters += 1;
      }
    }
    expect(bodies).to.be.greaterThan(10);
    expect(parameters).to.be.greaterThan(50);
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
      browser = await chromium.launch({ executablePath: executablePath!, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    });

    after(async () => {
      await browser?.close();
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
        for (const parameter of operation.parameters) {
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
