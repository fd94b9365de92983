/**
 * The typed client (clients/typescript/) against the running service, in-process over PGlite: a merchant's
 * walkthrough through it, its retries through a stub of the network in front of the service (a proxy's 503, a 409
 * with Retry-After, a refused token), webhook verification on real deliveries, and the committed generated types
 * being those the service's document gives.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import {
  createLedgerClient, LedgerApiError, MAX_ATTEMPTS, ok, verifyWebhook, WebhookVerificationError, type LedgerClient,
} from '../clients/typescript/src/index.ts';
import type { Database } from '../src/db/database.ts';
import { describeApi } from '../src/http/app.ts';
import type { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { GENERATED_TYPES_FILE, generatedClientTypes } from '../scripts/generateClient.ts';
import { startHttpStub, type HttpStub, type SeenRequest } from './support/httpStub.ts';
import { TEST_CARD } from './support/payments.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type Credentials, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';
import { startReceiver, type Receiver } from './support/webhookReceiver.ts';
import { testDispatcher } from './support/webhooks.ts';

describe('typed client (clients/typescript)', function () {
  this.timeout(120_000);
  let database: Database;
  let service: TestService;
  let credentials: Credentials;
  let stub: HttpStub;
  let ledger: LedgerClient;
  let identityId: string;
  let usd: { id: string; accountNumber: string };
  let sequence = 0;
  const dispatchers: WebhookDispatcher[] = [];
  const receivers: Receiver[] = [];

  /** A client of the same merchant that reaches the service through the stub. */
  const throughStub = () => createLedgerClient({ baseUrl: stub.url, ...credentials, userAgent: 'client-tests/1.0' });
  const sent = (method: string, path: string) => stub.seen.filter((r: SeenRequest) => r.method === method && r.path === path);

  before(async () => {
    database = await databaseTargets()[0]!.open();
    service = await startTestService(database, {
      schedule: true, env: { SANDBOX_AUTOPILOT: 'true', SETTLEMENT_CRON: '* * * * * *', EXPIRY_CRON: '* * * * * *' },
    });
    // As a merchant is provisioned: by the operator route.
    credentials = await service.createClient('Client library shop');
    stub = await startHttpStub(service.baseUrl);
    ledger = createLedgerClient({ baseUrl: service.baseUrl, ...credentials, userAgent: 'client-tests/1.0' });
    identityId = (await ok(ledger.POST('/identities', { body: { type: 'ORGANIZATION', name: 'Client Shop', country: 'USA', email: 'shop@example.com' } }))).id;
    const account = await ok(ledger.POST('/accounts', { body: { identityId, type: 'CHECKING', currency: 'USD' } }));
    usd = { id: account.id, accountNumber: account.accountNumber };
  });
  afterEach(async () => {
    stub.rule = () => undefined;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
  });
  after(async () => {
    await stub?.close();
    await service?.close();
    await database?.close();
  });

  it('the committed generated types are those of the service’s document (npm run client:generate writes them)', async () => {
    const committed = readFileSync(GENERATED_TYPES_FILE, 'utf8');
    expect(committed === await generatedClientTypes(), `${GENERATED_TYPES_FILE} is stale: run \`npm run client:generate\` and commit it`)
      .to.equal(true);
    // Built in-process without a service, the document is the one the service serves.
    expect(describeApi()).to.deep.equal(await (await fetch(`${service.baseUrl}/openapi.json`)).json());
  });

  it('walks a card payment through: authenticate, pay, SETTLED, refund, and a delivery verified with verifyWebhook', async () => {
    const hooks = await startReceiver();
    receivers.push(hooks);
    const webhook = await ok(ledger.POST('/webhooks', { body: { url: hooks.url } }));
    const dispatcher = testDispatcher(service.services);
    dispatchers.push(dispatcher);
    dispatcher.start();

    const payment = await ok(ledger.POST('/payments', { body: {
      externalId: `client-order-${++sequence}`, identityId, accountNumber: usd.accountNumber, totalAmount: '40.00', currency: 'USD',
      type: 'PURCHASE', origins: [{ type: 'CARD', card: { ...TEST_CARD, cvv: '123' } }],
    } }));
    expect(payment.status).to.equal('CREATED');
    await until(async () => (await ok(ledger.GET('/payments/{id}', { params: { path: { id: payment.id } } }))).status === 'SETTLED',
      { what: 'the card payment SETTLED', timeoutMs: 30_000, intervalMs: 100 });

    const refund = await ok(ledger.POST('/payments/{id}/refund', { params: { path: { id: payment.id } }, body: { amount: '15.00', reason: 'damaged' } }));
    expect(refund).to.include({ parentPaymentId: payment.id, totalAmount: '15.00', currency: 'USD' });
    const summary = await ok(ledger.GET('/payments/{id}/refunds', { params: { path: { id: payment.id } } }));
    expect(summary.maxRefundable).to.equal('25.00');

    // The deliveries about the payment, each verified; one of them tampered with is refused.
    const settledDelivery = () => hooks.received.find((r) => r.body.eventType === 'payment.settled' && r.body.transaction?.id === payment.id);
    await until(() => settledDelivery() !== undefined, { what: 'payment.settled delivered', timeoutMs: 30_000 });
    const delivery = settledDelivery()!;
    const payload = verifyWebhook(delivery.rawBody, delivery.headers, webhook.secretKey!);
    expect(payload).to.deep.equal(delivery.body);
    expect(payload.eventType).to.equal('payment.settled');
    // The Standard Webhooks library agrees on the same delivery.
    expect(new Webhook(webhook.secretKey!).verify(delivery.rawBody, delivery.headers as Record<string, string>)).to.deep.equal(delivery.body);
    const refused = (rawBody: string, headers: Record<string, unknown>, secret = webhook.secretKey!) =>
      expect(() => verifyWebhook(rawBody, headers as Record<string, string>, secret)).to.throw(WebhookVerificationError);
    refused(delivery.rawBody.replace('"40.00"', '"4000.00"'), delivery.headers);
    refused(delivery.rawBody, { ...delivery.headers, 'webhook-timestamp': String(Number(delivery.headers['webhook-timestamp']) + 1) });
    refused(delivery.rawBody, { ...delivery.headers, 'x-webhook-signature': '00'.repeat(32) });
    refused(delivery.rawBody, delivery.headers, 'another-secret-0123456789');
    // A delivery replayed later than the tolerance is refused though its signatures match.
    expect(() => verifyWebhook(delivery.rawBody, delivery.headers, webhook.secretKey!, { now: () => new Date(Date.now() + 600_000) }))
      .to.throw(WebhookVerificationError, /replayed/);
    // Only the interface's body signature, no timestamp: a replay cannot be told, so it is refused.
    const { 'x-webhook-signature': bodyOnly } = delivery.headers;
    refused(delivery.rawBody, { 'x-webhook-signature': bodyOnly });
    await ok(ledger.DELETE('/webhooks/{id}', { params: { path: { id: webhook.id } } }));
  });

  it('retries a 503 and a 409 with Retry-After with the same Idempotency-Key, and the call applies once', async () => {
    const client = throughStub();
    const refusedOnce = new Set<string>();
    stub.rule = (request) => {
      const once = `${request.method} ${request.path}`;
      if (request.method !== 'POST' || refusedOnce.has(once)) return undefined;
      refusedOnce.add(once);
      if (request.path === '/identities') {
        return { status: 503, headers: { 'retry-after': '1' }, body: { statusCode: 503, error: 'serviceUnavailable', message: 'proxy: upstream restarting' } };
      }
      if (request.path === '/customers') {
        return { status: 409, headers: { 'retry-after': '1' }, body: { statusCode: 409, error: 'alreadyExist', message: 'a request with this Idempotency-Key is still being processed' } };
      }
      return undefined;
    };
    const identity = await ok(client.POST('/identities', { body: { type: 'USER', name: `Retried ${++sequence}`, country: 'CHL' } }));
    const customer = await ok(client.POST('/customers', { body: { documentNumber: `retried-${sequence}`, firstName: 'Ana' } }));
    for (const [path, created] of [['/identities', identity.id], ['/customers', customer.id]] as const) {
      const attempts = sent('POST', path);
      expect(attempts, path).to.have.length(2);
      const [first, second] = attempts.map((r) => r.headers['idempotency-key']);
      expect(first, `${path}: a key on the first send`).to.match(/^[0-9a-f-]{36}$/);
      expect(second, `${path}: the same key on the retry`).to.equal(first);
      expect(created).to.be.a('string');
    }
    // Applied once: one identity of that name.
    const named = await ok(ledger.GET('/identities', { params: { query: { limit: 500 } } }));
    expect(named.results.filter((i: { name: string }) => i.name === `Retried ${sequence}`)).to.have.length(1);
    // Each call its own key.
    expect(sent('POST', '/identities')[0]!.headers['idempotency-key']).not.to.equal(sent('POST', '/customers')[0]!.headers['idempotency-key']);
  });

  it('stops after MAX_ATTEMPTS sends with the answer as a typed error; a 409 without Retry-After is not retried', async () => {
    const client = throughStub();
    stub.seen.length = 0;
    stub.rule = (request) => (request.path === '/me'
      ? { status: 503, headers: { 'retry-after': '0' }, body: { statusCode: 503, error: 'serviceUnavailable', message: 'down' } } : undefined);
    const down = await ok(client.GET('/me')).then(() => null, (error: unknown) => error);
    expect(down).to.be.instanceOf(LedgerApiError);
    expect(down).to.include({ statusCode: 503, error: 'serviceUnavailable', message: 'down', retryAfterSeconds: 0 });
    expect(sent('GET', '/me')).to.have.length(MAX_ATTEMPTS);

    stub.rule = () => undefined;
    const body = { externalId: `client-order-${++sequence}`, identityId, accountNumber: usd.accountNumber, totalAmount: '5.00', currency: 'USD', type: 'PURCHASE' } as const;
    await ok(client.POST('/payments', { body }));
    const again = await ok(client.POST('/payments', { body })).then(() => null, (error: unknown) => error);
    expect(again).to.be.instanceOf(LedgerApiError);
    expect(again).to.include({ statusCode: 409, error: 'alreadyExist', retryAfterSeconds: null });
    expect(sent('POST', '/payments')).to.have.length(2);
  });

  it('authenticates once for concurrent calls, renews the token before it expires, and once more on a 401', async () => {
    const client = throughStub();
    stub.seen.length = 0;
    await Promise.all([ok(client.GET('/me')), ok(client.GET('/me')), ok(client.GET('/me'))]);
    expect(sent('POST', '/auth')).to.have.length(1);
    expect(sent('POST', '/auth')[0]!.headers).not.to.have.property('idempotency-key');

    // A token refused (as if revoked): the client authenticates again and sends the call once more.
    let refusals = 0;
    stub.rule = (request) => (request.path === '/me' && refusals++ === 0
      ? { status: 401, body: { statusCode: 401, error: 'unauthorized', message: 'authentication failed' } } : undefined);
    expect((await ok(client.GET('/me'))).clientId).to.equal(credentials.clientId);
    expect(sent('POST', '/auth')).to.have.length(2);

    // A token that lives 2 s is renewed halfway through its life, before the service would refuse it.
    stub.rule = async (request, forward) => {
      if (request.path !== '/auth') return undefined;
      const answer = await forward();
      return { ...answer, body: { ...(answer.body as object), expiresIn: 2 } };
    };
    const shortLived = throughStub();
    stub.seen.length = 0;
    await ok(shortLived.GET('/me'));
    await until(async () => {
      await ok(shortLived.GET('/me'));
      return sent('POST', '/auth').length >= 2;
    }, { what: 'the token renewed', timeoutMs: 10_000, intervalMs: 200 });
    expect(stub.seen.filter((r) => r.path === '/me').every((r) => r.headers.authorization?.startsWith('Bearer '))).to.equal(true);
  });
});
