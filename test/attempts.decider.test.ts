import { expect } from 'chai';
import { attemptDecider, type AttemptCommand } from '../src/attempts/decider.ts';
import type { AttemptEvent, PaymentAttemptCreatedData } from '../src/attempts/events.ts';
import { foldEvents } from '../src/domain/decider.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const attempt: Omit<PaymentAttemptCreatedData, 'createdAt'> = {
  attemptId: 'a1', clientId: 'c1', externalId: null, identityId: 'i1', identityExternalId: null, accountId: 'acc1',
  accountNumber: '000000000001', totalAmount: '10000', currency: 'CLP', description: null, product: null, type: 'PAYMENT',
  purchaseAmount: null, purchaseCurrency: null, exchange: null, fees: [], feeAmount: '0', method: null, settlement: 'INSTANT',
  customerId: null, destinations: [],
  origins: [{
    type: 'PAYMENT_INITATION', name: null, externalId: null, amount: '10000', currency: 'CLP', settlement: 'INSTANT',
    fee: { type: 'FIXED', value: '200', currency: 'CLP' }, limits: { minAmount: '1000', maxAmount: '10000000' }, metadata: null,
    identity: null, metaData: { image: 'fintoc', title: 'Fintoc', description: 'Fintoc' },
    paymentInitiation: { method: 'FINTOC', referenceId: 'ref-1' },
  }],
};
const created: AttemptEvent = { type: 'PaymentAttemptCreated', data: { ...attempt, createdAt: now.toISOString() } };
const record: AsOwner<AttemptCommand> = { type: 'RecordAttempt', attempt, now };

const { given } = DeciderSpecification.for(attemptDecider, asOwner<AttemptCommand>);

describe('payment attempt decider (given / when / then)', () => {
  it('given no attempt, when it is recorded, then PaymentAttemptCreated with the command’s time', () => {
    given([]).when(record).then([created]);
  });

  it('given the attempt, when it is recorded again, then it is refused as already existing', () => {
    given([created]).when(record).thenThrows('alreadyExists', /payment attempt a1 already exists/);
  });

  it('given another client’s attempt, when this client records on its stream, then it is not found (never forbidden)', () => {
    given([created]).when({ ...record, tenant: OTHER_CLIENT }).thenThrows('notFound', /payment attempt not found/);
  });

  it('evolve keeps the recorded attempt as the state', () => {
    expect(foldEvents(attemptDecider, [created])).to.deep.equal({ attempt: created.data });
  });
});
