import { expect } from 'chai';
import fc from 'fast-check';
import type { Database } from '../src/db/database.ts';
import { providerSignature } from '../src/payments/routes.ts';
import { canonicalJson, requestFingerprint } from '../src/http/idempotency.ts';
import { ClientDirectory } from '../src/clients/directory.ts';
import { addressKey } from '../src/http/router.ts';
import { bodyShapeProblem } from '../src/http/jsonBody.ts';
import { verifySecret } from '../src/clients/credentials.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type Credentials, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';

const PROVIDER_SECRET = 'edge-provider-secret';

/** `{"a":{"a":…{}…}}`, `levels` objects deep. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

/** The same JSON value with every object's keys inserted in another (random) order. */
function reordered(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => reordered(item, random));
  if (typeof value !== 'object' || value === null) return value;
  const keys = Object.keys(value).sort(() => random() - 0.5);
  return Object.fromEntries(keys.map((key) => [key, reordered((value as Record<string, unknown>)[key], random)]));
}

describe('request fingerprint', () => {
  it('is the same for a body with its keys in any order, and canonical JSON says what JSON.stringify says', () => {
    fc.assert(fc.property(fc.jsonValue(), fc.integer(), (body, seed) => {
      let state = seed;
      const random = () => ((state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
      expect(requestFingerprint('POST', '/x', reordered(body, random))).to.equal(requestFingerprint('POST', '/x', body));
      expect(JSON.parse(canonicalJson(body))).to.deep.equal(JSON.parse(JSON.stringify(body))); // JSON's own -0 → 0
    }), { numRuns: 500 });
  });

  it('tells arrays in another order apart', () => {
    expect(requestFingerprint('POST', '/x', { a: [1, 2] })).not.to.equal(requestFingerprint('POST', '/x', { a: [2, 1] }));
  });
});

describe('body nesting, before parsing', () => {
  const deepest = (json: string, max: number) => {
    const problem = bodyShapeProblem(Buffer.from(json), max);
    return problem && 'tooDeep' in problem ? problem.tooDeep : null;
  };

  it('counts objects and arrays, not brackets inside strings or escaped quotes', () => {
    expect(deepest('{"a":[{"b":1}]}', 3)).to.equal(null);
    expect(deepest('{"a":[{"b":1}]}', 2)).to.equal('a');
    expect(deepest(`{"a":"${'['.repeat(50)}\\\"{{{{"}`, 1)).to.equal(null);
    expect(deepest('[[[1]]]', 2)).to.equal('');
  });

  it('names the top-level field under which the body nests too deep, even with an escaped key or after other fields', () => {
    expect(deepest('{"x":{"y":1},"r\\u00e9gles":[[[]]]}', 3)).to.equal('régles');
    expect(deepest('{"x":"[","rules":{"a":{"a":{}}}}', 3)).to.equal('rules');
  });
});

describe('repeated keys in a body, before parsing', () => {
  const repeated = (json: string) => {
    const problem = bodyShapeProblem(Buffer.from(json), 32);
    return problem && 'repeatedKey' in problem ? problem.repeatedKey : null;
  };

  it('names a key an object holds twice, at any depth, however the key is escaped', () => {
    expect(repeated('{"url":"https://a.example","url":"http://127.0.0.1"}')).to.equal('url');
    expect(repeated('{"a":1,"b":{"c":[1,{"d":2,"e":{"f":1,"f":2}}]}}')).to.equal('b.c[1].e.f');
    expect(repeated('[{"x":1},{"y":1,"y":2}]')).to.equal('[1].y');
    expect(repeated('{"url":1,"\\u0075rl":2}')).to.equal('url');
    expect(repeated('{"r\\u00e9gles":1,"régles":2}')).to.equal('régles');
    expect(repeated('{"k\\"":1,"k\\u0022":2}')).to.equal('k"');
  });

  it('takes the same key in sibling objects, in nested ones, as a value, and inside strings', () => {
    expect(repeated('{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}],"c":"a","d":["a","a"]}')).to.equal(null);
    expect(repeated('{"a":"{\\"a\\":1,\\"a\\":2}","b":"x,\\"a\\":"}')).to.equal(null);
    expect(repeated('{"a":{},"b":{},"c":[[],{}],"d":{"e":{}}}')).to.equal(null);
    expect(repeated('{"A":1,"a":2}')).to.equal(null);
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      expect(repeated(JSON.stringify(value))).to.equal(null);
    }), { numRuns: 500 });
  });
});

