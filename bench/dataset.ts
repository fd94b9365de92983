/**
 * The benchmarks' dataset: a merchant provisioned through the API, and payments whose whole histories are
 * decided by the payment decider itself and appended straight to the event store (one stream per payment, its
 * events in one append), as a backlog a new deployment would find.
 */
import { randomUUID } from 'node:crypto';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import type { EventStore } from '../src/eventstore/port.ts';
import type { Services } from '../src/http/services.ts';
import { paymentDecider, type PaymentCommand, type PaymentState } from '../src/payments/decider.ts';
import type { WithoutTenant } from '../src/domain/tenancy.ts';
import { paymentIdFor, paymentStream, type PaymentCreatedData, type PaymentEvent } from '../src/payments/events.ts';
import { feesFor, totalFee } from '../src/payments/pricing.ts';
import { customerDecider, type CustomerCommand, type CustomerState } from '../src/customers/decider.ts';
import { customerStream } from '../src/customers/events.ts';
import { call, OPERATOR_KEY, type BenchService } from './service.ts';

/**
 * Appends in flight while seeding: enough that the event store's group commit (src/eventstore/postgres) writes
 * them in large batches, one statement and one commit each.
 */
export const SEED_IN_FLIGHT = 256;
/** The merchant's accounts (USD). */
export const ACCOUNTS = 10;
export const card = { number: '4111111111111111', holder: 'Ana Pérez', expiryMonth: '12', expiryYear: '2099', cvv: '123' };

export interface Merchant {
  clientId: string;
  headers: Record<string, string>;
  identityId: string;
  accounts: Array<{ id: string; accountNumber: string }>;
}

export async function provisionMerchant(baseUrl: string): Promise<Merchant> {
  const credentials = await call(baseUrl, 'POST', '/operator/clients', { 'x-operator-key': OPERATOR_KEY }, { name: 'Bench merchant' });
  const { accessToken } = await call(baseUrl, 'POST', '/auth', { 'x-api-key': credentials.apiKey },
    { clientId: credentials.clientId, clientSecret: credentials.clientSecret });
  const headers = { 'x-api-key': credentials.apiKey as string, 'user-agent': 'bench', authorization: `Bearer ${accessToken as string}` };
  const identity = await call(baseUrl, 'POST', '/identities', headers,
    { type: 'ORGANIZATION', name: 'Bench shop', country: 'BRA', email: 'shop@example.com' });
  const accounts = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const account = await call(baseUrl, 'POST', '/accounts', headers, { identityId: identity.id, type: 'CHECKING', currency: 'USD' });
    accounts.push({ id: account.id as string, accountNumber: account.accountNumber as string });
  }
  return { clientId: credentials.clientId, headers, identityId: identity.id, accounts };
}

/** Share of the dataset ending in each status, and the moves after creation that get it there. */
const lifecycles: Array<{ status: string; share: number; moves: Array<(now: Date) => WithoutTenant<PaymentCommand>> }> = [
  { status: 'CREATED', share: 0.35, moves: [] },
  { status: 'AUTHORIZED', share: 0.10, moves: [(now) => ({ type: 'Authorize', now })] },
  { status: 'CAPTURED', share: 0.10, moves: [(now) => ({ type: 'Authorize', now }), (now) => ({ type: 'Capture', now })] },
  { status: 'RECEIVED', share: 0.10, moves: [(now) => ({ type: 'Authorize', now }), (now) => ({ type: 'Capture', now }),
    (now) => ({ type: 'Receive', receivedAmount: '', now })] },
  { status: 'SETTLED', share: 0.10, moves: [(now) => ({ type: 'Authorize', now }), (now) => ({ type: 'Capture', now }),
    (now) => ({ type: 'Receive', receivedAmount: '', now }),
    (now) => ({ type: 'Settle', batchId: `batch-${now.toISOString().slice(0, 10)}`, account: { outcome: 'CREDITED', creditEventId: 'seeded', settlementBatchId: null }, now })] },
  { status: 'FAILED', share: 0.10, moves: [(now) => ({ type: 'Reject', reason: 'CARD_DECLINED', now })] },
  { status: 'EXPIRED', share: 0.10, moves: [(now) => ({ type: 'Expire', now })] },
  { status: 'REQUIRES_REVIEW', share: 0.05, moves: [(now) => ({ type: 'RequireReview', reason: 'MANUAL_REVIEW', now })] },
];

function lifecycleOf(i: number, count: number) {
  let bound = 0;
  const at = (i + 0.5) / count;
  for (const lifecycle of lifecycles) {
    bound += lifecycle.share;
    if (at < bound) return lifecycle;
  }
  return lifecycles[0]!;
}

