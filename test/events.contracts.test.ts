/**
 * Stored events have contracts of their own: each type's data schema (declared beside its context's events) and
 * current version. A stored event is never rewritten, so a schema recorded in schemas/events/snapshot.json for a
 * version is fixed; what a run appends must have the shape its contract declares; and a request field reaches a
 * stored event only through the handler's explicit mapping.
 */
import { expect } from 'chai';
import { storedEvents } from '../src/contexts.ts';
import { compareWithSnapshot, canonicalSchema, readSnapshot, type EventSchemaSnapshot } from '../src/storedEvents/snapshot.ts';
import { eventDataValidator } from '../src/storedEvents/validate.ts';
import { accountDecider } from '../src/accounts/decider.ts';
import { accountStream } from '../src/accounts/events.ts';
import * as accounts from '../src/accounts/handlers.ts';
import { randomUUID } from 'node:crypto';
import { documentNumberDecider } from '../src/customers/decider.ts';
import { customerStream, documentNumberStream } from '../src/customers/events.ts';
import * as customers from '../src/customers/handlers.ts';
import type { Database } from '../src/db/database.ts';
import { handleCommand } from '../src/eventstore/commandHandler.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Position } from '../src/eventstore/position.ts';
import { clientTenant } from '../src/domain/tenancy.ts';
import { EventContracts, type ContextEvents } from '../src/eventstore/upcasting.ts';
import { identityStream } from '../src/identities/events.ts';
import { expireDuePayments, runSettlementBatch } from '../src/payments/jobs.ts';
import { depositDecider } from '../src/deposits/decider.ts';
import { finishAssignment } from '../src/deposits/handlers.ts';
import { expireUnassignedDeposits } from '../src/deposits/jobs.ts';
import { depositSignature } from '../src/deposits/routes.ts';
import { paymentStream } from '../src/payments/events.ts';
import * as identities from '../src/identities/handlers.ts';
import { recordFeedDigest } from '../src/integrity/integrity.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';
import { movableClock, providerReceipts } from './support/payments.ts';
import { until } from './support/until.ts';

const object = (properties: Record<string, object>) => ({ type: 'object', additionalProperties: false, required: Object.keys(properties), properties });
const v1 = object({ id: { type: 'string' } });
const v2 = object({ id: { type: 'string' }, name: { type: 'string' } });
const snapshotOf = (contracts: EventContracts): EventSchemaSnapshot => compareWithSnapshot(contracts, {}).next;
const upcastV1: ContextEvents['upcasters'] = [{ type: 'Thing', fromVersion: 1, upcaster: (data) => ({ ...data, name: '' }) }];

