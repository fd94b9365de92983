/**
 * The pure parts of webhooks, without a database: the endpoint's decider (given/when/then), the URL rule, the
 * mapping from domain events to payloads, the retry schedule, sealed secrets and signatures.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { webhookDecider, type WebhookCommand as TenantCommand } from '../src/webhooks/decider.ts';
import type { WebhookEvent } from '../src/webhooks/events.ts';
import { isNonPublicAddress, webhookUrlProblem } from '../src/webhooks/url.ts';
import { publicOnlyLookup } from '../src/webhooks/dispatcher.ts';
import { transactionPayload, type PaymentFacts } from '../projections/webhookMappings.ts';
import { registered as service } from '../src/contexts.ts';
import { DELIVERY_WINDOW_MS, retryDelayMs } from '../src/webhooks/outbox.ts';
import { SecretBox } from '../src/webhooks/secrets.ts';
import { deliveryHeaders } from '../src/webhooks/signing.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { StoredEventData, StoredEventType } from '../src/storedEvents/registry.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';
import { payloadProblems } from './support/webhooks.ts';
import { ConfigError, loadConfig } from '../src/config.ts';

type WebhookCommand = AsOwner<TenantCommand>;

const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();
const secret = { keyId: 'env', sealed: 'c2VhbGVk' };
const endpoint = { endpointId: 'w1', clientId: 'c1', url: 'https://hooks.example.com/a', events: null, description: null, secret };
const registered: WebhookEvent = { type: 'WebhookEndpointRegistered', data: { ...endpoint, registeredAt: at } };
const deleted: WebhookEvent = { type: 'WebhookEndpointDeleted', data: { endpointId: 'w1', deletedAt: at } };

const { given } = DeciderSpecification.for(webhookDecider, asOwner<TenantCommand>);

describe('webhook endpoint decider', () => {
  it('registers once, with a URL that passes the rule', () => {
    given([]).when({ type: 'RegisterEndpoint', endpoint, allowPrivate: false, now }).then([registered]);
    given([registered]).when({ type: 'RegisterEndpoint', endpoint, allowPrivate: false, now }).thenThrows('alreadyExists', /already exists/);
    given([]).when({ type: 'RegisterEndpoint', endpoint: { ...endpoint, url: 'http://127.0.0.1/x' }, allowPrivate: false, now }).thenThrows('invalid', /not a public address/);
    expect(given([]).when({ type: 'RegisterEndpoint', endpoint: { ...endpoint, url: 'http://127.0.0.1/x' }, allowPrivate: true, now }).decided()).to.have.length(1);
  });

  it('records only what a change changes, and checks a new URL', () => {
    given([registered]).when({ type: 'UpdateEndpoint', changes: { url: endpoint.url, events: null, enabled: true }, allowPrivate: false, now }).then([]);
    given([registered]).when({ type: 'UpdateEndpoint', changes: { events: ['payment.settled'], enabled: false }, allowPrivate: false, now }).then([
      { type: 'WebhookEndpointUpdated', data: { endpointId: 'w1', changes: { events: ['payment.settled'], enabled: false }, updatedAt: at } },
    ]);
    const narrowed: WebhookEvent = { type: 'WebhookEndpointUpdated', data: { endpointId: 'w1', changes: { events: ['payment.settled'] }, updatedAt: at } };
    given([registered, narrowed]).when({ type: 'UpdateEndpoint', changes: { events: ['payment.settled'] }, allowPrivate: false, now }).then([]);
    given([registered]).when({ type: 'UpdateEndpoint', changes: { url: 'https://u:p@hooks.example.com/' }, allowPrivate: false, now }).thenThrows('invalid', /credentials/);
  });

  it('answers another client’s endpoint, and a deleted one, as not found', () => {
    const commands: WebhookCommand[] = [
      { type: 'UpdateEndpoint', changes: { enabled: false }, allowPrivate: false, now }, { type: 'RotateSecret', secret, now },
      { type: 'DeleteEndpoint', now },
    ];
    for (const command of commands) {
      given([registered]).when({ ...command, tenant: OTHER_CLIENT }).thenThrows('notFound', /^webhook not found$/);
      given([registered, deleted]).when(command).thenThrows('notFound', /^webhook not found$/);
      given([]).when(command).thenThrows('notFound', /^webhook not found$/);
    }
    given([registered]).when({ type: 'RotateSecret', secret, now }).then([
      { type: 'WebhookSecretRotated', data: { endpointId: 'w1', secret, rotatedAt: at } }]);
  });
});

describe('webhook URL rule', () => {
  it('takes http and https without credentials or fragment', () => {
    expect(webhookUrlProblem('https://hooks.example.com/a?b=1', false)).to.equal(null);
    expect(webhookUrlProblem('http://hooks.example.com:8080/a', false)).to.equal(null);
    expect(webhookUrlProblem('file:///etc/passwd', true)).to.include('http or https');
    expect(webhookUrlProblem('https://user@hooks.example.com/', true)).to.include('credentials');
    expect(webhookUrlProblem(`https://hooks.example.com/${'a'.repeat(2_048)}`, true)).to.include('2048');
  });

  it('refuses every non-public address, however it is written, unless allowed', () => {
    for (const url of ['http://127.0.0.1/', 'http://127.1/', 'http://0x7f000001/', 'http://2130706433/', 'http://[::1]/', 'http://[::ffff:10.0.0.1]/',
      'http://10.0.0.1/', 'http://172.16.5.4/', 'http://192.168.1.1/', 'http://169.254.169.254/', 'http://[fd00::1]/', 'http://[fe80::1]/',
      'http://0.0.0.0/', 'http://localhost:3000/', 'http://api.localhost/']) {
      expect(webhookUrlProblem(url, false), url).to.include('WEBHOOK_ALLOW_PRIVATE');
      expect(webhookUrlProblem(url, true), url).to.equal(null);
    }
    expect(isNonPublicAddress('8.8.8.8')).to.equal(false);
    expect(isNonPublicAddress('2606:4700::1111')).to.equal(false);
  });

  it('refuses IPv6 forms that carry a non-public IPv4 address, other IPv4 spellings, and trailing dots', () => {
    const refused = {
      'IPv4-compatible': ['http://[::127.0.0.1]:8080/', 'http://[::7f00:1]/', 'http://[::10.0.0.1]/', 'http://[::a9fe:a9fe]/'],
      'IPv4-mapped': ['http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[::ffff:169.254.169.254]/', 'http://[::ffff:0:10.1.2.3]/'],
      'NAT64': ['http://[64:ff9b::7f00:1]:8080/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[64:ff9b::192.168.0.1]/', 'http://[64:ff9b:1::a00:1]/',
        'http://[64:ff9b:1::5db8:d70e]/'],
      '6to4': ['http://[2002:7f00:1::]:8080/', 'http://[2002:a9fe:a9fe::1]/', 'http://[2002:0a00:0001::]/', 'http://[2002:c0a8:0101::1]/'],
      // Teredo: 2001:0:<server>:<flags>:<port>:<client, inverted>; a private client (10.0.0.1) or a private server.
      'Teredo': ['http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', 'http://[2001:0:a00:1:8000:63bf:a247:2af1]/'],
      'spelled otherwise': ['http://2130706433/', 'http://0177.0.0.1/', 'http://0x7f.1/', 'http://127.0.0.1./', 'http://0/', 'http://0x0a.0x01.0x02.0x03/',
        'http://017700000001/', 'http://[0:0:0:0:0:ffff:7f00:1]/'],
      'trailing dots': ['http://localhost./', 'http://localhost../', 'http://LOCALHOST./', 'http://api.localhost./'],
      'other blocks': ['http://100.64.0.1/', 'http://224.0.0.1/', 'http://255.255.255.255/', 'http://240.0.0.1/', 'http://192.0.2.1/',
        'http://198.18.0.1/', 'http://[::]/', 'http://[ff02::1]/', 'http://[2001:db8::1]/', 'http://[fec0::1]/', 'http://[100::1]/'],
    };
    for (const [form, urls] of Object.entries(refused)) {
      for (const url of urls) {
        expect(webhookUrlProblem(url, false), `${form}: ${url}`).to.match(/^url: .*WEBHOOK_ALLOW_PRIVATE is off/);
        expect(webhookUrlProblem(url, true), `${form}: ${url}`).to.equal(null);
      }
    }
    expect(webhookUrlProblem('http://[64:ff9b::a9fe:a9fe]/', false)).to.include('linkLocal IPv4 address 169.254.169.254');
    expect(webhookUrlProblem('http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', false)).to.include('private IPv4 address 10.0.0.1');
    // The same schemes around a public IPv4 address (93.184.215.14) reach a public host.
    for (const url of ['http://[64:ff9b::5db8:d70e]/', 'http://[2002:5db8:d70e::1]/', 'http://[::ffff:93.184.215.14]/',
      'http://[2001:0:4136:e378:8000:63bf:a247:2af1]/', 'http://93.184.215.14./', 'http://hooks.example.com./']) {
      expect(webhookUrlProblem(url, false), url).to.equal(null);
    }
    for (const address of ['::127.0.0.1', '::ffff:127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::', 'fe80::1%eth0', '0x7f.1', '2130706433']) {
      expect(isNonPublicAddress(address), address).to.equal(true);
    }
  });

  it('refuses at connection time a host name that resolves to a non-public address', async () => {
    const resolved = await new Promise<{ error: Error | null; address: unknown }>((resolve) => {
      publicOnlyLookup('localhost', { all: true }, (error, address) => resolve({ error, address }));
    });
    expect(resolved.error?.message).to.match(/^localhost resolves to (127\.0\.0\.1|::1), not a public address \(loopback address; WEBHOOK_ALLOW_PRIVATE is off\)$/);
  });
});

describe('webhook retry schedule', () => {
  it('waits 30 s, doubling up to 1 h, and drops within 24 h of the first attempt', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 30].map(retryDelayMs)).to.deep.equal(
      [30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000]);
    let elapsed = 0;
    let attempts = 1;
    while (elapsed + retryDelayMs(attempts) <= DELIVERY_WINDOW_MS) elapsed += retryDelayMs(attempts++);
    expect(attempts).to.equal(30);
  });
});

describe('webhook mapping', () => {
  // Only the fields the mapping reads are given: the rest of each type's data is left out.
  const recorded = <K extends StoredEventType>(type: K, data: Partial<StoredEventData[K]>, revision: number) => ({
    id: `00000000-0000-4000-8000-00000000000${revision}`, stream: 'payment-p1', revision: BigInt(revision), position: { commit: 1n, prepare: BigInt(revision) },
    type, schemaVersion: 1, data, metadata: {}, recordedAt: now,
  }) as RecordedEvent<K, StoredEventData[K]>;
  const created = recorded('PaymentCreated', {
    paymentId: 'p1', clientId: 'c1', externalId: 'order-1', identityId: 'i1', identityEmail: 'shop@example.com', totalAmount: '10.00',
    currency: 'USD', type: 'PURCHASE', customerId: null, createdAt: at,
  }, 0);

  it('follows a payment from creation: a status change gives transaction.status_changed, then the specific events, with the same bytes every time', () => {
    const { facts } = service.webhookMappings.PaymentCreated!(created, null);
    expect(facts).to.include({ status: 'CREATED', identityEmail: 'shop@example.com' });
    const settled = recorded('PaymentSettled', { paymentId: 'p1', from: 'RECEIVED', to: 'SETTLED', at, settlementBatchId: 'b1' }, 2);
    const first = service.webhookMappings.PaymentSettled!(settled, facts!);
    expect(first.emissions.map((e) => e.eventType)).to.deep.equal(['transaction.status_changed', 'payment.settled']);
    expect(first.emissions.map((e) => e.sequence)).to.deep.equal([3, 3]);
    expect(first.facts).to.include({ status: 'SETTLED', settledAt: at, settlementBatchId: 'b1' });
    for (const emission of first.emissions) expect(payloadProblems(JSON.parse(emission.body))).to.deep.equal([]);
    expect(service.webhookMappings.PaymentSettled!(settled, facts!)).to.deep.equal(first);
    expect(() => service.webhookMappings.PaymentSettled!(settled, null)).to.throw(/before its PaymentCreated/);
  });

  it('writes the interface’s payload fields in its order, null where they do not apply', () => {
    const facts: PaymentFacts = {
      id: 'p1', clientId: 'c1', externalId: 'order-1', status: 'CREATED', totalAmount: '1.00', currency: 'USD', type: 'PURCHASE',
      parentPaymentId: null, relatedPaymentId: null, customerId: null, settledAt: null, expiredAt: null, unsettledAt: null,
      unsettledReason: null, settlementBatchId: null, documentationStatus: null, identityId: 'i1', identityEmail: null,
    };
    const payload = transactionPayload('transaction.status_changed', at, facts) as any;
    expect(Object.keys(payload)).to.deep.equal(['eventType', 'timestamp', 'transaction', 'identity']);
    expect(Object.keys(payload.transaction)).to.deep.equal(['id', 'externalId', 'status', 'totalAmount', 'currency', 'type', 'parentPaymentId',
      'relatedPaymentId', 'customerId', 'settledAt', 'expiredAt', 'unsettledAt', 'unsettledReason', 'settlementBatchId', 'documentationStatus']);
    expect(payload.identity).to.deep.equal({ id: 'i1', email: null });
  });
});

describe('webhook secrets and signatures', () => {
  it('seals a secret so that only its own endpoint opens it', () => {
    const box = new SecretBox(Buffer.alloc(32, 7), 'env');
    const sealed = box.seal('w1', 'whsec_abc');
    expect(sealed.sealed).not.to.include('whsec');
    expect(box.open('w1', sealed)).to.equal('whsec_abc');
    expect(() => box.open('w2', sealed)).to.throw();
    expect(() => new SecretBox(Buffer.alloc(32, 8), 'db').open('w1', sealed)).to.throw(/sealed with key "env"/);
  });

  it('signs the raw body, and the timestamp with it', () => {
    const headers = deliveryHeaders({ secret: 's3cret-s3cret-s3cret', body: '{"a":1}', deliveryId: 'd1', eventId: 'e1', eventType: 'payment.settled', sequence: 4, timestampSeconds: 1700000000 });
    expect(headers['x-webhook-signature']).to.equal(createHmac('sha256', 's3cret-s3cret-s3cret').update('{"a":1}').digest('hex'));
    expect(headers['x-webhook-signature-timestamped']).to.equal(createHmac('sha256', 's3cret-s3cret-s3cret').update('1700000000.{"a":1}').digest('hex'));
    expect(headers).to.include({ 'x-webhook-id': 'd1', 'x-webhook-event-id': 'e1', 'x-webhook-sequence': '4', 'x-webhook-timestamp': '1700000000' });
  });
});

describe('webhook settings', () => {
  it('allow private URLs by default only in the embedded mode, and take a sealing key of exactly 32 bytes', () => {
    expect(loadConfig({}).webhookAllowPrivate).to.equal(true);
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).webhookAllowPrivate).to.equal(false);
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x', WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate).to.equal(true);
    expect(loadConfig({ WEBHOOK_SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') }).webhookSecretsKey).to.deep.equal(Buffer.alloc(32, 1));
    expect(() => loadConfig({ WEBHOOK_SECRETS_KEY: Buffer.alloc(16, 1).toString('base64') })).to.throw(ConfigError, /WEBHOOK_SECRETS_KEY must be 32 bytes/);
  });
});