/** Every event of payment `i`: created up to 90 days ago, moved to its lifecycle's status by the decider itself. */
function paymentHistory(
  services: Services, merchant: Merchant, template: PaymentCreatedData, i: number, count: number, first: number,
): PaymentEvent[] {
  const externalId = `seed-${first + i}`;
  const paymentId = paymentIdFor(merchant.clientId, externalId);
  const account = merchant.accounts[Math.floor(Math.random() * merchant.accounts.length)]!;
  const totalAmount = (5 + Math.floor(Math.random() * 89_500) / 100).toFixed(2);
  const fees = feesFor(services.catalog, services.catalog.nodeType('CARD'), totalAmount, 'USD');
  const createdAt = Date.now() - Math.floor(Math.random() * 90 * 86_400_000) - 3 * 3_600_000;
  const lifecycle = lifecycleOf(i, count);
  const { createdAt: _createdAt, ...base } = template;
  const payment = {
    ...base, paymentId, externalId, accountId: account.id, accountNumber: account.accountNumber, totalAmount, fees,
    feeAmount: totalFee(fees, 'USD'),
    expiresAt: lifecycle.status === 'EXPIRED' ? new Date(createdAt + 3_600_000).toISOString() : null,
  };
  let state: PaymentState = paymentDecider.initialState;
  const events: PaymentEvent[] = [];
  // The seed writes the merchant's history as the service would have: its commands act for the merchant.
  const tenant = { clientId: merchant.clientId };
  const commands: PaymentCommand[] = [{ type: 'CreatePayment', tenant, payment, screening: { outcome: 'CLEAR' }, now: new Date(createdAt) }];
  lifecycle.moves.forEach((move, step) => {
    const command = move(new Date(createdAt + (step + 1) * (lifecycle.status === 'EXPIRED' ? 7_200_000 : 300_000)));
    commands.push({ ...(command.type === 'Receive' ? { ...command, receivedAmount: totalAmount } : command), tenant } as PaymentCommand);
  });
  for (const command of commands) {
    const decided = paymentDecider.decide(command, state);
    for (const event of decided) state = paymentDecider.evolve(state, event);
    events.push(...decided);
  }
  return events;
}

/** The shape of a real PaymentCreated: one payment created through the API, read back from its stream. */
export async function paymentTemplate(service: BenchService, merchant: Merchant): Promise<PaymentCreatedData> {
  const sample = await call(service.baseUrl, 'POST', '/payments', merchant.headers, {
    externalId: 'template', identityId: merchant.identityId, type: 'PURCHASE', accountNumber: merchant.accounts[0]!.accountNumber,
    totalAmount: '100.00', currency: 'USD', origins: [{ type: 'CARD', card }],
  });
  const [created] = await service.services.storage.store.readStream(paymentStream(sample.id as string));
  return created!.data as PaymentCreatedData;
}

/**
 * Appends the histories `historyOf(i)` gives for i in [0, count), each to its new stream, SEED_IN_FLIGHT appends at a
 * time (the store's group commit writes them in large batches); answers the events appended and the last position.
 */
async function seedStreams(
  store: EventStore, merchant: Merchant, count: number,
  historyOf: (i: number) => { stream: string; events: ReadonlyArray<{ type: string; data: unknown }> },
): Promise<{ events: number; last: Position | null; ms: number }> {
  const metadata = { clientId: merchant.clientId, actor: `client:${merchant.clientId}` };
  let next = 0;
  let events = 0;
  let last: Position | null = null;
  const started = performance.now();
  await Promise.all(Array.from({ length: SEED_IN_FLIGHT }, async () => {
    for (let i = next++; i < count; i = next++) {
      const history = historyOf(i);
      events += history.events.length;
      const { position } = await store.append(history.stream, history.events.map((e) => ({
        type: e.type, data: e.data, metadata: { ...metadata, correlationId: randomUUID() },
      })), 'no_stream');
      if (!last || comparePositions(position, last) > 0) last = position;
    }
  }));
  return { events, last, ms: performance.now() - started };
}

/** Appends `count` payments' histories, SEED_IN_FLIGHT appends at a time; answers the last position. */
export async function seedPayments(
  store: EventStore, services: Services, merchant: Merchant, template: PaymentCreatedData, count: number,
  /** Number of the first payment (its externalId is `seed-<number>`): a later call continues an earlier one's dataset. */
  first = 0,
): Promise<{ events: number; last: Position; ms: number }> {
  const seeded = await seedStreams(store, merchant, count, (i) => {
    const history = paymentHistory(services, merchant, template, i, count, first);
    return { stream: paymentStream(history[0]!.data.paymentId), events: history };
  });
  return { ...seeded, last: seeded.last! };
}

/**
 * Appends `count` customers' histories (created, then `updates` changes of name), SEED_IN_FLIGHT appends at a
 * time: the rest of a log that holds more than payments. Answers the events appended and the last position.
 */
export function seedCustomers(
  store: EventStore, merchant: Merchant, count: number, updates: number,
): Promise<{ events: number; last: Position | null; ms: number }> {
  const tenant = { clientId: merchant.clientId };
  return seedStreams(store, merchant, count, (i) => {
    const customerId = randomUUID();
    const at = Date.now() - Math.floor(Math.random() * 90 * 86_400_000);
    const commands: CustomerCommand[] = [{
      type: 'CreateCustomer', tenant, customerId, clientId: merchant.clientId, autoCreated: false, reservationRevision: null, now: new Date(at),
      fields: { firstName: 'Ana', lastName: `Seed${i}`, email: `seed-${i}@example.com`, country: 'BRA' },
    }];
    for (let u = 0; u < updates; u++) {
      commands.push({ type: 'UpdateCustomer', tenant, changes: { firstName: `Ana${u}` }, now: new Date(at + (u + 1) * 60_000) });
    }
    let state: CustomerState = customerDecider.initialState;
    const events = commands.flatMap((command) => {
      const decided = customerDecider.decide(command, state);
      for (const event of decided) state = customerDecider.evolve(state, event);
      return decided;
    });
    return { stream: customerStream(customerId), events };
  });
}