describe('per-address buckets', () => {
  it('an IPv4-mapped address is its IPv4 address; IPv6 addresses share a bucket per /64', () => {
    expect(addressKey('::ffff:192.0.2.7')).to.equal('192.0.2.7');
    expect(addressKey('192.0.2.7')).to.equal('192.0.2.7');
    expect(addressKey('2001:db8:0:1:aaaa::1')).to.equal(addressKey('2001:DB8::1:bbbb:0:0:2'));
    expect(addressKey('2001:db8:0:1::1')).to.equal('2001:db8:0:1::/64');
    expect(addressKey('2001:db8:0:2::1')).not.to.equal(addressKey('2001:db8:0:1::1'));
    expect(addressKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(addressKey(undefined)).to.equal('unknown');
  });
});

for (const target of databaseTargets()) {
  describe(`http edge: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let alice: Credentials;
    let asAlice: Record<string, string>;
    let identityId: string;
    let brlAccountNumber: string;
    let sequence = 0;

    const post = (path: string, body?: unknown, headers: Record<string, string> = asAlice) =>
      service.request('POST', path, { headers, body });
    const createPixPayment = async () => {
      const created = await post('/payments', {
        externalId: `edge-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: brlAccountNumber, totalAmount: '25.00',
        currency: 'BRL', origins: [{ type: 'PIX', pix: { key: 'payer@example.com' } }],
      });
      expect(created.status, created.text).to.equal(200);
      return created.body.id as string;
    };

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      alice = await service.createClient('Edge Shop');
      asAlice = await service.as(alice);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Edge Shop', country: 'BRA' })).body.id;
      brlAccountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'BRL' })).body.accountNumber;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    describe('input Postgres cannot store, dates that are no instant, unbounded nesting', () => {
      it('a NUL or an unpaired surrogate in a body field, a body key, a query or a path parameter is a 400 naming it, and changes nothing', async () => {
        const before = await service.eventCount();
        const refusals: Array<[Promise<{ status: number; body: any }>, RegExp]> = [
          [post('/identities', { type: 'USER', name: 'Ana\u0000' }), /body field name\b/],
          [post('/identities', { type: 'USER', name: 'Ana\ud800' }), /body field name\b/],
          [post('/identities', { type: 'USER', name: 'Ana', rules: { deep: { ['k\u0000']: 1 } } }), /body field rules\.deep\b/],
          [post('/identities', { type: 'USER', name: 'Ana', rules: { list: ['ok', '\udc00'] } }), /body field rules\.list\[1\]/],
          [service.request('GET', '/payments?accountNumber=%00', { headers: asAlice }), /query parameter accountNumber\b/],
          [service.request('GET', '/payments?%00=1', { headers: asAlice }), /query parameter/],
          [service.request('GET', '/payments/abc%00', { headers: asAlice }), /path parameter id\b/],
        ];
        for (const [answer, message] of refusals) {
          const response = await answer;
          expect(response.status, JSON.stringify(response.body)).to.equal(400);
          expect(response.body.error).to.equal('invalidParam');
          expect(response.body.message).to.match(message);
        }
        expect(await service.eventCount()).to.equal(before);
      });

      it('a body of another declared type is a 415 saying the body must be JSON (one without a type is read as JSON); a malformed path is a 400 naming it', async () => {
        const before = await service.eventCount();
        const send = (contentType: string | null) => fetch(`${service.baseUrl}/identities`, {
          method: 'POST', body: JSON.stringify({ type: 'USER', name: 'Ana' }),
          headers: { ...asAlice, ...(contentType === null ? {} : { 'content-type': contentType }) },
        });
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'text/plain; charset=utf-8', 'application/merge-patch+json']) {
          const refused = await send(type);
          expect(refused.status, type).to.equal(415);
          expect(((await refused.json()) as { message: string }).message).to.equal(`request body must be JSON, sent with Content-Type: application/json (it came as ${type.split(';')[0]})`);
        }
        expect(await service.eventCount()).to.equal(before);
        expect((await send('application/json; charset=utf-8')).status).to.equal(201);
        const malformed = await service.request('GET', '/payments/%E0%A4%A', { headers: asAlice });
        expect(malformed.status).to.equal(400);
        expect(malformed.body.message).to.match(/path/);
      });

      it('a date-time that is no real instant (a leap second) is a 400 naming the field', async () => {
        const response = await post('/payments', {
          externalId: 'leap-second', identityId, type: 'PURCHASE', accountNumber: brlAccountNumber, totalAmount: '25.00',
          currency: 'BRL', expiresAt: '2099-12-31T23:59:60Z',
        });
        expect(response.status, response.text).to.equal(400);
        expect(response.body.message).to.match(/body field expiresAt\b/);
        const valid = await post('/payments', {
          externalId: 'real-instant', identityId, type: 'PURCHASE', accountNumber: brlAccountNumber, totalAmount: '25.00',
          currency: 'BRL', expiresAt: '2099-12-31T23:59:59Z',
        });
        expect(valid.status, valid.text).to.equal(200);
      });

      it('free-form objects have bounded depth and keys, the whole body a bounded depth: 400 naming the field beyond', async () => {
        const before = await service.eventCount();
        // As raw text: JSON.stringify itself overflows the stack on 5,000 levels.
        const tooDeep = await service.request('POST', '/identities', {
          headers: asAlice, rawBody: `{"type":"USER","name":"Deep","rules":${'{"a":'.repeat(4_999)}{}${'}'.repeat(4_999)}}` });
        expect(tooDeep.status, tooDeep.text).to.equal(400);
        expect(tooDeep.body.message).to.match(/body field rules\b.*deeper/);
        const justTooDeep = await post('/identities', { type: 'USER', name: 'Deep', rules: nested(9) });
        expect(justTooDeep.status, justTooDeep.text).to.equal(400);
        expect(justTooDeep.body.message).to.match(/body field rules\b/);
        const manyKeys = await post('/identities', {
          type: 'USER', name: 'Wide', rules: Object.fromEntries(Array.from({ length: 10 }, (_, i) =>
            [`group${i}`, Object.fromEntries(Array.from({ length: 100 }, (_, j) => [`k${j}`, j]))])),
        });
        expect(manyKeys.status, manyKeys.text).to.equal(400);
        expect(manyKeys.body.message).to.match(/body field rules\b.*keys/);
        const deepBody = await post('/identities', { type: 'USER', name: 'Deep', zz: nested(100) });
        expect(deepBody.status, deepBody.text).to.equal(400);
        expect(deepBody.body.message).to.match(/body field zz nests deeper than/);
        expect(await service.eventCount()).to.equal(before);

        const within = await post('/identities', { type: 'USER', name: 'Within', rules: { ...nested(8), list: [1, [2, { b: 3 }]] } });
        expect(within.status, within.text).to.equal(201);
      });
      it('a key twice in one object of a body (at any depth) is a 400 naming it; a query parameter sent twice is a 400 saying it repeats', async () => {
        const before = await service.eventCount();
        const refusals: Array<[string, string, RegExp]> = [
          ['/webhooks', '{"url":"https://a.example/hook","url":"http://127.0.0.1/hook"}', /^body field url appears more than once in its object; send each key once$/],
          ['/identities', '{"type":"USER","name":"Ana","rules":{"tier":"gold","limits":[{"max":1,"max":2}]}}', /^body field rules\.limits\[0\]\.max appears more than once/],
          ['/identities', '{"type":"USER","name":"Ana","\\u006eame":"Bob"}', /^body field name appears more than once/],
        ];
        for (const [path, rawBody, message] of refusals) {
          const refused = await service.request('POST', path, { headers: asAlice, rawBody });
          expect(refused.status, `${rawBody}: ${refused.text}`).to.equal(400);
          expect(refused.body.error).to.equal('invalidParam');
          expect(refused.body.message).to.match(message);
        }
        expect(await service.eventCount()).to.equal(before);

        for (const query of ['limit=1&limit=2', 'limit=1&limit=1', 'status=SETTLED&limit=5&status=FAILED']) {
          const refused = await service.request('GET', `/payments?${query}`, { headers: asAlice });
          expect(refused.status, `${query}: ${refused.text}`).to.equal(400);
          expect(refused.body.error).to.equal('invalidParam');
          expect(refused.body.message).to.match(/^query parameter (limit|status) repeats: send it once$/);
        }
        expect((await service.request('GET', '/payments?limit=1&offset=0', { headers: asAlice })).status).to.equal(200);
      });

      it('every free-form object of a request schema carries its bounds (x-bounds), and the API document states them', async () => {
        const unbounded: string[] = [];
        const walk = (schema: any, where: string): void => {
          if (!schema || typeof schema !== 'object') return;
          const types = [schema.type].flat();
          const open = schema.additionalProperties === undefined || schema.additionalProperties === true;
          if (types.includes('object') && open && !schema['x-bounds']) unbounded.push(where);
          for (const [name, property] of Object.entries(schema.properties ?? {})) walk(property, `${where}.${name}`);
          if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, `${where}.*`);
          if (schema.items) walk(schema.items, `${where}[]`);
          for (const keyword of ['oneOf', 'anyOf', 'allOf']) for (const sub of schema[keyword] ?? []) walk(sub, where);
        };
        for (const route of service.routes) {
          for (const part of ['params', 'query', 'body'] as const) walk(route.schemas[part], `${route.method} ${route.path} ${part}`);
        }
        expect(unbounded).to.deep.equal([]);
        // The reference (Swagger UI) renders the OpenAPI document, whose schema descriptions state the bounds.
        const document = await service.request('GET', '/openapi.json', { unchecked: true });
        expect(document.text).to.include('nested at most 8 levels deep').and.to.include('500 keys in all');
      });
    });

    describe('Idempotency-Key', () => {
      it('a notification with a bad signature claims no key: the real one with the same key still receives the payment', async () => {
        const id = await createPixPayment();
        const notify = (signature: string) => service.request('POST', '/payments/received', {
          body: { transactionId: id, signature }, headers: { 'user-agent': 'provider', 'idempotency-key': `received-${id}` } });
        const forged = await notify(providerSignature('a guess', id));
        expect(forged.status).to.equal(401);
        const genuine = await notify(providerSignature(PROVIDER_SECRET, id));
        expect(genuine.status, genuine.text).to.equal(200);
        expect(genuine.body.status).to.equal('SETTLED');
        const replay = await notify(providerSignature(PROVIDER_SECRET, id));
        expect(replay.status).to.equal(200);
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        const scopes = await database.query<{ scope: string }>('SELECT scope FROM idempotency_keys WHERE key = $1', [`received-${id}`]);
        expect(scopes.rows.map((row) => row.scope)).to.deep.equal(['provider']);
      });

      it('the same body with its keys in another order is the same request; array order still matters', async () => {
        const make = (key: string, body: unknown) => post('/identities', body, { ...asAlice, 'idempotency-key': key });
        const first = await make('reordered-1', { type: 'USER', name: 'Ordered', country: 'CHL', rules: { a: 1, b: [1, 2] } });
        expect(first.status).to.equal(201);
        const reordered = await make('reordered-1', { rules: { b: [1, 2], a: 1 }, country: 'CHL', name: 'Ordered', type: 'USER' });
        expect(reordered.status, reordered.text).to.equal(201);
        expect(reordered.headers.get('idempotent-replayed')).to.equal('true');
        expect(reordered.body).to.deep.equal(first.body);
        const otherArray = await make('reordered-1', { type: 'USER', name: 'Ordered', country: 'CHL', rules: { a: 1, b: [2, 1] } });
        expect(otherArray.status).to.equal(422);
      });
    });

    describe('credentials', () => {
      it('spraying wrong secrets for a key id never makes the right key fail', async () => {
        const carol = await service.createClient('Carol');
        const [, keyId] = carol.apiKey.split('_');
        let refused = 0;
        const wrong = (i: number) => service.request('GET', '/me', {
          headers: { 'x-api-key': `pl_${keyId}_${String(i).padStart(32, 'W')}`, 'user-agent': 'sprayer', authorization: 'Bearer x.y' },
        }).then((response) => {
          expect(response.status).to.equal(401);
          refused++;
        });
        const spray = Promise.all(Array.from({ length: 60 }, (_, i) => wrong(i)));
        await until(() => refused >= 20, { what: 'twenty wrong secrets refused' });
        const right = await Promise.all(Array.from({ length: 3 }, () => service.request('POST', '/auth', {
          body: { clientId: carol.clientId, clientSecret: carol.clientSecret }, headers: { 'x-api-key': carol.apiKey } })));
        await spray;
        expect(right.map((response) => response.status)).to.deep.equal([200, 200, 200]);
        const me = await service.request('GET', '/me', {
          headers: { 'x-api-key': carol.apiKey, 'user-agent': 'tests', authorization: `Bearer ${right[0]!.body.accessToken}` } });
        expect(me.status).to.equal(200);
      });
      it('a refusal runs one verification with the same scrypt parameters whether the key id or client exists, is unknown or deleted', async () => {
        const dora = await service.createClient('Dora');
        const eve = await service.createClient('Eve');
        expect((await service.operator('DELETE', `/operator/clients/${eve.clientId}`)).status).to.equal(200);
        const verified: string[] = [];
        const directory = new ClientDirectory(service.services.reads.clients, async (secret, storedHash) => {
          verified.push(storedHash);
          return verifySecret(secret, storedHash);
        });
        /** scheme, N, r, p, and the lengths of salt and key: what a verification's cost depends on. */
        const cost = (storedHash: string) => storedHash.split('$').map((part, i) => (i < 4 ? part : part.length)).join('$');
        const doraRow = await directory.byId(dora.clientId);
        const refusals: Array<[string, () => Promise<unknown>]> = [
          ['a wrong secret for a known key id', () => directory.byApiKey(`pl_${dora.apiKey.split('_')[1]}_${'W'.repeat(32)}`)],
          ['an unknown key id', () => directory.byApiKey(`pl_${'0'.repeat(16)}_${'W'.repeat(32)}`)],
          ['the right key of a deleted client', () => directory.byApiKey(eve.apiKey)],
          ['a wrong client secret', () => directory.clientSecretMatches(dora.clientId, 'cs_wrong')],
          ['an unknown client id', () => directory.clientSecretMatches('no-such-client', dora.clientSecret)],
          ['a deleted client’s secret', () => directory.clientSecretMatches(eve.clientId, eve.clientSecret)],
        ];
        for (const [label, refuse] of refusals) {
          verified.length = 0;
          expect(await refuse(), label).to.be.oneOf([null, false]);
          expect(verified.map(cost), label).to.deep.equal([cost(doraRow!.api_key_hash)]);
        }
        expect(cost(doraRow!.secret_hash)).to.equal(cost(doraRow!.api_key_hash));
        verified.length = 0;
        expect((await directory.byApiKey(dora.apiKey))?.client_id).to.equal(dora.clientId);
        expect(await directory.clientSecretMatches(dora.clientId, dora.clientSecret)).to.equal(true);
        expect((await directory.byApiKey(dora.apiKey))?.client_id, 'verified once, then remembered').to.equal(dora.clientId);
        expect(verified).to.have.length(2);
      });
    });

    describe('per-address rate limit', () => {
      it('unauthenticated requests are limited per address (429 with Retry-After); a verified client is not', async () => {
        const limited = await startTestService(database, { env: { ADDRESS_RATE_LIMIT_PER_SECOND: '1', ADDRESS_RATE_LIMIT_BURST: '3' } });
        try {
          const headers = await service.as(alice);
          expect((await limited.request('GET', '/me', { headers })).status).to.equal(200);
          const exhaust = async () => {
            let last = await limited.request('GET', '/health');
            for (let i = 0; i < 10 && last.status !== 429; i++) last = await limited.request('GET', '/health');
            return last;
          };
          const last = await exhaust();
          expect(last.status).to.equal(429);
          expect(last.body.error).to.equal('tooManyRequests');
          expect(Number(last.headers.get('retry-after'))).to.be.greaterThan(0);
          // The bucket refills a token a second: on a slow machine one may come back between two requests, so
          // empty it again until a wrong key meets an empty bucket (bounded).
          const wrong = { ...headers, 'x-api-key': `${alice.apiKey.slice(0, -1)}${alice.apiKey.endsWith('Q') ? 'R' : 'Q'}` };
          let wrongKey = await limited.request('GET', '/me', { headers: wrong });
          for (let i = 0; i < 5 && wrongKey.status !== 429; i++) {
            expect(wrongKey.status).to.equal(401);
            await exhaust();
            wrongKey = await limited.request('GET', '/me', { headers: wrong });
          }
          expect(wrongKey.status).to.equal(429);
          expect((await limited.request('GET', '/me', { headers })).status).to.equal(200);
        } finally {
          await limited.close();
        }
      });
    });
  });
}
