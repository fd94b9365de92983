import { expect } from 'chai';
import fc from 'fast-check';
import { depositDecider, reconcile, type AssignmentAnswer, type DepositCommand as TenantCommand } from '../src/deposits/decider.ts';
import type { DepositReceivedData, DepositStreamEvent } from '../src/deposits/events.ts';
import { DomainError } from '../src/domain/errors.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

type DepositCommand = AsOwner<TenantCommand>;

const HOUR_MS = 60 * 60 * 1000;
const LIFETIME_MS = 48 * HOUR_MS;
const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();
const expiresAt = new Date(now.getTime() + LIFETIME_MS).toISOString();
const later = (ms: number) => new Date(now.getTime() + ms);

const fields: Omit<DepositReceivedData, 'createdAt' | 'expiresAt'> = {
  paymentId: 'd1', clientId: 'c1', externalId: 'sandbox:dep-1', totalAmount: '3000.00', currency: 'ARS', provider: 'sandbox',
  providerDepositId: 'dep-1', reference: '0000003100000000000001',
  originator: { firstName: 'Ana', lastName: 'Gómez', documentType: 'DNI', documentNumber: '30111222' }, customerId: 'cu1',
};
const received: DepositStreamEvent = { type: 'DepositReceived', data: { ...fields, createdAt: at, expiresAt } };
const pending: DepositStreamEvent = { type: 'PurchasePendingAssignment', data: { paymentId: 'd1', clientId: 'c1', externalId: 'sandbox:dep-1',
  totalAmount: '3000.00', currency: 'ARS', customerId: 'cu1', expiresAt, at } };
const target = { accountId: 'a1', accountNumber: '100000000001', identityId: 'i1' };
const requested = (expectedAmount: string | null = null, accountId = 'a1'): DepositStreamEvent => ({ type: 'DepositAssignmentRequested',
  data: { paymentId: 'd1', clientId: 'c1', ...target, accountId, expectedAmount, at, companionId: null } });
const credited = { outcome: 'CREDITED', creditEventId: 'credit-1' } as const;

const { given } = DeciderSpecification.for(depositDecider, asOwner<TenantCommand>);
const request = (expectedAmount: string | null = null, when = now): DepositCommand =>
  ({ type: 'RequestAssignment', target, expectedAmount, now: when });
const answer = (outcome: AssignmentAnswer = credited,
  accountId = 'a1'): DepositCommand => ({ type: 'RecordAssignmentAnswer', accountId, answer: outcome, companionId: 'comp-1', now });