describe('stored event contracts', () => {
  it('the registry matches the committed snapshot: every type recorded at its current version, none changed in place', () => {
    const { refused, unrecorded } = compareWithSnapshot(storedEvents, readSnapshot());
    expect(refused, 'stored shapes changed without a new version').to.deep.equal([]);
    expect(unrecorded, 'not in schemas/events/snapshot.json: run npm run events:snapshot').to.deep.equal([]);
  });

  it('every stored schema compiles under strict JSON Schema rules', () => {
    expect(() => eventDataValidator(storedEvents)).not.to.throw();
  });

  describe('the snapshot check', () => {
    const recorded = snapshotOf(new EventContracts([{ schemas: { Thing: v1 } }]));

    it('names the type whose schema changed while its version stayed', () => {
      const { refused } = compareWithSnapshot(new EventContracts([{ schemas: { Thing: v2 } }]), recorded);
      expect(refused).to.have.length(1);
      expect(refused[0]).to.match(/^Thing: its schema changed but its version did not \(still v1\).*upcaster from v1/);
    });

    it('takes the new shape as v2 once an upcaster from v1 is registered, and keeps v1 as recorded', () => {
      const bumped = new EventContracts([{ schemas: { Thing: v2 }, upcasters: upcastV1 }]);
      const { refused, unrecorded, next } = compareWithSnapshot(bumped, recorded);
      expect(refused).to.deep.equal([]);
      expect(unrecorded).to.deep.equal(['Thing v2']);
      expect(next.Thing).to.deep.equal({ 1: canonicalSchema(v1), 2: canonicalSchema(v2) });
      expect(compareWithSnapshot(bumped, next)).to.deep.include({ refused: [], unrecorded: [] });
    });

    it('asks for a new type to be recorded, and refuses a recorded type that is no longer registered', () => {
      const { unrecorded } = compareWithSnapshot(new EventContracts([{ schemas: { Thing: v1, Other: v1 } }]), recorded);
      expect(unrecorded).to.deep.equal(['Other v1']);
      const { refused } = compareWithSnapshot(new EventContracts([{ schemas: { Other: v1 } }]), recorded);
      expect(refused).to.have.length(1);
      expect(refused[0]).to.match(/^Thing: recorded in the snapshot but no longer registered/);
    });

    it('refuses a version that went back (an upcaster removed)', () => {
      const atV2 = snapshotOf(new EventContracts([{ schemas: { Thing: v2 }, upcasters: upcastV1 }]));
      const { refused } = compareWithSnapshot(new EventContracts([{ schemas: { Thing: v2 } }]), { Thing: { ...recorded.Thing, ...atV2.Thing } });
      expect(refused[0]).to.match(/^Thing: the snapshot records v2 but the registry is at v1/);
    });

    it('does not count descriptions, key order or the order of required names as a change', () => {
      const same = { properties: { id: { description: 'the id', type: 'string' } }, required: ['id'], additionalProperties: false, type: 'object', title: 'Thing' };
      expect(compareWithSnapshot(new EventContracts([{ schemas: { Thing: same } }]), recorded)).to.deep.include({ refused: [], unrecorded: [] });
      // A property that happens to be called `description` is data, not an annotation.
      const described = object({ id: { type: 'string' }, description: { type: 'string' } });
      expect(canonicalSchema(described)).to.have.nested.property('properties.description');
    });
  });

  describe('the registry', () => {
    it('writes a type at the version its upcasters reach, and upcasts older events to it', () => {
      const contracts = new EventContracts([{ schemas: { Thing: v2 }, upcasters: upcastV1 }]);
      expect(contracts.currentVersion('Thing')).to.equal(2);
      const old = { type: 'Thing', schemaVersion: 1, data: { id: 'a' } } as RecordedEvent;
      expect(contracts.upcasters.upcast(old)).to.deep.include({ schemaVersion: 2, data: { id: 'a', name: '' } });
    });

    it('refuses a type declared twice, an upcaster without a schema, and a gap in the upcasters', () => {
      expect(() => new EventContracts([{ schemas: { Thing: v1 } }, { schemas: { Thing: v1 } }])).to.throw(/Thing declared twice/);
      expect(() => new EventContracts([{ schemas: {}, upcasters: upcastV1 }])).to.throw(/upcaster for Thing, which has no declared schema/);
      expect(() => new EventContracts([{ schemas: { Thing: v2 }, upcasters: [{ type: 'Thing', fromVersion: 2, upcaster: (d) => d }] }]))
        .to.throw(/Thing: the upcasters up to v2 leave a gap/);
    });

    it('the event stores of the service write every type at its registered version', () => {
      for (const type of storedEvents.types()) expect(storedEvents.upcasters.currentVersion(type), type).to.equal(storedEvents.currentVersion(type));
    });
  });
});

/** Types that no process records any more: links kept on the child's stream before the graph had a stream. */
const NO_LONGER_RECORDED = ['IdentityParentSet', 'IdentityParentCleared'];
const PROVIDER_SECRET = 'contracts-provider-secret';

