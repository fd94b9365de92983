import { expect } from 'chai';
import fc from 'fast-check';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { OPERATOR_KEY, startTestService, type TestService } from './support/testService.ts';

function parses(raw: string): boolean {
  try { JSON.parse(raw); return true; } catch { return false; }
}

/** Bodies that are wrong by construction: none of them may ever change anything. */
const badBody = fc.oneof(
  fc.record({ kind: fc.constant('malformed' as const), raw: fc.oneof(
    fc.constantFrom('{', '{"a":', '[1,2', '{"name": "x",}', 'nul', '{"a": undefined}', '\u0000'),
    // An opening brace and any text: malformed unless the text happens to close it ("{}" is a valid body to a
    // route whose fields are all optional), so what parses is left out.
    fc.string({ maxLength: 40 }).map((s) => `{${s}`).filter((raw) => !parses(raw)),
  ) }),
  fc.record({ kind: fc.constant('json' as const), value: fc.oneof(
    fc.integer(), fc.boolean(), fc.string({ maxLength: 20 }), fc.array(fc.jsonValue(), { maxLength: 3 }),
  ) }),
  fc.record({ kind: fc.constant('unknownField' as const), value: fc.dictionary(
    fc.string({ minLength: 1, maxLength: 12 }).map((k) => `zz_${k}`), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 }) }),
  fc.record({ kind: fc.constant('wrongTypes' as const), value: fc.record({
    name: fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }), fc.constant('')),
    clientId: fc.oneof(fc.integer(), fc.constant(null), fc.constant({})),
    clientSecret: fc.oneof(fc.integer(), fc.constant(''), fc.constant(false)),
  }, { requiredKeys: [] }).map((value) => ({ ...value, zz_extra: 1 })) }),
  fc.record({ kind: fc.constant('huge' as const), value: fc.integer({ min: 5_000, max: 300_000 }).map((n) => ({
    name: 'x'.repeat(n), zz_pad: 'y'.repeat(n) })) }),
);

const badQuery = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 10 }).filter((k) => /^[a-z]+$/i.test(k)).map((k) => `zz${k}`),
  fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String), fc.constant('-1'), fc.constant('%%')),
  { minKeys: 1, maxKeys: 3 });

const badPathValue = fc.oneof(
  fc.constantFrom('%20', '..%2F..', "'%3B--", 'a'.repeat(200), '%E2%82%AC', '%00'),
  // "." and ".." are dot segments: the client resolves them away, so they never reach the service as a value.
  fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent).filter((value) => value !== '.' && value !== '..'),
);

interface PropertySchema { type?: string | string[]; maxLength?: number; enum?: unknown[]; minimum?: number; maximum?: number }

/** Values that break one known field's schema: a wrong type, or a string just past its length. */
function breakingValues(schema: PropertySchema): unknown[] {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const values: unknown[] = [];
  if (!types.includes('string')) values.push('not-the-right-type');
  if (!types.includes('number') && !types.includes('integer')) values.push(12345);
  if (!types.includes('object')) values.push(types.includes('array') ? 7 : { nested: true });
  if (types.includes('string') && schema.maxLength) values.push('x'.repeat(schema.maxLength + 1));
  if (schema.enum) values.push('NOT_ONE_OF_THEM');
  return values;
}

/** Query values that break a known parameter: it arrives as text, so only content can be wrong. */
function breakingQueryValues(schema: PropertySchema): string[] {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const values: string[] = [];
  if (types.includes('integer')) values.push('abc', '1.5', String((schema.maximum ?? 1e9) + 1), String((schema.minimum ?? 0) - 1));
  if (schema.enum) values.push('NOT_ONE_OF_THEM');
  if (types.includes('string') && schema.maxLength) values.push('y'.repeat(schema.maxLength + 1));
  return values;
}

for (const target of databaseTargets()) {
  describe(`http fuzzing: ${target.name}`, () => {
    let database: Database;
    let service: TestService;
    let clientHeaders: Record<string, string>;

    before(async () => {
      database = await target.open();
      service = await startTestService(database);
      const client = await service.createClient('Fuzz target');
      clientHeaders = await service.as(client);
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('every route answers bad input with a 4xx error payload, never a 5xx, and appends nothing', async function () {
      this.timeout(180_000);
      const before = await service.eventCount();
      const headersFor = (access: string): Record<string, string> =>
        access === 'operator' ? { 'x-operator-key': OPERATOR_KEY, 'user-agent': 'fuzz' } : clientHeaders;
      for (const route of service.routes) {
        const hasPathParams = route.path.includes(':');
        await fc.assert(fc.asyncProperty(badBody, badQuery, badPathValue, fc.nat(2), async (body, query, pathValue, variant) => {
          // Each request carries one defect: a bad path value, a bad query (GET) or a bad body (the rest).
          const concrete = route.path.replace(/:[A-Za-z0-9_]+/g, 'id1');
          const headers = headersFor(route.access);
          let response;
          if (variant === 1 && hasPathParams) {
            response = await service.request(route.method.toUpperCase(), route.path.replace(/:[A-Za-z0-9_]+/g, pathValue), { headers });
          } else if (route.method === 'get') {
            response = await service.request('GET', `${concrete}?${new URLSearchParams(query).toString()}`, { headers });
          } else {
            response = await service.request(route.method.toUpperCase(), concrete, {
              headers, ...(body.kind === 'malformed' ? { rawBody: body.raw } : { body: body.value }) });
          }
          expect(response.status, `${route.method} ${route.path} → ${response.status} ${response.text.slice(0, 200)}`)
            .to.be.within(400, 499);
        }), { numRuns: target.name === 'pglite' ? 25 : 40 });
      }
      expect(await service.eventCount()).to.equal(before);
    });

    it('one known field or query parameter with a value its schema refuses is a 400, and appends nothing', async function () {
      this.timeout(180_000);
      const before = await service.eventCount();
      let checked = 0;
      for (const route of service.routes) {
        const headers = route.access === 'operator' ? { 'x-operator-key': OPERATOR_KEY, 'user-agent': 'fuzz' } : clientHeaders;
        const path = route.path.replace(/:[A-Za-z0-9_]+/g, 'id1');
        const bodyProperties = (route.schemas.body as { properties?: Record<string, PropertySchema> } | undefined)?.properties ?? {};
        for (const [field, schema] of Object.entries(bodyProperties)) {
          for (const value of breakingValues(schema)) {
            const response = await service.request(route.method.toUpperCase(), path, { headers, body: { [field]: value } });
            expect(response.status, `${route.method} ${route.path} body.${field}=${JSON.stringify(value).slice(0, 40)}`).to.equal(400);
            checked++;
          }
        }
        const queryProperties = (route.schemas.query as { properties?: Record<string, PropertySchema> } | undefined)?.properties ?? {};
        for (const [parameter, schema] of Object.entries(queryProperties)) {
          for (const value of breakingQueryValues(schema)) {
            const response = await service.request('GET', `${path}?${parameter}=${encodeURIComponent(value)}`, { headers });
            expect(response.status, `${route.method} ${route.path}?${parameter}=${value.slice(0, 40)}`).to.equal(400);
            expect(response.body.message, parameter).to.include(parameter);
            checked++;
          }
        }
      }
      expect(checked).to.be.greaterThan(20);
      expect(await service.eventCount()).to.equal(before);
    });
  });
}
