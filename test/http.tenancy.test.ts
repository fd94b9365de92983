/**
 * Tenancy of every write route: for each client route that changes an object named in its path (POST, PATCH,
 * PUT, DELETE with an id), another client's object answers 404, exactly as an object that does not exist, and
 * nothing is appended. The routes come from the route table, so a new one without a fixture here fails the
 * suite, naming it. Each fixture makes Bob's objects and a body that passes validation; Bob's own call with it
 * succeeds afterwards, so Alice's 404 is the tenancy's, not a bad request's.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { databaseTargets } from './support/targets.ts';
import { providerReceipts, TEST_CARD } from './support/payments.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';
import { idParamSchema } from '../schemas/common.ts';
import { defineRoute } from '../src/http/route.ts';
import { tenantOf } from '../src/http/tenancy.ts';
import { updateIdentity } from '../src/identities/handlers.ts';
import { depositSignature } from '../src/deposits/routes.ts';

/** One call of a route: its path with the ids filled in, and its body. */
interface Call {
  path: string;
  body?: unknown;
}

/** What a fixture may ask of the owner's side: calls as Bob that must succeed. */
interface Owner {
  post(path: string, body: unknown): Promise<Record<string, any>>;
  identity(): Promise<string>;
  account(): Promise<string>;
  customer(): Promise<string>;
  /** A card payment in CREATED, or under review with `review`. */
  payment(review?: boolean): Promise<string>;
  /** A deposit of 5.00 USD awaiting assignment. */
  deposit(): Promise<string>;
  /** An ACTIVE checkout session paid by card into one of Bob's USD accounts. */
  session(): Promise<{ id: string; checkoutToken: string }>;
  /** An active payment link with the same terms. */
  link(): Promise<{ id: string; checkoutToken: string }>;
  webhook(): Promise<string>;
  /** A push payment the provider delivered: SETTLED, its account credited. */
  settledPayment(): Promise<string>;
}

interface Fixture {
  /** Makes Bob's objects and answers the call on them. */
  prepare(bob: Owner): Promise<Call>;
  /** What Bob's own call answers. */
  ownerStatus: number;
}

const PROVIDER_SECRET = 'tenancy-provider-secret';

const WRITE_METHODS: ReadonlySet<string> = new Set(['post', 'patch', 'put', 'delete']);

