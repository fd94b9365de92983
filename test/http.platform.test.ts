import { expect } from 'chai';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv } from 'ajv';
import type { Database } from '../src/db/database.ts';
import { defineRoute } from '../src/http/route.ts';
import { openApiPath } from '../src/http/openapi.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type Credentials, type TestService } from './support/testService.ts';

for (const target of databaseTargets()) {
  describe(`http platform: ${target.name}`, () => {
    let database: Database;
    let service: TestService;
    let client: Credentials;
    let crashes = 0;

    before(async () => {
      database = await target.open();
      service = await startTestService(database, {
        extraRoutes: [defineRoute({
          method: 'get', path: '/test/crash', operationId: 'crash', summary: 'fails on purpose', tags: ['Test'],
          access: 'public', schemas: {}, responses: {},
          async handler() {
            crashes++;
            throw new Error('boom: internal detail that must not leak');
          },
        })],
      });
      client = await service.createClient('Platform tests');
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    describe('OpenAPI', () => {
      it('/openapi.json is a valid OpenAPI 3.1 document', async () => {
        const response = await service.request('GET', '/openapi.json');
        expect(response.status).to.equal(200);
        expect(response.body.openapi).to.equal('3.1.0');
        await SwaggerParser.validate(structuredClone(response.body));
      });

      it('every request schema of every route is a valid JSON Schema (the service compiles them unchecked)', () => {
        const ajv = new Ajv({ strict: false });
        const invalid = service.routes.flatMap((route) => Object.entries(route.schemas)
          .filter(([, schema]) => schema !== undefined && !ajv.validateSchema(schema as object))
          .map(([part]) => `${route.method} ${route.path} ${part}: ${ajv.errorsText(ajv.errors)}`));
        expect(service.routes.length).to.be.greaterThan(5);
        expect(invalid).to.deep.equal([]);
      });

      it('documents every registered express route, and every documented operation is served', async () => {
        const document = (await service.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
        const documented = new Set(Object.entries(document.paths)
          .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`)));
        const registered = new Set(service.expressRoutes().filter((r) => r !== 'get /test/crash'));
        expect(registered.size).to.be.greaterThan(5);
        expect(new Set(service.routes.map((r) => `${r.method} ${openApiPath(r.path)}`))).to.deep.equal(registered);
        expect([...registered].filter((r) => !documented.has(r))).to.deep.equal([]);
        expect([...documented].filter((d) => !registered.has(d))).to.deep.equal([]);
        // Served: each documented operation reaches a handler (anything but the unknown-route 404).
        for (const entry of documented) {
          const [method, path] = entry.split(' ') as [string, string];
          const concrete = path.replace(/\{[^}]+\}/g, 'x');
          const response = await service.request(method.toUpperCase(), concrete, { unchecked: true });
          expect(response.body?.message ?? '', entry).not.to.match(/^no route for/);
        }
      });

      it('/docs renders the reference without any external resource', async () => {
        const response = await service.request('GET', '/docs', { unchecked: true });
        expect(response.status).to.equal(200);
        expect(response.headers.get('content-type')).to.match(/text\/html/);
        expect(response.text).to.include('/operator/clients');
        expect(response.text).not.to.match(/(src|href)=["']https?:/);
      });
    });

    describe('errors', () => {
      it('an unknown route is a 404 payload', async () => {
        const response = await service.request('GET', '/no/such/route');
        expect(response.status).to.equal(404);
        expect(response.body).to.deep.equal({ statusCode: 404, error: 'notFound', message: 'no route for GET /no/such/route' });
      });

      it('malformed JSON is a 400 payload', async () => {
        const response = await service.request('POST', '/operator/clients', {
          rawBody: '{"name": "x",', headers: { 'x-operator-key': 'test-operator-key-0123456789' } });
        expect(response.status).to.equal(400);
        expect(response.body.message).to.match(/not valid JSON/);
      });

      it('a body over the limit is a 413 payload', async () => {
        const response = await service.request('POST', '/operator/clients', {
          body: { name: 'x'.repeat(2_000_000) }, headers: { 'x-operator-key': 'test-operator-key-0123456789' } });
        expect(response.status).to.equal(413);
        expect(response.body.error).to.equal('invalidParam');
      });

      it('a crashing handler answers 500 serverError without a stack trace, and the process keeps serving', async () => {
        const response = await service.request('GET', '/test/crash', { unchecked: true });
        expect(response.status).to.equal(500);
        expect(response.body).to.deep.equal({
          statusCode: 500, error: 'serverError', message: 'the service failed to handle the request; it has been logged' });
        expect(response.text).not.to.match(/boom|at .*\.ts/);
        expect(crashes).to.equal(1);
        expect((await service.request('GET', '/health')).status).to.equal(200);
      });

      it('echoes a request id, or makes one', async () => {
        const given = await service.request('GET', '/health', { headers: { 'x-request-id': 'trace-123' } });
        expect(given.headers.get('x-request-id')).to.equal('trace-123');
        const made = await service.request('GET', '/health');
        expect(made.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
      });
    });

    describe('idempotency', () => {
      const create = (key: string | undefined, name: string) => service.request('POST', '/operator/clients', {
        body: { name }, headers: { 'x-operator-key': 'test-operator-key-0123456789', ...(key ? { 'idempotency-key': key } : {}) } });

      it('the same key and body twice: one effect, the same answer, marked as replayed', async () => {
        const before = await service.eventCount();
        const first = await create('create-1', 'Idempotent Ltd');
        const second = await create('create-1', 'Idempotent Ltd');
        expect(first.status).to.equal(201);
        expect(second.status).to.equal(201);
        // Credentials are shown once: the replay has everything but them, and they are not stored.
        const { clientSecret, apiKey, ...rest } = first.body;
        expect(second.body).to.deep.equal(rest);
        const stored = JSON.stringify((await database.query(`SELECT response_body FROM idempotency_keys WHERE key = 'create-1'`)).rows);
        expect(stored).to.include(rest.clientId);
        expect(stored).not.to.include(clientSecret);
        expect(stored).not.to.include(apiKey);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        expect(second.headers.get('idempotent-replayed')).to.equal('true');
        expect(await service.eventCount()).to.equal(before + 1);
      });

      it('the same key with another body is a 422 and changes nothing', async () => {
        await create('create-2', 'First Body');
        const before = await service.eventCount();
        const other = await create('create-2', 'Second Body');
        expect(other.status).to.equal(422);
        expect(other.body.message).to.match(/Idempotency-Key/);
        expect(await service.eventCount()).to.equal(before);
      });

      it('two concurrent requests with one key: exactly one effect', async () => {
        const before = await service.eventCount();
        const answers = await Promise.all(Array.from({ length: 6 }, () => create('create-3', 'Concurrent Co')));
        const statuses = answers.map((a) => a.status).sort();
        expect(statuses.filter((s) => s === 201).length).to.be.at.least(1);
        expect(statuses.every((s) => s === 201 || s === 409)).to.equal(true);
        const created = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.clientId));
        expect(created.size).to.equal(1);
        expect(await service.eventCount()).to.equal(before + 1);
      });

      it('a key is kept 24 hours; once expired it is purged and may be used afresh', async () => {
        await create('create-4', 'Kept Inc');
        const kept = await database.query<{ hours: number }>(
          `SELECT extract(epoch FROM expires_at - created_at) / 3600 AS hours FROM idempotency_keys WHERE key = 'create-4'`);
        expect(Math.round(Number(kept.rows[0]!.hours))).to.equal(24);
        await database.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'create-4'`);
        expect(await service.services.idempotency.purgeExpired()).to.be.at.least(1);
        const fresh = await create('create-4', 'Another Inc');
        expect(fresh.status).to.equal(201);
        expect(fresh.headers.get('idempotent-replayed')).to.equal(null);
      });

      it('the same key from two clients is two requests: keys are scoped per caller', async () => {
        const other = await service.createClient('Other caller');
        const [asFirst, asOther] = [await service.as(client), await service.as(other)];
        const make = (headers: Record<string, string>, name: string) => service.request('POST', '/identities', {
          headers: { ...headers, 'idempotency-key': 'shared-key' }, body: { type: 'USER', name } });
        const first = await make(asFirst, 'First Person');
        const second = await make(asOther, 'Second Person');
        expect([first.status, second.status]).to.deep.equal([201, 201]);
        expect(second.headers.get('idempotent-replayed')).to.equal(null);
        expect(second.body.id).not.to.equal(first.body.id);
        const replay = await make(asFirst, 'First Person');
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        expect(replay.body).to.deep.equal(first.body);
        expect((await make(asOther, 'Changed')).status).to.equal(422);
      });

      it('keys are scoped per caller, and a bad key is a 400', async () => {
        const headers = await service.as(client);
        const bad = await service.request('POST', '/auth', {
          body: { clientId: client.clientId, clientSecret: client.clientSecret },
          headers: { ...headers, 'idempotency-key': 'x'.repeat(300) } });
        expect(bad.status).to.equal(400);
        expect(bad.body.message).to.match(/Idempotency-Key/);
      });
    });

    describe('rate limit', () => {
      it('answers 429 tooManyRequests with Retry-After past the burst', async () => {
        const limited = await startTestService(database, { env: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' } });
        try {
          const headers = await limited.as(client);
          const statuses: number[] = [];
          let last;
          for (let i = 0; i < 6; i++) {
            last = await limited.request('GET', '/me', { headers });
            statuses.push(last.status);
          }
          expect(statuses).to.include(429);
          const limitedAnswer = (await limited.request('GET', '/me', { headers }));
          expect(limitedAnswer.status).to.equal(429);
          expect(limitedAnswer.body.error).to.equal('tooManyRequests');
          expect(Number(limitedAnswer.headers.get('retry-after'))).to.be.greaterThan(0);
        } finally {
          await limited.close();
        }
      });
    });

    describe('operations', () => {
      it('/ready is 200 when caught up; /metrics exposes latency, lag and append latency', async () => {
        expect((await service.request('GET', '/ready')).status).to.equal(200);
        await service.request('GET', '/health');
        const metrics = await service.request('GET', '/metrics', { unchecked: true });
        expect(metrics.status).to.equal(200);
        expect(metrics.text).to.match(/http_request_duration_seconds_bucket\{[^}]*route="\/health"/);
        expect(metrics.text).to.match(/projection_lag_events\{projection="clients"\} 0/);
        expect(metrics.text).to.include('eventstore_append_duration_seconds');
      });
    });
  });
}
