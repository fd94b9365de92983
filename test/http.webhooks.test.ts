/**
 * Webhooks end to end: endpoints registered over HTTP, the emitter deriving deliveries from the feed, a dispatcher
 * (with the test's clock) POSTing them to real node:http receivers, the delivery log and the events feed.
 */
import { expect } from 'chai';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { databaseTargets } from './support/targets.ts';
import type { TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { movableClock, providerReceipts, TEST_CARD } from './support/payments.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { payloadProblems, testDispatcher, verifySignatures } from './support/webhooks.ts';
import { until } from './support/until.ts';
import { expireDuePayments, runSettlementBatch } from '../src/payments/jobs.ts';
import type { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { DELIVERY_WINDOW_MS, retryDelayMs } from '../src/webhooks/outbox.ts';
import { signBody, signStandard, signTimestamped } from '../src/webhooks/signing.ts';
import { webhookEventTypes } from '../schemas/webhooks.ts';

const PROVIDER_SECRET = 'test-provider-secret';
const card = { ...TEST_CARD, cvv: '123' };

/**
 * `eventType@status` of each delivery a receiver got about one object, in sequence order (the events one domain
 * event gives share its sequence number; among them, the interface's order of types, which is the mapping's).
 */
function historyOf(receiver: Receiver, objectId: string): string[] {
  return receiver.received
    .filter((r) => (r.body.transaction?.id ?? r.body.customer?.id) === objectId)
    .sort((a, b) => Number(a.headers['x-webhook-sequence']) - Number(b.headers['x-webhook-sequence'])
      || webhookEventTypes.indexOf(a.body.eventType) - webhookEventTypes.indexOf(b.body.eventType))
    .map((r) => (r.body.transaction ? `${r.body.eventType}@${r.body.transaction.status}` : r.body.eventType));
}

for (const target of databaseTargets()) {
  describe(`webhooks: ${target.name}`, function () {
    this.timeout(120_000);
    let tenants: TwoTenants;
    let service: TestService;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let identityId: string;
    let usd: { id: string; accountNumber: string };
    const clock = movableClock();
    let sequence = 0;
    const dispatchers: WebhookDispatcher[] = [];
    const receivers: Receiver[] = [];
    const endpoints: Array<{ id: string; headers: Record<string, string> }> = [];

    const post = (path: string, body?: unknown, headers = asAlice) => service.request('POST', path, { headers, body });
    const get = (path: string, headers = asAlice) => service.request('GET', path, { headers });
    const pay = (body: Record<string, unknown>) => post('/payments', {
      externalId: `order-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: usd.accountNumber, currency: 'USD', ...body,
    });
    const received = providerReceipts(() => service, PROVIDER_SECRET);
    const receiver = async (...args: Parameters<typeof startReceiver>) => {
      const started = await startReceiver(...args);
      receivers.push(started);
      return started;
    };
    const dispatcher = (options: Parameters<typeof testDispatcher>[1] = {}) => {
      const made = testDispatcher(service.services, options);
      dispatchers.push(made);
      return made;
    };
    const register = async (body: Record<string, unknown>, headers = asAlice) => {
      const response = await post('/webhooks', body, headers);
      expect(response.status, response.text).to.equal(201);
      endpoints.push({ id: response.body.id, headers });
      return response.body as { id: string; secretKey: string };
    };
    const deliveriesOf = async (webhookId: string, query = '') => (await get(`/webhooks/${webhookId}/deliveries?limit=500${query}`)).body.results as any[];

    before(async () => {
      tenants = await startTwoTenants(target, { runtime: clock, env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET } });
      ({ service, asAlice, asBob } = tenants);
      identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'USA', email: 'shop@example.com' })).body.id;
      const account = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body;
      usd = { id: account.id, accountNumber: account.accountNumber };
    });
    afterEach(async () => {
      // Receivers first: a request a receiver holds ends when it closes, so a dispatcher stops without waiting for its timeout.
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
      // A test that failed before deleting its endpoints leaves none behind: they would be sent the next tests'
      // events (their receivers closed, so those deliveries stay due) and counted in the next tests' claims. One a
      // test deleted already answers 404, which is fine here.
      for (const { id, headers } of endpoints.splice(0)) await service.request('DELETE', `/webhooks/${id}`, { headers });
    });
    after(async () => {
      await tenants?.close();
    });

    it('registers endpoints: the secret is shown once, URLs are checked, another client’s webhook is 404', async () => {
      const created = await register({ url: 'https://hooks.example.com/a', events: ['payment.settled'], description: 'settlements' });
      expect(created.secretKey).to.match(/^whsec_/);
      const own = await register({ url: 'https://hooks.example.com/b', secretKey: 'my-own-secret-0123456789' });
      expect(own.secretKey).to.equal('my-own-secret-0123456789');
      // An idempotent replay answers the same webhook without its secret.
      const once = { url: 'https://hooks.example.com/c' };
      const first = await service.request('POST', '/webhooks', { headers: { ...asAlice, 'idempotency-key': 'webhook-c' }, body: once });
      const replay = await service.request('POST', '/webhooks', { headers: { ...asAlice, 'idempotency-key': 'webhook-c' }, body: once });
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(replay.body.id).to.equal(first.body.id);
      expect(first.body.secretKey).to.match(/^whsec_/);
      expect(replay.body).not.to.have.property('secretKey');
      await service.request('DELETE', `/webhooks/${first.body.id}`, { headers: asAlice });
      const read = await get(`/webhooks/${created.id}`);
      expect(read.body).to.include({ url: 'https://hooks.example.com/a', description: 'settlements', enabled: true });
      expect(read.body).not.to.have.property('secretKey');
      const list = await get('/webhooks');
      expect(list.body.results.map((w: { id: string }) => w.id)).to.include.members([created.id, own.id]);
      expect(JSON.stringify(list.body)).not.to.include('whsec_');
      // Stored sealed: neither the event log nor the read model holds it in the clear.
      const stored = await tenants.database.query(`SELECT data::text AS d FROM events WHERE stream = $1`, [`webhook-${own.id}`]);
      expect(stored.rows[0].d).not.to.include('my-own-secret');

      for (const [url, problem] of [
        ['ftp://hooks.example.com/x', 'http or https'], ['https://user:pw@hooks.example.com/x', 'credentials'],
        ['not a url', 'absolute URL'], ['https://hooks.example.com/x#frag', 'fragment'],
      ]) {
        const refused = await post('/webhooks', { url });
        expect(refused.status, url).to.equal(400);
        expect(refused.body.message).to.include(problem!);
      }

      const patched = await service.request('PATCH', `/webhooks/${created.id}`, { headers: asAlice, body: { events: null, enabled: false } });
      expect(patched.body).to.include({ events: null, enabled: false });
      const rotated = await post(`/webhooks/${created.id}/rotate-secret`, {});
      expect(rotated.status).to.equal(200);
      expect(rotated.body.secretKey).to.match(/^whsec_/).and.not.equal(created.secretKey);

      for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['GET', '/deliveries'], ['POST', '/test'], ['POST', '/rotate-secret']] as const) {
        const events = await service.eventCount();
        const answer = await service.request(method, `/webhooks/${created.id}${path}`, { headers: asBob, ...(method === 'PATCH' ? { body: { enabled: true } } : method === 'POST' ? { body: {} } : {}) });
        expect(answer.status, `${method} ${path}`).to.equal(404);
        expect(await service.eventCount()).to.equal(events);
      }
      expect((await service.request('DELETE', `/webhooks/${created.id}`, { headers: asAlice })).status).to.equal(200);
      expect((await get(`/webhooks/${created.id}`)).status).to.equal(404);
      await service.request('DELETE', `/webhooks/${own.id}`, { headers: asAlice });
    });

    it('refuses private and loopback URLs unless WEBHOOK_ALLOW_PRIVATE is on', async () => {
      const strict = await startTwoTenants(target, { env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
      try {
        for (const url of ['http://127.0.0.1:8080/x', 'http://localhost/x', 'http://10.1.2.3/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://2130706433/x',
          // IPv4 inside IPv6 (compatible, mapped, NAT64, 6to4, Teredo), other spellings of IPv4, a trailing dot.
          'http://[::127.0.0.1]:8080/x', 'http://[::ffff:127.0.0.1]/x', 'http://[64:ff9b::7f00:1]:8080/x', 'http://[64:ff9b::a9fe:a9fe]/latest',
          'http://[64:ff9b:1::a00:1]/x', 'http://[2002:7f00:1::]:8080/x', 'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/x',
          'http://0177.0.0.1/x', 'http://0x7f.1/x', 'http://localhost.:8080/x', 'http://100.64.0.1/x']) {
          const refused = await strict.service.request('POST', '/webhooks', { headers: strict.asAlice, body: { url } });
          expect(refused.status, url).to.equal(400);
          expect(refused.body.message).to.include('WEBHOOK_ALLOW_PRIVATE');
        }
        for (const url of ['https://93.184.215.14/x', 'https://[2002:5db8:d70e::1]/x', 'https://[64:ff9b::5db8:d70e]/x']) {
          const allowed = await strict.service.request('POST', '/webhooks', { headers: strict.asAlice, body: { url } });
          expect(allowed.status, url).to.equal(201);
        }
      } finally {
        await strict.close();
      }
    });

    it('a dispatcher that refuses private targets sends nothing to any form of a loopback address, whenever the URL was registered', async () => {
      const hooks = await receiver();
      const port = new URL(hooks.url).port;
      // Registered where private targets are allowed (as before the rule covered these forms); delivered by a
      // dispatcher that refuses them, which judges the URL again, and what a name resolves to when it connects.
      const urls = [`http://[::127.0.0.1]:${port}/hooks`, `http://[::ffff:127.0.0.1]:${port}/hooks`, `http://[64:ff9b::7f00:1]:${port}/hooks`,
        `http://[2002:7f00:1::]:${port}/hooks`, `http://localhost.:${port}/hooks`, `http://0x7f.1:${port}/hooks`, `http://127.0.0.1:${port}/hooks`];
      const ids: string[] = [];
      for (const url of urls) {
        const { id } = await register({ url });
        ids.push(id);
        expect((await post(`/webhooks/${id}/test`)).status).to.equal(202);
      }
      const run = dispatcher({ allowPrivate: false });
      expect(await run.runOnce()).to.equal(urls.length);
      for (const [index, id] of ids.entries()) {
        const [delivery] = await deliveriesOf(id);
        expect(delivery, urls[index]).to.include({ status: 'PENDING', attempts: 1, lastStatusCode: null });
        expect(delivery.attemptLog[0].error, urls[index]).to.match(/is (not a public address|a loopback host) \(.*WEBHOOK_ALLOW_PRIVATE is off\)$/);
      }
      expect(hooks.received).to.deep.equal([]);
      for (const id of ids) await service.request('DELETE', `/webhooks/${id}`, { headers: asAlice });
    });

    it('delivers every event of the lifecycles to a real receiver, signed, with the interface’s payloads', async () => {
      const hooks = await receiver();
      const { id: webhookId, secretKey } = await register({ url: hooks.url });
      const run = dispatcher();
      run.start();

      // A card payment's full lifecycle.
      const full = (await pay({ totalAmount: '100.00', origins: [{ type: 'CARD', card }] })).body.id as string;
      await post(`/payments/${full}/authorized`);
      await post(`/payments/${full}/captured`);
      await received(full);
      await runSettlementBatch(service.services);
      // Reviews: one approved, one rejected.
      const approved = (await pay({ totalAmount: '10.00', description: 'sandbox:review' })).body.id as string;
      const rejected = (await pay({ totalAmount: '10.00', description: 'sandbox:review' })).body.id as string;
      await post(`/payments/${approved}/documents`, { type: 'INVOICE', url: 'https://files.example.com/invoice.pdf' });
      expect((await service.operator('POST', `/operator/payments/${approved}/review`, { decision: 'APPROVED' })).status).to.equal(200);
      expect((await service.operator('POST', `/operator/payments/${rejected}/review`, { decision: 'REJECTED' })).status).to.equal(200);
      // An expiry.
      const expiring = (await pay({ totalAmount: '10.00', expiresAt: new Date(clock.now().getTime() + 60_000).toISOString() })).body.id as string;
      clock.advance(61_000);
      await expireDuePayments(service.services);
      // An unsettled payment (its account blocked when the funds arrive).
      const blocked = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'USD' })).body;
      const unsettled = (await post('/payments', {
        externalId: `order-${++sequence}`, identityId, type: 'PURCHASE', accountNumber: blocked.accountNumber, currency: 'USD', totalAmount: '20.00',
      })).body.id as string;
      await service.request('PATCH', `/accounts/${blocked.id}`, { headers: asAlice, body: { status: 'BLOCKED' } });
      expect((await received(unsettled)).body.status).to.equal('UNSETTLED');
      // A customer's first approved document.
      const customer = (await post('/customers', { documentNumber: `doc-${sequence}`, firstName: 'Ana', email: 'ana@example.com' })).body.id as string;
      const document = (await post(`/customers/${customer}/documents`, { type: 'ID_FRONT', url: 'https://files.example.com/id.png' })).body.id as string;
      expect((await service.operator('POST', `/operator/customers/${customer}/documents/${document}/decision`, { decision: 'APPROVED' })).status).to.equal(200);

      const expected: Record<string, string[]> = {
        [full]: ['transaction.status_changed@AUTHORIZED', 'transaction.status_changed@CAPTURED', 'transaction.status_changed@RECEIVED',
          'transaction.status_changed@SETTLED', 'payment.settled@SETTLED'],
        [approved]: ['transaction.status_changed@REQUIRES_REVIEW', 'payment.requiresReview@REQUIRES_REVIEW',
          'transaction.status_changed@CREATED', 'payment.reviewApproved@CREATED', 'payment.reviewResolved@CREATED'],
        [rejected]: ['transaction.status_changed@REQUIRES_REVIEW', 'payment.requiresReview@REQUIRES_REVIEW',
          'transaction.status_changed@FAILED', 'payment.reviewRejected@FAILED', 'payment.reviewResolved@FAILED'],
        [expiring]: ['transaction.status_changed@EXPIRED', 'payment.expired@EXPIRED'],
        [unsettled]: ['transaction.status_changed@RECEIVED', 'transaction.status_changed@UNSETTLED', 'payment.unsettled@UNSETTLED'],
        [customer]: ['customer.levelChanged'],
      };
      const total = Object.values(expected).reduce((n, list) => n + list.length, 0);
      await until(() => hooks.received.length >= total, { what: `${total} deliveries` });
      for (const [objectId, history] of Object.entries(expected)) {
        expect(historyOf(hooks, objectId), objectId).to.deep.equal(history);
      }
      expect(hooks.received).to.have.length(total);

      for (const request of hooks.received) {
        expect(payloadProblems(request.body), request.rawBody).to.deep.equal([]);
        expect(verifySignatures(secretKey, request.rawBody, request.headers), 'signatures').to.equal(true);
        expect(request.headers['x-webhook-event-type']).to.equal(request.body.eventType);
      }
      const settled = hooks.received.find((r) => r.body.eventType === 'payment.settled')!.body;
      expect(settled.transaction).to.include({ id: full, status: 'SETTLED', totalAmount: '100.00', currency: 'USD', type: 'PURCHASE',
        parentPaymentId: null, relatedPaymentId: null, unsettledAt: null });
      expect(settled.transaction.settledAt).to.be.a('string');
      expect(settled.transaction.settlementBatchId).to.be.a('string');
      expect(settled.identity).to.deep.equal({ id: identityId, email: 'shop@example.com' });
      const unsettledPayload = hooks.received.find((r) => r.body.eventType === 'payment.unsettled')!.body;
      expect(unsettledPayload.transaction).to.include({ unsettledReason: 'ACCOUNT_NOT_ACTIVE' });
      expect(hooks.received.find((r) => r.body.eventType === 'payment.reviewApproved')!.body.transaction.documentationStatus).to.equal('SUBMITTED');
      expect(hooks.received.find((r) => r.body.eventType === 'customer.levelChanged')!.body.customer).to.deep.equal({
        id: customer, clientId: tenants.alice.clientId, firstName: 'Ana', lastName: null, email: 'ana@example.com',
        documentNumber: `doc-${sequence}`, operationLevel: 'BASIC', autoCreated: false, documentsCount: 1,
      });

      // The delivery log shows each one delivered on its first attempt.
      await until(async () => (await deliveriesOf(webhookId, '&status=DELIVERED')).length === total, { what: 'deliveries recorded' });
      const log = await deliveriesOf(webhookId);
      expect(log.every((d) => d.attempts === 1 && d.attemptLog[0].statusCode === 200 && d.nextAttemptAt === null)).to.equal(true);

      // The events feed: the same payloads in feed order, page by page; Bob sees none of them.
      const feed: any[] = [];
      for (let cursor = ''; ;) {
        const page = await get(`/events?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).to.equal(200);
        feed.push(...page.body.results);
        cursor = page.body.next;
        if (!page.body.hasMore) break;
      }
      const delivered = new Map(hooks.received.map((r) => [r.headers['x-webhook-event-id'], r.rawBody]));
      expect(feed.filter((e) => delivered.has(e.id))).to.have.length(total);
      for (const event of feed.filter((e) => delivered.has(e.id))) expect(event.payload).to.deep.equal(JSON.parse(delivered.get(event.id)!));
      const positions = feed.filter((e) => e.payload.transaction?.id === full).map((e) => e.payload.transaction.status);
      expect(positions).to.deep.equal(['AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'SETTLED']);
      const onlySettled = await get('/events?type=payment.settled&limit=500');
      expect(onlySettled.body.results.every((e: any) => e.eventType === 'payment.settled')).to.equal(true);
      expect(onlySettled.body.results.map((e: any) => e.payload.transaction.id)).to.include(full);
      const bobs = await get('/events?limit=500', asBob);
      expect(bobs.status).to.equal(200);
      expect(bobs.body.results.filter((e: any) => delivered.has(e.id))).to.deep.equal([]);
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });

    it('refuses an events cursor beyond what the feed holds with a 400 naming cursor', async () => {
      for (const cursor of ['9223372036854775808-0-0', '99999999999999999999-1-1', '1-99999999999999999999-1', '1-9223372036854775808-1']) {
        const response = await get(`/events?cursor=${cursor}`);
        expect(response.status, `${cursor}: ${response.text}`).to.equal(400);
        expect(response.body.message, cursor).to.match(/cursor/);
      }
      const largest = await get('/events?cursor=9223372036854775807-9223372036854775807-0');
      expect(largest.status, largest.text).to.equal(200);
      expect(largest.body).to.deep.include({ results: [], hasMore: false, next: '9223372036854775807-9223372036854775807-0' });
    });

    it('signs so that node:crypto verifies the raw body, and a tampered body or timestamp fails; the webhooks guide’s test vector holds', async () => {
      const hooks = await receiver();
      const { id: webhookId, secretKey } = await register({ url: hooks.url });
      const ping = await post(`/webhooks/${webhookId}/test`);
      expect(ping.status).to.equal(202);
      await dispatcher().runOnce();
      await until(() => hooks.received.length === 1, { what: 'the ping' });
      const [request] = hooks.received;
      expect(payloadProblems(request!.body)).to.deep.equal([]);
      expect(request!.headers['x-webhook-id']).to.equal(ping.body.id);
      expect(verifySignatures(secretKey, request!.rawBody, request!.headers)).to.equal(true);
      expect(verifySignatures(secretKey, request!.rawBody.replace('webhook.test', 'webhook.tesT'), request!.headers)).to.equal(false);
      const later = { ...request!.headers, 'x-webhook-timestamp': String(Number(request!.headers['x-webhook-timestamp']) + 1) };
      expect(verifySignatures(secretKey, request!.rawBody, later)).to.equal(false);
      expect(verifySignatures('another-secret-0123456789', request!.rawBody, request!.headers)).to.equal(false);

      // The test vector in docs/webhooks.md, computed again here.
      const vector = {
        secret: 'test-vector-secret-0123', timestamp: 1767225600, id: '5f0c6a3e-8d3b-4f7e-9a51-2b8e4c1d7a90',
        body: '{"eventType":"webhook.test","timestamp":"2026-01-01T00:00:00.000Z","webhook":{"id":"wh_1"}}',
      };
      const guide = readFileSync(new URL('../docs/webhooks.md', import.meta.url), 'utf8');
      const bodySignature = createHmac('sha256', vector.secret).update(vector.body).digest('hex');
      const timestampedSignature = createHmac('sha256', vector.secret).update(`${vector.timestamp}.${vector.body}`).digest('hex');
      // A secret of one's own (no whsec_ prefix): the key of the Standard Webhooks signature is its own bytes.
      const standardSignature = new Webhook(vector.secret, { format: 'raw' }).sign(vector.id, new Date(vector.timestamp * 1000), vector.body);
      expect(signBody(vector.secret, vector.body)).to.equal(bodySignature);
      expect(signTimestamped(vector.secret, vector.timestamp, vector.body)).to.equal(timestampedSignature);
      expect(signStandard(vector.secret, vector.id, vector.timestamp, vector.body)).to.equal(standardSignature);
      for (const value of [vector.secret, String(vector.timestamp), vector.id, vector.body, bodySignature, timestampedSignature, standardSignature]) {
        expect(guide, `the webhooks guide's test vector has ${value}`).to.include(value);
      }
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });

    it('carries the Standard Webhooks headers: real deliveries verify with the standardwebhooks package, tampered ones do not', async () => {
      const generated = await receiver();
      const own = await receiver();
      const ownSecret = 'my-own-secret-0123456789';
      const withGenerated = await register({ url: generated.url });
      const withOwn = await register({ url: own.url, secretKey: ownSecret });
      expect(withGenerated.secretKey).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      // A whsec_ secret that is not the specification's base64 of 24 to 64 bytes would verify with no library: refused.
      for (const secretKey of ['whsec_not-base64-at-all-0123456789', `whsec_${Buffer.alloc(16).toString('base64')}`]) {
        const refused = await post('/webhooks', { url: own.url, secretKey });
        expect(refused.status, secretKey).to.equal(400);
        expect(refused.body.message).to.include('Standard Webhooks');
      }
      const run = dispatcher();
      run.start();
      const paid = (await pay({ totalAmount: '15.00' })).body.id as string;
      expect((await received(paid)).status).to.equal(200);
      for (const { id } of [withGenerated, withOwn]) expect((await post(`/webhooks/${id}/test`)).status).to.equal(202);
      const aboutPayment = (hooks: Receiver) => hooks.received.filter((r) => r.body.transaction?.id === paid);
      await until(() => [generated, own].every((hooks) => aboutPayment(hooks).length >= 1 && hooks.received.some((r) => r.body.eventType === 'webhook.test')),
        { what: 'the payment’s events and the ping at both endpoints' });

      const verifiers: Array<[Receiver, Webhook[]]> = [
        [generated, [new Webhook(withGenerated.secretKey)]],
        // A secret of one's own: its bytes are the key, raw or serialized as the specification says.
        [own, [new Webhook(ownSecret, { format: 'raw' }), new Webhook(`whsec_${Buffer.from(ownSecret).toString('base64')}`)]],
      ];
      for (const [hooks, webhooks] of verifiers) {
        for (const request of hooks.received) {
          const headers = request.headers as Record<string, string>;
          expect(headers['webhook-id']).to.equal(headers['x-webhook-id']).and.match(/^[0-9a-f-]{36}$/);
          expect(headers['webhook-timestamp']).to.equal(headers['x-webhook-timestamp']);
          expect(headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]{43}=$/);
          // Today's headers stay as they were.
          expect(verifySignatures(hooks === own ? ownSecret : withGenerated.secretKey, request.rawBody, headers)).to.equal(true);
          for (const webhook of webhooks) {
            expect(webhook.verify(request.rawBody, headers)).to.deep.equal(request.body);
            expect(() => webhook.verify(request.rawBody.replace('"eventType":"', '"eventType":" '), headers), 'a tampered body')
              .to.throw(WebhookVerificationError);
            const later = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) };
            expect(() => webhook.verify(request.rawBody, later), 'a tampered timestamp').to.throw(WebhookVerificationError);
            const otherId = { ...headers, 'webhook-id': randomUUID() };
            expect(() => webhook.verify(request.rawBody, otherId), 'another delivery’s id').to.throw(WebhookVerificationError);
          }
        }
      }
      // Each endpoint's key is its own: one endpoint's deliveries do not verify under the other's secret.
      const [foreign] = own.received;
      expect(() => new Webhook(withGenerated.secretKey).verify(foreign!.rawBody, foreign!.headers as Record<string, string>))
        .to.throw(WebhookVerificationError);
      for (const { id } of [withGenerated, withOwn]) await service.request('DELETE', `/webhooks/${id}`, { headers: asAlice });
    });

    it('retries a receiver answering 500 on the schedule, then delivers once; drops one still down past 24 hours', async () => {
      const flaky = await receiver((_request, index) => (index === 0 ? 500 : 200));
      const { id: flakyId } = await register({ url: flaky.url });
      // The dispatcher's own clock: a day passes for it, not for the service (whose tokens would expire).
      let ahead = 0;
      const time = { now: () => new Date(clock.now().getTime() + ahead), advance: (ms: number) => { ahead += ms; } };
      const run = dispatcher({ now: time.now });
      const delivery = (await post(`/webhooks/${flakyId}/test`)).body.id as string;
      expect(await run.runOnce()).to.equal(1);
      const [failed] = await deliveriesOf(flakyId);
      expect(failed).to.include({ id: delivery, status: 'PENDING', attempts: 1, lastStatusCode: 500 });
      expect(Date.parse(failed.nextAttemptAt) - Date.parse(failed.lastAttemptAt)).to.equal(30_000);
      expect(await run.runOnce(), 'nothing is due before its retry time').to.equal(0);
      time.advance(30_000);
      expect(await run.runOnce()).to.equal(1);
      const [done] = await deliveriesOf(flakyId);
      expect(done).to.include({ status: 'DELIVERED', attempts: 2, lastStatusCode: 200, nextAttemptAt: null });
      expect(done.attemptLog.map((a: any) => a.statusCode)).to.deep.equal([500, 200]);
      expect(flaky.received.map((r) => r.headers['x-webhook-id'])).to.deep.equal([delivery, delivery]);
      expect(await run.runOnce()).to.equal(0);

      // A receiver that is down: every attempt is refused, until 24 hours after the first; then dropped.
      const down = await receiver();
      const { id: downId } = await register({ url: down.url });
      await down.close();
      await post(`/webhooks/${downId}/test`);
      const delays: number[] = [];
      for (let attempt = 0; attempt < 100; attempt++) {
        expect(await run.runOnce()).to.equal(1);
        const [state] = await deliveriesOf(downId);
        if (state.status === 'DROPPED') break;
        delays.push(Date.parse(state.nextAttemptAt) - Date.parse(state.lastAttemptAt));
        time.advance(Date.parse(state.nextAttemptAt) - time.now().getTime());
      }
      const [dropped] = await deliveriesOf(downId, '&status=DROPPED');
      expect(dropped.status).to.equal('DROPPED');
      expect(delays.slice(0, 8)).to.deep.equal([30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000]);
      expect(delays.every((d, n) => d === retryDelayMs(n + 1))).to.equal(true);
      expect(Date.parse(dropped.droppedAt) - Date.parse(dropped.firstAttemptAt)).to.be.at.most(DELIVERY_WINDOW_MS);
      expect(dropped.attempts).to.equal(delays.length + 1);
      expect(dropped.attemptLog.every((a: any) => a.statusCode === null && a.error)).to.equal(true);

      // A dropped delivery can be sent again by hand.
      const retried = await post(`/webhooks/${downId}/deliveries/${dropped.id}/retry`);
      expect(retried.status).to.equal(202);
      expect(retried.body).to.include({ status: 'PENDING', droppedAt: null });
      // Deleting the endpoint drops what it still had pending.
      await service.request('DELETE', `/webhooks/${downId}`, { headers: asAlice });
      const left = await tenants.database.query('SELECT status, last_error FROM webhook_deliveries WHERE delivery_id = $1', [dropped.id]);
      expect(left.rows[0]).to.deep.equal({ status: 'DROPPED', last_error: 'the webhook was deleted' });
      await service.request('DELETE', `/webhooks/${flakyId}`, { headers: asAlice });
    });

    it('counts attempts by outcome and their duration, and measures the outbox, in /metrics', async () => {
      const flaky = await receiver((_request, index) => (index === 0 ? 503 : 200));
      const { id: webhookId } = await register({ url: flaky.url });
      const { metrics } = service.services;
      const run = dispatcher({ metrics: {
        attempted: (outcome, seconds) => metrics.observeWebhookAttempt(outcome, seconds),
        outbox: (pending, age) => metrics.setWebhookOutbox(pending, age),
      } });
      await post(`/webhooks/${webhookId}/test`);
      await run.runOnce();
      run.start();
      await post(`/webhooks/${webhookId}/deliveries/${(await deliveriesOf(webhookId))[0].id}/retry`);
      await until(async () => (await deliveriesOf(webhookId, '&status=DELIVERED')).length === 1, { what: 'the retried delivery' });
      const text = async () => (await service.request('GET', '/metrics', { unchecked: true })).text;
      expect(await text()).to.include('webhook_delivery_attempts_total{outcome="retrying"} 1')
        .and.include('webhook_delivery_attempts_total{outcome="delivered"} 1')
        .and.include('webhook_attempt_duration_seconds_count 2');
      await until(async () => /webhook_outbox_pending \d+/.test(await text()) && (await text()).includes('webhook_outbox_oldest_age_seconds'),
        { what: 'the outbox measured (every 5 s)' });
      await service.request('DELETE', `/webhooks/${webhookId}`, { headers: asAlice });
    });

    it('a receiver that hangs costs at most 10 s and holds back no other endpoint', async () => {
      const hanging = await receiver(() => 'hang');
      const healthy = await receiver();
      const { id: hangingId } = await register({ url: hanging.url });
      const { id: healthyId } = await register({ url: healthy.url });
      // One slot beyond the hanging endpoint's four: its older deliveries, still due, must not take it.
      const ended: string[] = [];
      const run = dispatcher({ maxConcurrent: 5, onAttempt: (claimed) => ended.push(claimed.endpointId) });
      run.start();
      // More pings to the hanging endpoint than it may hold at once (4), then one to the healthy one.
      for (let n = 0; n < 6; n++) await post(`/webhooks/${hangingId}/test`);
      await until(() => hanging.received.length === 4, { what: 'the hanging endpoint at its limit' });
      await post(`/webhooks/${healthyId}/test`);
      await until(() => healthy.received.length === 1, { what: 'the healthy endpoint served' });
      await until(() => ended.length > 0, { what: 'an attempt ended' });
      expect(ended[0], 'the first attempt to end: the healthy endpoint’s, before any hanging one timed out').to.equal(healthyId);
      await until(async () => (await deliveriesOf(hangingId)).filter((d) => d.attempts === 1).length >= 4,
        { what: 'hanging attempts ended by the timeout', timeoutMs: 30_000 });
      const timedOut = (await deliveriesOf(hangingId)).filter((d) => d.attempts === 1);
      for (const attempt of timedOut.map((d) => d.attemptLog[0])) {
        expect(attempt.statusCode).to.equal(null);
        expect(attempt.error).to.include('10000 ms');
      }
      expect(hanging.maxOpen, 'requests to one endpoint at once').to.equal(4);
      await service.request('DELETE', `/webhooks/${hangingId}`, { headers: asAlice });
      await service.request('DELETE', `/webhooks/${healthyId}`, { headers: asAlice });
    });
  });
}