/** Keyed `method path` as the route table declares them (express syntax). */
const fixtures: Record<string, Fixture> = {
  'patch /identities/:id': {
    async prepare(bob) { return { path: `/identities/${await bob.identity()}`, body: { name: 'Renamed' } }; },
    ownerStatus: 200,
  },
  'delete /identities/:id': {
    async prepare(bob) { return { path: `/identities/${await bob.identity()}` }; },
    ownerStatus: 200,
  },
  'post /identities/:id/children': {
    async prepare(bob) {
      return { path: `/identities/${await bob.identity()}/children`, body: { children: [await bob.identity()] } };
    },
    ownerStatus: 200,
  },
  'delete /identities/:id/children': {
    async prepare(bob) {
      const [parent, child] = [await bob.identity(), await bob.identity()];
      await bob.post(`/identities/${parent}/children`, { children: [child] });
      return { path: `/identities/${parent}/children`, body: { children: [child] } };
    },
    ownerStatus: 200,
  },
  'post /identities/:id/rules': {
    async prepare(bob) {
      return { path: `/identities/${await bob.identity()}/rules`, body: { resource: 'ACCOUNT', reference: 'acc-1', permissions: ['READ'] } };
    },
    ownerStatus: 201,
  },
  'delete /identities/:id/rules': {
    async prepare(bob) {
      const identity = await bob.identity();
      await bob.post(`/identities/${identity}/rules`, { resource: 'ACCOUNT', reference: 'acc-1', permissions: ['READ'] });
      return { path: `/identities/${identity}/rules`, body: { resource: 'ACCOUNT', reference: 'acc-1' } };
    },
    ownerStatus: 200,
  },
  'patch /accounts/:id': {
    async prepare(bob) { return { path: `/accounts/${await bob.account()}`, body: { name: 'Frozen', status: 'BLOCKED' } }; },
    ownerStatus: 200,
  },
  'delete /accounts/:id': {
    async prepare(bob) { return { path: `/accounts/${await bob.account()}` }; },
    ownerStatus: 200,
  },
  'patch /customers/:id': {
    // A new document number is reserved before the customer's stream decides: the reservation must not happen either.
    async prepare(bob) { return { path: `/customers/${await bob.customer()}`, body: { firstName: 'Bea', documentNumber: randomUUID().slice(0, 32) } }; },
    ownerStatus: 200,
  },
  'post /customers/:id/documents': {
    async prepare(bob) { return { path: `/customers/${await bob.customer()}/documents`, body: { type: 'ID_FRONT' } }; },
    ownerStatus: 201,
  },
  'patch /customers/:id/documents/:documentId': {
    async prepare(bob) {
      const customer = await bob.customer();
      const document = await bob.post(`/customers/${customer}/documents`, { type: 'ID_FRONT' });
      return { path: `/customers/${customer}/documents/${document.id}`, body: { url: 'https://files.example.com/id.png', contentType: 'image/png' } };
    },
    ownerStatus: 200,
  },
  'post /payments/:id/authorized': {
    async prepare(bob) { return { path: `/payments/${await bob.payment()}/authorized` }; },
    ownerStatus: 200,
  },
  'post /payments/:id/captured': {
    async prepare(bob) {
      const payment = await bob.payment();
      await bob.post(`/payments/${payment}/authorized`, undefined);
      return { path: `/payments/${payment}/captured` };
    },
    ownerStatus: 200,
  },
  'patch /webhooks/:id': {
    async prepare(bob) { return { path: `/webhooks/${await bob.webhook()}`, body: { description: 'Renamed', enabled: false } }; },
    ownerStatus: 200,
  },
  'delete /webhooks/:id': {
    async prepare(bob) { return { path: `/webhooks/${await bob.webhook()}` }; },
    ownerStatus: 200,
  },
  'post /webhooks/:id/rotate-secret': {
    async prepare(bob) { return { path: `/webhooks/${await bob.webhook()}/rotate-secret`, body: {} }; },
    ownerStatus: 200,
  },
  'post /webhooks/:id/test': {
    async prepare(bob) { return { path: `/webhooks/${await bob.webhook()}/test` }; },
    ownerStatus: 202,
  },
  'post /webhooks/:id/deliveries/:deliveryId/retry': {
    async prepare(bob) {
      const webhook = await bob.webhook();
      const delivery = await bob.post(`/webhooks/${webhook}/test`, undefined);
      return { path: `/webhooks/${webhook}/deliveries/${delivery.id}/retry` };
    },
    ownerStatus: 202,
  },
  'post /payments/:id/documents': {
    async prepare(bob) { return { path: `/payments/${await bob.payment(true)}/documents`, body: { type: 'INVOICE', url: 'https://files.example.com/invoice.pdf' } }; },
    ownerStatus: 201,
  },
  'post /payments/:id/assign': {
    async prepare(bob) { return { path: `/payments/${await bob.deposit()}/assign`, body: { accountId: await bob.account() } }; },
    ownerStatus: 200,
  },
  'post /payments/:id/cancel': {
    async prepare(bob) {
      // A deposit of 5.00 assigned against 8.00: its companion holds the 3.00 still due.
      const assigned = await bob.post(`/payments/${await bob.deposit()}/assign`, { accountId: await bob.account(), expectedAmount: '8.00' });
      return { path: `/payments/${assigned.relatedPaymentId}/cancel` };
    },
    ownerStatus: 200,
  },
  'delete /checkout-sessions/:id': {
    async prepare(bob) { return { path: `/checkout-sessions/${(await bob.session()).id}` }; },
    ownerStatus: 200,
  },
  'post /checkout-sessions/:id/payments': {
    async prepare(bob) { return { path: `/checkout-sessions/${(await bob.session()).id}/payments`, body: { origins: [{ type: 'CARD', card: TEST_CARD }] } }; },
    ownerStatus: 200,
  },
  'post /checkout-sessions/token/:token/refresh': {
    async prepare(bob) { return { path: `/checkout-sessions/token/${(await bob.session()).checkoutToken}/refresh` }; },
    ownerStatus: 200,
  },
  'post /payment-links/token/:token/checkout-sessions': {
    async prepare(bob) { return { path: `/payment-links/token/${(await bob.link()).checkoutToken}/checkout-sessions` }; },
    ownerStatus: 201,
  },
  'delete /payment-links/:id': {
    async prepare(bob) { return { path: `/payment-links/${(await bob.link()).id}` }; },
    ownerStatus: 200,
  },
  'post /payment-links/:id/activate': {
    async prepare(bob) { return { path: `/payment-links/${(await bob.link()).id}/activate` }; },
    ownerStatus: 200,
  },
  'post /payments/:id/refund': {
    async prepare(bob) { return { path: `/payments/${await bob.settledPayment()}/refund`, body: { amount: '10.00' } }; },
    ownerStatus: 201,
  },
  'delete /test-clocks/:id': {
    async prepare(bob) { return { path: `/test-clocks/${(await bob.post('/test-clocks', {})).id}` }; },
    ownerStatus: 200,
  },
  'post /test-clocks/:id/advance': {
    async prepare(bob) {
      const clock = await bob.post('/test-clocks', {});
      return { path: `/test-clocks/${clock.id}/advance`, body: { frozenTime: new Date(Date.parse(clock.frozenTime) + 60 * 60 * 1000).toISOString() } };
    },
    ownerStatus: 200,
  },
};