for (const target of databaseTargets()) {
  describe(`stored events of a run through every command have their contract's data: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    const clock = movableClock();
    const receive = providerReceipts(() => service, PROVIDER_SECRET);

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { runtime: clock, env: { PROVIDER_SECRET } });
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    /** The run is here to append events: any success will do. */
    const ok = (response: ApiResponse, what: string) => {
      expect(response.status, `${what}: ${response.text}`).to.be.within(200, 299);
      return response.body as Record<string, any>;
    };

    async function allEvents(): Promise<RecordedEvent[]> {
      const events: RecordedEvent[] = [];
      for (let after: Position | null = null; ;) {
        const page = await service.services.storage.store.readAll({ after, limit: 1000 });
        if (page.length === 0) return events;
        events.push(...page);
        after = page.at(-1)!.position;
      }
    }

    it('every registered type is appended, each event with the data its type declares', async () => {
      const client = await service.createClient('Contracts');
      const headers = await service.as(client);
      const call = (method: string, path: string, body?: unknown) => service.request(method, path, { headers, body });

      const org = ok(await call('POST', '/identities', { type: 'ORGANIZATION', name: 'Acme', country: 'BRA', rules: { tier: { max: 3 } } }), 'identity');
      const kid = ok(await call('POST', '/identities', { type: 'USER', name: 'Kid', email: 'kid@example.com' }), 'child');
      const ward = ok(await call('POST', '/identities', { type: 'USER', name: 'Ward' }), 'ward');
      // A link recorded the earlier way, on the child's stream: the graph takes it over when it starts.
      await service.services.storage.store.append(identityStream(ward.id), [{ type: 'IdentityParentSet',
        data: { identityId: ward.id, parentId: org.id, at: new Date().toISOString() }, metadata: { clientId: client.clientId } }], 'stream_exists');
      ok(await call('PATCH', `/identities/${org.id}`, { nickname: 'ACME' }), 'identity update');
      ok(await service.operator('POST', `/operator/identities/${org.id}/status`, { status: 'ACTIVE' }), 'identity status');
      ok(await call('POST', `/identities/${org.id}/rules`, { resource: 'ACCOUNT', reference: 'main', permissions: ['READ', 'WRITE'] }), 'rule');
      ok(await call('DELETE', `/identities/${org.id}/rules`, { resource: 'ACCOUNT', reference: 'main', permissions: ['WRITE'] }), 'rule removed');
      ok(await call('POST', `/identities/${org.id}/children`, { children: [kid.id] }), 'link');
      ok(await call('DELETE', `/identities/${org.id}/children`, { children: [kid.id] }), 'unlink');
      ok(await call('DELETE', `/identities/${kid.id}`), 'identity deleted');

      const account = async (body: Record<string, unknown>) => ok(await call('POST', '/accounts', { identityId: org.id, currency: 'BRL', ...body }), 'account');
      const [main, spare, refusing] = [await account({ type: 'CHECKING', name: 'Main' }), await account({ type: 'SAVINGS' }), await account({ type: 'ESCROW' })];
      ok(await call('PATCH', `/accounts/${spare.id}`, { name: 'Spare', status: 'BLOCKED' }), 'account update');
      ok(await call('DELETE', `/accounts/${spare.id}`), 'account closed');
      ok(await service.operator('POST', `/operator/accounts/${main.id}/adjustments`, { amount: '100.00', reason: 'test deposit' }), 'adjustment');
      const hold = (command: Parameters<typeof accountDecider.decide>[0]) =>
        handleCommand(service.services.storage.store, accountStream(main.id), accountDecider, command, { clientId: client.clientId });
      const tenant = clientTenant(client.clientId);
      await hold({ type: 'HoldFunds', tenant, holdId: 'h1', amount: '10.00', reason: 'refund', now: clock.now() });
      await hold({ type: 'ReleaseHold', tenant, holdId: 'h1', now: clock.now() });
      await hold({ type: 'HoldFunds', tenant, holdId: 'h2', amount: '5.00', reason: 'refund', now: clock.now() });
      await hold({ type: 'DebitHold', tenant, holdId: 'h2', now: clock.now() });

      const customer = ok(await call('POST', '/customers', { firstName: 'Ana', email: 'Ana@Example.com', documentNumber: '11.111.111-1' }), 'customer');
      ok(await call('PATCH', `/customers/${customer.id}`, { documentNumber: '22.222.222-2' }), 'customer update');
      const front = ok(await call('POST', `/customers/${customer.id}/documents`, { type: 'ID_FRONT' }), 'document');
      ok(await call('PATCH', `/customers/${customer.id}/documents/${front.id}`, { url: 'https://files.example.com/front.png', contentType: 'image/png' }), 'upload');
      ok(await service.operator('POST', `/operator/customers/${customer.id}/documents/${front.id}/decision`, { decision: 'APPROVED' }), 'approved');
      const back = ok(await call('POST', `/customers/${customer.id}/documents`, { type: 'ID_BACK', url: 'https://files.example.com/back.png' }), 'document');
      ok(await service.operator('POST', `/operator/customers/${customer.id}/documents/${back.id}/decision`, { decision: 'REJECTED' }), 'rejected');
      // A number reserved for a customer never created, given back as the customers reactor does once it is old enough.
      const orphan = { clientId: client.clientId, documentNumber: '33.333.333-3', customerId: randomUUID() };
      await handleCommand(service.services.storage.store, documentNumberStream(orphan.clientId, orphan.documentNumber), documentNumberDecider,
        { type: 'ClaimKey', key: { clientId: orphan.clientId, documentNumber: orphan.documentNumber }, owner: orphan.customerId, now: clock.now() }, { clientId: client.clientId });
      expect(await customers.releaseAbandonedReservation(service.services, { ...orphan, reservationRevision: 0, reservationEventId: randomUUID() }, { clientId: client.clientId }))
        .to.equal(true);

      const pay = async (externalId: string, extra: Record<string, unknown>) => ok(await call('POST', '/payments', {
        externalId, identityId: org.id, accountNumber: main.accountNumber, totalAmount: '20.00', currency: 'BRL', type: 'PURCHASE', ...extra,
      }), externalId);
      const status = async (id: string) => (await call('GET', `/payments/${id}`)).body.status as string;
      const reaches = (id: string, wanted: string) => until(async () => (await status(id)) === wanted, { what: `payment ${id} ${wanted}` });
      const pix = [{ type: 'PIX', pix: { key: 'payer@example.com' } }];
      const card = { type: 'CARD', card: { number: '4111111111111111', holder: 'Ana', expiryMonth: '12', expiryYear: '2099', cvv: '123' } };

      const settled = await pay('pix', { origins: pix, customerId: customer.id, destinations: [
        { type: 'PIX', pix: { key: 'merchant@example.com' }, metadata: { category: 'payout' }, identity: { name: 'Acme' } }] });
      const mismatch = await pay('mismatch', { origins: pix, description: 'sandbox:unsettled' });
      const refused = await pay('refused', { origins: pix, accountNumber: refusing.accountNumber });
      const cardPayment = await pay('card', { origins: [card], customer: { documentNumber: '33.333.333-3', firstName: 'Bea' } });
      for (const { id } of [settled, mismatch, refused]) await reaches(id, 'PENDING');
      ok(await call('PATCH', `/accounts/${refusing.id}`, { status: 'BLOCKED' }), 'account blocked');
      for (const { id } of [settled, mismatch, refused]) ok(await receive(id), 'received');
      await reaches(cardPayment.id, 'RECEIVED');
      await runSettlementBatch(service.services);
      expect(await Promise.all([settled, mismatch, refused, cardPayment].map(({ id }) => status(id))))
        .to.deep.equal(['SETTLED', 'UNSETTLED', 'UNSETTLED', 'SETTLED']);

      // Refunds of the settled payment: one per end the sandbox plays, and one the blocked account refuses.
      const refundEnds = { SETTLED: undefined, FAILED: 'sandbox:refund-fail', UNSETTLED: 'sandbox:refund-unsettled', EXPIRED: 'sandbox:refund-expire' };
      for (const [end, reason] of Object.entries(refundEnds)) {
        const refund = ok(await call('POST', `/payments/${settled.id}/refund`, { amount: '1.00', ...(reason ? { reason } : {}) }), `refund ${end}`);
        await until(async () => (await call('GET', `/payments/${settled.id}/refund`)).body.refunds
          .some((r: { id: string; status: string }) => r.id === refund.id && r.status === end), { what: `refund ${refund.id} ${end}` });
      }
      ok(await call('PATCH', `/accounts/${main.id}`, { status: 'BLOCKED' }), 'account blocked');
      expect((await call('POST', `/payments/${settled.id}/refund`, { amount: '1.00' })).status).to.equal(422);
      ok(await call('PATCH', `/accounts/${main.id}`, { status: 'ACTIVE' }), 'account unblocked');

      const review = await pay('review', { description: 'sandbox:review' });
      ok(await call('POST', `/payments/${review.id}/documents`, { type: 'INVOICE', url: 'https://files.example.com/invoice.pdf' }), 'review document');
      ok(await service.operator('POST', `/operator/payments/${review.id}/review`, { decision: 'REJECTED' }), 'review rejected');
      const approved = await pay('approved', { description: 'sandbox:review' });
      ok(await service.operator('POST', `/operator/payments/${approved.id}/review`, { decision: 'APPROVED' }), 'review approved');
      await pay('declined', { origins: [{ ...card, card: { ...card.card, number: '4000000000000002' } }] });
      const expiring = await pay('expiring', { expiresAt: new Date(clock.now().getTime() + 60_000).toISOString() });
      clock.advance(61_000);
      // Under load the read model the job reads may not have the payment yet (its answer was marked stale): run it until it has.
      await until(async () => {
        await expireDuePayments(service.services);
        return (await status(expiring.id)) === 'EXPIRED';
      }, { what: 'payment expiring EXPIRED', intervalMs: 100 });

      const checkoutTerms = {
        items: [{ description: 'Book', preTaxAmount: '20.00', tax: { name: 'VAT', type: 'PERCENTAGE', value: '10' } }], currency: 'BRL',
        paymentMethodsAllowed: ['CARD'], duration: 600, owner: { identityId: org.id }, customerRequirements: ['email'],
        destinations: [{ type: 'ACCOUNT', amount: '22.00', account: { type: 'CHECKING', currency: 'BRL', accountNumber: main.accountNumber, accountHolder: 'Acme' } }],
      };
      const link = ok(await call('POST', '/payment-links', checkoutTerms), 'link');
      ok(await call('POST', `/payment-links/${link.id}/activate`), 'link activated');
      const fromLink = ok(await call('POST', `/payment-links/token/${link.checkoutToken}/checkout-sessions`), 'session from a link');
      ok(await service.request('POST', `/checkout/${fromLink.checkoutToken}/method`, { body: { method: 'CARD' } }), 'method chosen');
      ok(await call('POST', `/checkout-sessions/token/${fromLink.checkoutToken}/refresh`), 'session refreshed');
      ok(await call('DELETE', `/checkout-sessions/${fromLink.id}`), 'session deleted');
      ok(await call('DELETE', `/payment-links/${link.id}`), 'link deleted');
      const payer = { email: 'payer@example.com' };
      const finished = ok(await call('POST', '/checkout-sessions', checkoutTerms), 'session');
      const expiredCard = await call('POST', `/checkout-sessions/${finished.id}/payments`, { origins: [{ ...card, card: { ...card.card, expiryYear: '2001' } }], customer: payer });
      expect(expiredCard.status, 'a payment refused after the session was reserved releases it').to.equal(400);
      const sessionPayment = ok(await call('POST', `/checkout-sessions/${finished.id}/payments`, { origins: [card], customer: payer }), 'session paid');
      const failed = ok(await call('POST', '/checkout-sessions', checkoutTerms), 'session');
      ok(await call('POST', `/checkout-sessions/${failed.id}/payments`, {
        origins: [{ ...card, card: { ...card.card, number: '4000000000000002' } }], customer: payer }), 'session paid, declined');
      await reaches(sessionPayment.id, 'RECEIVED');
      await runSettlementBatch(service.services);
      const sessionStatus = async (id: string) => (await call('GET', `/checkout-sessions/${id}`)).body.status as string;
      await until(async () => (await sessionStatus(finished.id)) === 'FINISHED' && (await sessionStatus(failed.id)) === 'FAILED', { what: 'sessions ended' });

      ok(await call('POST', '/payment-attempts', {
        identityId: org.id, accountNumber: main.accountNumber, currency: 'BRL', type: 'PAYMENT',
        origins: [{ type: 'PAYMENT_INITATION', paymentInitiation: { origin: 'PIX', referenceId: 'init-1' } }],
        destinations: [{ type: 'PIX', amount: '20.00', pix: { key: 'merchant@example.com' }, identity: { userId: 'u-1', nickname: 'Shop', dni: '1' } }],
      }), 'attempt');

      ok(await service.operator('POST', `/operator/clients/${client.clientId}/review-thresholds`, { basicUsd: '500', standardUsd: '5000.50' }), 'thresholds');

      // Deposits: matched, unassigned then assigned (paid exactly, under, over), refused by an account blocked
      // before the credit, and expired.
      let deposits = 0;
      const deposit = async (reference: string, amount = '30.00') => {
        const body = { clientId: client.clientId, depositId: `dep-${++deposits}`, reference, amount, currency: 'BRL' as const,
          originator: { firstName: 'Caio', lastName: 'Lima', documentType: 'CPF' as const, documentNumber: '123.456.789-09' } };
        return ok(await service.request('POST', '/payments/deposits', { body: { ...body, signature: depositSignature(PROVIDER_SECRET, body) } }), 'deposit');
      };
      await deposit(main.accountNumber);
      const companions: string[] = [];
      for (const expectedAmount of ['30.00', '40.00', '20.00', '60.00']) {
        const assigned = ok(await call('POST', `/payments/${(await deposit('unknown')).id}/assign`, { accountId: main.id, expectedAmount }), 'assign');
        if (assigned.reconciliationStatus === 'UNDERPAID') companions.push(assigned.relatedPaymentId);
      }
      // The amounts still due: one paid by a later deposit, one cancelled.
      ok(await call('POST', `/payments/${(await deposit('unknown')).id}/assign`, { accountId: main.id, companionId: companions[0] }), 'companion paid');
      ok(await call('POST', `/payments/${companions[1]}/cancel`), 'companion cancelled');
      const assignee = await account({ type: 'CHECKING', name: 'Assignee' });
      const refusedDeposit = await deposit('unknown');
      // The request skips the route's look at the account, as one that raced the block would have.
      ok(await call('PATCH', `/accounts/${assignee.id}`, { status: 'BLOCKED' }), 'assignee blocked');
      await handleCommand(service.services.storage.store, paymentStream(refusedDeposit.id), depositDecider, {
        type: 'RequestAssignment', tenant, now: clock.now(), expectedAmount: null,
        target: { accountId: assignee.id, accountNumber: assignee.accountNumber, identityId: org.id } }, { clientId: client.clientId });
      await finishAssignment(service.services, refusedDeposit.id, { clientId: client.clientId });
      await deposit('unknown');
      // Expired 49 hours later; the clock goes back so that the run's token stays good.
      clock.advance(49 * 60 * 60 * 1000);
      try {
        await expireUnassignedDeposits(service.services);
      } finally {
        clock.advance(-49 * 60 * 60 * 1000);
      }

      // A test clock: a simulated deposit bound to it, expired by an advance past its 48 hours, then the clock deleted.
      const testClock = ok(await call('POST', '/test-clocks', { name: 'contracts' }), 'test clock');
      ok(await service.request('POST', '/sandbox/deposits', { headers: { ...headers, 'Test-Clock': testClock.id }, body: {
        reference: 'unknown', amount: '30.00', currency: 'BRL', originator: { firstName: 'Caio', documentNumber: '123.456.789-09' } } }), 'deposit on a clock');
      ok(await call('POST', `/test-clocks/${testClock.id}/advance`, { frozenTime: new Date(Date.parse(testClock.frozenTime) + 49 * 3_600_000).toISOString() }),
        'clock advanced');
      await until(async () => (await call('GET', `/test-clocks/${testClock.id}`)).body.status === 'ready', { what: 'test clock ready' });
      ok(await call('DELETE', `/test-clocks/${testClock.id}`), 'clock deleted');

      const webhook = ok(await call('POST', '/webhooks', { url: 'https://hooks.example.com/contracts', events: ['payment.settled'] }), 'webhook registered');
      ok(await call('PATCH', `/webhooks/${webhook.id}`, { events: null, description: 'all of them', enabled: false }), 'webhook updated');
      ok(await call('POST', `/webhooks/${webhook.id}/rotate-secret`, {}), 'webhook secret rotated');
      ok(await call('DELETE', `/webhooks/${webhook.id}`), 'webhook deleted');

      ok(await service.operator('DELETE', `/operator/clients/${client.clientId}`), 'client deleted');
      expect(await recordFeedDigest(service.services.storage.database, service.services.storage.store, clock.now())).to.not.equal(null);
      // The feed shows an append once every transaction older than it has ended (a projector's may still run).
      let events: RecordedEvent[] = [];
      await until(async () => (events = await allEvents()).some((event) => event.type === 'FeedDigestRecorded'), { what: 'the digest in the feed', timeoutMs: 10_000 });
      const seen = new Set(events.map((event) => event.type));
      const unseen = storedEvents.types().filter((type) => !seen.has(type) && !NO_LONGER_RECORDED.includes(type));
      expect(unseen, 'registered types this run never appended (extend the run)').to.deep.equal([]);

      const problemOf = eventDataValidator(storedEvents);
      const problems = events.flatMap((event) => {
        const problem = problemOf(event.type, event.data);
        return problem ? [`${event.stream}@${event.revision}: ${problem}`] : [];
      });
      expect(problems).to.deep.equal([]);
    });

    it('a request field the event\'s contract does not name never reaches a stored event', async () => {
      // Stands for a field added to a request schema later: only the handlers' explicit mapping decides what is stored.
      const client = await service.createClient('Mapping');
      const extra = { smuggled: 'not in any contract' };
      const metadata = { clientId: client.clientId };
      const tenant = clientTenant(client.clientId);
      const identityId = await identities.createIdentity(service.services, client.clientId,
        { type: 'USER', name: 'Ana', ...extra } as never, metadata);
      await identities.updateIdentity(service.services, tenant, identityId, { name: 'Ana Maria', ...extra } as never, metadata);
      const customerId = await customers.createCustomer(service.services, client.clientId, { email: 'ana@example.com', ...extra } as never, metadata);
      await customers.updateCustomer(service.services, client.clientId, customerId, { firstName: 'Ana', ...extra } as never, metadata);
      const accountId = await accounts.openAccount(service.services, client.clientId,
        { identityId, type: 'CHECKING', currency: 'CLP', ...extra } as never, metadata);
      await accounts.updateAccount(service.services, tenant, accountId, { name: 'Main', ...extra } as never, metadata);

      const store = service.services.storage.store;
      const recorded = [
        ...await store.readStream(identityStream(identityId)), ...await store.readStream(customerStream(customerId)),
        ...await store.readStream(accountStream(accountId)),
      ];
      expect(recorded.map((event) => event.type)).to.deep.equal(
        ['IdentityCreated', 'IdentityUpdated', 'CustomerCreated', 'CustomerUpdated', 'AccountOpened', 'AccountUpdated']);
      for (const event of recorded) expect(JSON.stringify(event.data), event.type).not.to.include('smuggled');
      const problemOf = eventDataValidator(storedEvents);
      for (const event of recorded) expect(problemOf(event.type, event.data), event.type).to.equal(null);
    });
  });
}
