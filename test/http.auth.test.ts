import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { TokenSigner } from '../src/clients/tokens.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type Credentials, type TestService } from './support/testService.ts';

for (const target of databaseTargets()) {
  describe(`http authentication: ${target.name}`, () => {
    let database: Database;
    let service: TestService;
    let alice: Credentials;
    let bob: Credentials;

    before(async () => {
      database = await target.open();
      service = await startTestService(database);
      alice = await service.createClient('Alice Shop');
      bob = await service.createClient('Bob Store');
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    const auth = (client: Credentials, overrides: { apiKey?: string; secret?: string; clientId?: string; ua?: string } = {}) =>
      service.request('POST', '/auth', {
        body: { clientId: overrides.clientId ?? client.clientId, clientSecret: overrides.secret ?? client.clientSecret },
        headers: { 'x-api-key': overrides.apiKey ?? client.apiKey, ...(overrides.ua ? { 'user-agent': overrides.ua } : {}) },
      });

    /** A client-authenticated call. */
    const clientCall = (headers: Record<string, string | undefined>) => service.request('GET', '/me', { headers });

    it('issues a bearer token for the right key, id and secret (User-Agent optional)', async () => {
      const response = await auth(alice);
      expect(response.status).to.equal(200);
      expect(response.body.tokenType).to.equal('Bearer');
      expect(response.body.expiresIn).to.equal(3600);
      expect(response.body.accessToken).to.be.a('string');
    });

    it('the operator route answers the credentials once; secrets are stored hashed', async () => {
      expect(alice.clientSecret).to.match(/^cs_/);
      expect(alice.apiKey).to.match(/^pl_[0-9a-f]{16}_/);
      const stored = JSON.stringify((await database.query('SELECT data FROM events WHERE stream = $1', [`client-${alice.clientId}`])).rows);
      expect(stored).not.to.include(alice.clientSecret);
      expect(stored).not.to.include(alice.apiKey.split('_')[2]);
      expect(stored).to.include('scrypt$');
    });

    for (const [label, overrides] of [
      ['a wrong secret', { secret: 'cs_wrong' }],
      ['an unknown client', { clientId: 'no-such-client' }],
      ['the API key of another client', { apiKey: 'BOB' }],
      ['a malformed API key', { apiKey: 'not-a-key' }],
    ] as Array<[string, { secret?: string; clientId?: string; apiKey?: string }]>) {
      it(`POST /auth with ${label} is 401`, async () => {
        const response = await auth(alice, { ...overrides, ...(overrides.apiKey === 'BOB' ? { apiKey: bob.apiKey } : {}) });
        expect(response.status).to.equal(401);
        expect(response.body).to.include({ statusCode: 401, error: 'unauthorized' });
      });
    }

    it('POST /auth without x-api-key is 401', async () => {
      const response = await service.request('POST', '/auth', { body: { clientId: alice.clientId, clientSecret: alice.clientSecret } });
      expect(response.status).to.equal(401);
      expect(response.body.message).to.match(/x-api-key/);
    });

    describe('client routes', () => {
      let headers: Record<string, string>;
      before(async () => { headers = await service.as(alice); });

      it('accept key + User-Agent + token of the same client', async () => {
        const response = await clientCall(headers);
        expect(response.status).to.equal(200);
        expect(response.body).to.deep.equal({ clientId: alice.clientId, name: 'Alice Shop' });
      });

      it('missing User-Agent is 400', async () => {
        const response = await clientCall({ ...headers, 'user-agent': '' });
        expect(response.status).to.equal(400);
        expect(response.body).to.include({ error: 'missingParam' });
        expect(response.body.message).to.match(/User-Agent/);
      });

      const cases: Array<[string, (h: Record<string, string>) => Record<string, string | undefined>]> = [
        ['a missing key', (h) => ({ ...h, 'x-api-key': undefined })],
        ['a missing token', (h) => ({ ...h, authorization: undefined })],
        ['another client’s API key', (h) => ({ ...h, 'x-api-key': bob.apiKey })],
        ['a tampered token', (h) => ({ ...h, authorization: h.authorization!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) })],
        ['a token with a forged payload', (h) => {
          const [, signature] = h.authorization!.slice(7).split('.');
          const forged = Buffer.from(JSON.stringify({ sub: bob.clientId, iat: 0, exp: 4_000_000_000, jti: 'x' })).toString('base64url');
          return { ...h, 'x-api-key': bob.apiKey, authorization: `Bearer ${forged}.${signature}` };
        }],
        ['a non-bearer scheme', (h) => ({ ...h, authorization: `Basic ${Buffer.from('a:b').toString('base64')}` })],
      ];
      for (const [label, change] of cases) {
        it(`${label} is 401`, async () => {
          const response = await clientCall(change(headers));
          expect(response.status).to.equal(401);
          expect(response.body).to.include({ statusCode: 401, error: 'unauthorized' });
        });
      }

      it('an expired token is 401', async () => {
        const key = (await database.query<{ value: Buffer }>(`SELECT value FROM service_secrets WHERE name = 'token_signing_key'`)).rows[0]!.value;
        const past = new TokenSigner(key, 60, () => new Date(Date.now() - 3_600_000));
        const genuine = past.issue(alice.clientId).accessToken;
        const response = await clientCall({ ...headers, authorization: `Bearer ${genuine}` });
        expect(response.status).to.equal(401);
        expect(response.body.message).to.match(/expired/);
      });

      it('a deleted client’s token, key and secret stop working at once', async () => {
        const carol = await service.createClient('Carol Closing');
        const carolHeaders = await service.as(carol);
        expect((await clientCall(carolHeaders)).status).to.equal(200);
        expect((await service.operator('DELETE', `/operator/clients/${carol.clientId}`)).status).to.equal(200);
        expect((await clientCall(carolHeaders)).status).to.equal(401);
        expect((await auth(carol)).status).to.equal(401);
        expect((await service.operator('DELETE', `/operator/clients/${carol.clientId}`)).status).to.equal(404);
      });
    });

    describe('operator routes', () => {
      it('need x-operator-key', async () => {
        const missing = await service.request('POST', '/operator/clients', { body: { name: 'X' } });
        expect(missing.status).to.equal(401);
        const wrong = await service.request('POST', '/operator/clients', { body: { name: 'X' }, headers: { 'x-operator-key': 'nope' } });
        expect(wrong.status).to.equal(401);
      });

      it('are closed (403) when OPERATOR_API_KEY is unset', async () => {
        const closed = await startTestService(database, { env: { OPERATOR_API_KEY: '' } });
        try {
          const response = await closed.request('POST', '/operator/clients', {
            body: { name: 'X' }, headers: { 'x-operator-key': 'anything' } });
          expect(response.status).to.equal(403);
          expect(response.body).to.include({ error: 'forbiddenOperation' });
        } finally {
          await closed.close();
        }
      });

      it('validate the body', async () => {
        const response = await service.operator('POST', '/operator/clients', { name: '' });
        expect(response.status).to.equal(400);
        expect(response.body.message).to.match(/name/);
        const extra = await service.operator('POST', '/operator/clients', { name: 'Ok', color: 'red' });
        expect(extra.status).to.equal(400);
        expect(extra.body.message).to.match(/color/);
      });
    });
  });
}