/** The ids in `path` at the places of `template`'s parameters. */
const idsIn = (path: string, template: string) => {
  const parts = path.split('/');
  return template.split('/').flatMap((part, n) => (part.startsWith(':') ? [parts[n]!] : []));
};

/** The same path with every id replaced by one that exists nowhere. */
const withUnknownIds = (path: string, template: string) => {
  let unknown = path;
  for (const id of idsIn(path, template)) unknown = unknown.replace(id, randomUUID());
  return unknown;
};

/** A message with the ids of `path` blanked, to compare the answers about two objects. */
const blanked = (message: string, path: string, template: string) =>
  idsIn(path, template).reduce((text, id) => text.replaceAll(id, '<id>'), message);

for (const target of databaseTargets()) {
  describe(`tenancy of every write route: ${target.name}`, function () {
    this.timeout(120_000);
    let tenants: TwoTenants;
    let bob: Owner;

    before(async () => {
      // The sandbox waits for explicit calls, so nothing appends events between a test's two counts.
      tenants = await startTwoTenants(target, {
        env: { SANDBOX_AUTOPILOT: 'false', PROVIDER_SECRET },
        // A route written as a careless new one would be: it looks nothing up, and hands the id to the command.
        extraRoutes: [defineRoute({
          method: 'patch', path: '/test/identities/:id', operationId: 'carelessRename', summary: 'renames without any lookup',
          tags: ['Test'], access: 'client', schemas: { params: idParamSchema }, responses: {},
          async handler({ params, req }) {
            await updateIdentity(tenants.service.services, tenantOf(req), params.id, { name: 'Taken' }, { actor: 'test' });
            return { status: 200 };
          },
        })],
      });
      const { service, asBob } = tenants;
      const post = async (path: string, body: unknown) => {
        const response = await service.request('POST', path, { headers: asBob, body });
        expect(response.status, `Bob's POST ${path}: ${response.text}`).to.be.oneOf([200, 201, 202]);
        return response.body as Record<string, any>;
      };
      const identity = async () => (await post('/identities', { type: 'ORGANIZATION', name: 'Bob’s shop', country: 'BRA' })).id as string;
      const newAccount = async () => post('/accounts', { identityId: await identity(), type: 'CHECKING', currency: 'USD' });
      let sequence = 0;
      const checkoutTerms = async () => {
        const account = await newAccount();
        return {
          items: [{ description: 'A book', preTaxAmount: '20.00' }], currency: 'USD', paymentMethodsAllowed: ['CARD'], duration: 600,
          destinations: [{ type: 'ACCOUNT', amount: '20.00', account: { type: 'CHECKING', currency: 'USD', accountNumber: account.accountNumber, accountHolder: 'Bob' } }],
          owner: { identityId: account.identityId },
        };
      };
      bob = {
        post, identity,
        account: async () => (await newAccount()).id as string,
        customer: async () => (await post('/customers', { email: `payer-${randomUUID()}@example.com` })).id as string,
        webhook: async () => (await post('/webhooks', { url: 'https://hooks.example.com/bob' })).id as string,
        async payment(review = false) {
          const account = await newAccount();
          const payment = await post('/payments', {
            externalId: `bob-${++sequence}`, identityId: account.identityId, accountNumber: account.accountNumber, totalAmount: '100.00',
            currency: 'USD', type: 'PURCHASE', origins: [{ type: 'CARD', card: TEST_CARD }], ...(review ? { description: 'sandbox:review' } : {}),
          });
          expect(payment.status).to.equal(review ? 'REQUIRES_REVIEW' : 'CREATED');
          return payment.id as string;
        },
        async deposit() {
          const body = { clientId: tenants.bob.clientId, depositId: randomUUID(), reference: 'unknown', amount: '5.00', currency: 'USD' as const,
            originator: { firstName: 'Payer', documentNumber: `${++sequence}0000` } };
          const signature = depositSignature(service.services.config.providerSecret, body);
          const response = await service.request('POST', '/payments/deposits', { body: { ...body, signature } });
          expect(response.status, response.text).to.equal(201);
          return response.body.id as string;
        },
        session: async () => post('/checkout-sessions', await checkoutTerms()) as Promise<{ id: string; checkoutToken: string }>,
        link: async () => post('/payment-links', await checkoutTerms()) as Promise<{ id: string; checkoutToken: string }>,
        async settledPayment() {
          const account = await newAccount();
          const payment = await post('/payments', {
            externalId: `bob-${++sequence}`, identityId: account.identityId, accountNumber: account.accountNumber, totalAmount: '100.00',
            currency: 'USD', type: 'PURCHASE',
          });
          const received = await providerReceipts(() => service, PROVIDER_SECRET)(payment.id);
          expect(received.body.status, received.text).to.equal('SETTLED');
          return payment.id as string;
        },
      };
    });
    after(async () => {
      await tenants?.close();
    });

    it('has a fixture for every client write route with an object id in its path, and none for a route that is gone', () => {
      const routes = tenants.service.routes
        .filter((route) => route.access === 'client' && WRITE_METHODS.has(route.method) && route.path.includes('/:'))
        .map((route) => `${route.method} ${route.path}`);
      expect(routes.filter((route) => !(route in fixtures)), 'routes without a tenancy fixture').to.deep.equal([]);
      expect(Object.keys(fixtures).filter((key) => !routes.includes(key)), 'fixtures of no route').to.deep.equal([]);
    });

    it('a route that looks nothing up still cannot change another client\'s object: the command refuses it', async () => {
      const { service, asAlice, asBob } = tenants;
      const identity = await bob.identity();
      const before = await service.eventCount();
      const alices = await service.request('PATCH', `/test/identities/${identity}`, { headers: asAlice, unchecked: true });
      expect(alices.status, alices.text).to.equal(404);
      expect(await service.eventCount()).to.equal(before);
      expect((await service.request('PATCH', `/test/identities/${identity}`, { headers: asBob, unchecked: true })).status).to.equal(200);
    });

    for (const [route, fixture] of Object.entries(fixtures)) {
      const [method, template] = route.split(' ') as [string, string];
      it(`${method.toUpperCase()} ${template}: another client's object answers 404, as a missing one, and appends nothing`, async () => {
        const { service, asAlice, asBob } = tenants;
        const call = await fixture.prepare(bob);
        const before = await service.eventCount();

        const alices = await service.request(method.toUpperCase(), call.path, { headers: asAlice, body: call.body });
        expect(alices.status, alices.text).to.equal(404);
        expect(await service.eventCount(), 'events appended by the refused call').to.equal(before);
        const unknownPath = withUnknownIds(call.path, template);
        const missing = await service.request(method.toUpperCase(), unknownPath, { headers: asAlice, body: call.body });
        expect(missing.status, missing.text).to.equal(404);
        expect(blanked(alices.body.message, call.path, template), 'the answer tells nothing of the object')
          .to.equal(blanked(missing.body.message, unknownPath, template));

        const bobs = await service.request(method.toUpperCase(), call.path, { headers: asBob, body: call.body });
        expect(bobs.status, `the owner's call: ${bobs.text}`).to.equal(fixture.ownerStatus);
      });
    }
  });
}