describe('deposit decider', () => {
  it('records a new deposit with its pending assignment, 48 hours to live; on any existing stream, nothing', () => {
    const record: DepositCommand = { type: 'RecordDeposit', deposit: fields, lifetimeMs: LIFETIME_MS, now };
    given([]).when(record).then([received, pending]);
    given([received, pending]).when(record).then([]);
    // A payment (a matched deposit, a client's own payment) already holds the stream.
    const created = { type: 'PaymentCreated', data: { paymentId: 'd1' } } as unknown as DepositStreamEvent;
    given([created]).when(record).then([]);
  });

  it('answers another client as not found, before anything else', () => {
    for (const command of [request(), answer(), { type: 'ExpireDeposit', refundPaymentId: 'r1', now: later(LIFETIME_MS) }] as DepositCommand[]) {
      given([received, pending]).when({ ...command, tenant: OTHER_CLIENT }).thenThrows('notFound', /^payment not found$/);
    }
    given([]).when(request()).thenThrows('notFound', /^payment not found$/);
  });

  it('requests an assignment once: a second one while the first is in flight, after it, or after expiry is refused', () => {
    given([received, pending]).when(request('3500.00')).then([requested('3500.00')]);
    given([received, pending, requested()]).when(request()).thenThrows('failedPrecondition', /being assigned to account a1/);
    given([received, pending]).when(request(null, later(LIFETIME_MS))).thenThrows('failedPrecondition', /expired at/);
    given([received, pending]).when(request('35.001')).thenThrows('invalid', /expectedAmount/);
    expect(given([received, pending]).when(request(null, later(LIFETIME_MS - 1))).decided()).to.have.length(1);
  });

  const settledEvents = (creditEventId = 'credit-1'): DepositStreamEvent[] => [
    { type: 'PaymentSettled', data: { paymentId: 'd1', from: 'CREATED', to: 'SETTLED', at, clientId: 'c1', accountId: 'a1', currency: 'ARS',
      totalAmount: '3000.00', feeAmount: '0.00', netAmount: '3000.00', settlementBatchId: null, creditEventId } },
  ];

  it('a credited answer settles PAID; a refused one lets the deposit wait again', () => {
    const events = given([received, pending, requested()]).when(answer()).decided();
    expect(events).to.deep.equal([{ type: 'DepositAssigned', data: { paymentId: 'd1', clientId: 'c1',
      externalId: 'sandbox:dep-1', totalAmount: '3000.00', currency: 'ARS', customerId: 'cu1', at, ...target, expectedAmount: '3000.00',
      reconciliationStatus: 'PAID', relatedPaymentId: null, creditEventId: 'credit-1' } }, ...settledEvents()]);
    const refusal = given([received, pending, requested()]).when(answer({ outcome: 'REFUSED', accountStatus: 'BLOCKED' })).decided();
    expect(refusal).to.deep.equal([{ type: 'DepositAssignmentRefused', data: { paymentId: 'd1', clientId: 'c1', accountId: 'a1', accountStatus: 'BLOCKED', at } }]);
    // Waiting again: it can be assigned once more.
    expect(given([received, pending, requested(), ...refusal]).when(request()).decided()).to.have.length(1);
  });

  it('UNDERPAID and OVERPAID name the companion child and its difference beside payment.settled', () => {
    const under = given([received, pending, requested('3500.00')]).when(answer()).decided();
    expect(under.map((e) => e.type)).to.deep.equal(['DepositAssigned', 'PaymentSettled', 'PurchaseUnderpaid']);
    expect(under[0]!.data).to.include({ reconciliationStatus: 'UNDERPAID', relatedPaymentId: 'comp-1', expectedAmount: '3500.00' });
    expect(under[2]!.data).to.include({ difference: '500.00', relatedPaymentId: 'comp-1', expectedAmount: '3500.00', totalAmount: '3000.00' });
    const over = given([received, pending, requested('2999.99')]).when(answer()).decided();
    expect(over.map((e) => e.type)).to.deep.equal(['DepositAssigned', 'PaymentSettled', 'PurchaseOverpaid']);
    expect(over[2]!.data).to.include({ difference: '0.01' });
  });

  it('an answer recorded before, or for another account than the one in flight, records nothing (a re-run of the process manager)', () => {
    const settled = [received, pending, requested(), ...given([received, pending, requested()]).when(answer()).decided()];
    given(settled).when(answer()).then([]);
    given([received, pending, requested()]).when(answer(credited, 'a2')).then([]);
    given([received, pending]).when(answer()).then([]);
    given(settled).when(request()).thenThrows('failedPrecondition', /is SETTLED; it cannot be assigned/);
  });

  it('expires once past expiresAt, never while an assignment is in flight, never after it settled', () => {
    const expire = (when: Date): DepositCommand => ({ type: 'ExpireDeposit', refundPaymentId: 'r1', now: when });
    given([received, pending]).when(expire(later(LIFETIME_MS - 1))).thenThrows('failedPrecondition', /awaits assignment until/);
    const expired = given([received, pending]).when(expire(later(LIFETIME_MS))).decided();
    expect(expired.map((e) => e.type)).to.deep.equal(['PaymentExpired', 'DepositRefundDue']);
    expect(expired[1]!.data).to.include({ refundPaymentId: 'r1', totalAmount: '3000.00', reference: fields.reference });
    given([received, pending, ...expired]).when(expire(later(LIFETIME_MS))).thenThrows('failedPrecondition', /is EXPIRED; it cannot expire/);
    given([received, pending, ...expired]).when(request()).thenThrows('failedPrecondition', /is EXPIRED/);
    given([received, pending, requested()]).when(expire(later(LIFETIME_MS))).thenThrows('failedPrecondition', /being assigned/);
    const settled = [received, pending, requested(), ...given([received, pending, requested()]).when(answer()).decided()];
    given(settled).when(expire(later(LIFETIME_MS))).thenThrows('failedPrecondition', /is SETTLED/);
  });

  it('reconciles exactly: the difference is |received − expected| at the scale, PAID when none is expected', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 10_000_000 }), (receivedCents, expectedCents) => {
      const text = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
      const { status, difference } = reconcile(text(receivedCents), text(expectedCents), 'ARS');
      expect(difference).to.equal(text(Math.abs(receivedCents - expectedCents)));
      expect(status).to.equal(receivedCents === expectedCents ? 'PAID' : receivedCents < expectedCents ? 'UNDERPAID' : 'OVERPAID');
    }));
    expect(reconcile('10.00', null, 'ARS')).to.deep.equal({ status: 'PAID', difference: '0.00' });
  });

  it('any sequence of commands settles or expires a deposit at most once, and never both', () => {
    const commands: fc.Arbitrary<DepositCommand> = fc.oneof(
      fc.constantFrom<DepositCommand>(request(), request('2000.00'), answer(), answer({ outcome: 'REFUSED', accountStatus: 'BLOCKED' }),
        { type: 'ExpireDeposit', refundPaymentId: 'r1', now: later(LIFETIME_MS) }, answer(credited, 'a2')),
    );
    fc.assert(fc.property(fc.array(commands, { maxLength: 12 }), (sequence) => {
      let history: DepositStreamEvent[] = [received, pending];
      for (const command of sequence) {
        try {
          history = [...history, ...given(history).when(command).decided()];
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
        }
      }
      const settled = history.filter((e) => e.type === 'PaymentSettled').length;
      const expired = history.filter((e) => e.type === 'PaymentExpired').length;
      expect(settled + expired).to.be.at.most(1);
    }));
  });
});
