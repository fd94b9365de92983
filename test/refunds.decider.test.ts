/**
 * The refund deciders, given events / when a command / then events: the parent's ceiling, the account's answer
 * to a hold (once per hold), the child's lifecycle (account- and suspense-funded), and the ledger's posting of a
 * paid-out refund.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { foldEvents } from '../src/domain/decider.ts';
import type { PaymentCreatedData, PaymentEvent } from '../src/payments/events.ts';
import { paymentDecider } from '../src/payments/decider.ts';
import { depositDecider } from '../src/deposits/decider.ts';
import type { DepositStreamEvent } from '../src/deposits/events.ts';
import {
  parentRefundDecider, refundableRemainder, refundDecider, type ParentRefundCommand, type ParentStreamEvent, type RefundCommand,
} from '../src/payments/refunds/decider.ts';
import type { ParentRefundEvent, RefundCreatedData, RefundEvent } from '../src/payments/refunds/events.ts';
import { accountDecider, availableFunds, holdAnswerId, type AccountCommand } from '../src/accounts/decider.ts';
import type { AccountEvent } from '../src/accounts/events.ts';
import { entriesFor } from '../projections/ledgerPostings.ts';
import { registered } from '../src/contexts.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();

const payment: PaymentCreatedData = {
  paymentId: 'p1', clientId: 'c1', externalId: 'order-1', identityId: 'i1', identityExternalId: null, identityEmail: 'shop@example.com',
  accountId: 'a1', accountNumber: '100000000001', totalAmount: '1000', currency: 'CLP', description: null, product: null, type: 'PURCHASE',
  purchaseAmount: null, purchaseCurrency: null, exchange: null, origins: [], destinations: [], fees: [], feeAmount: '0', flow: 'PUSH',
  method: null, settlement: 'INSTANT', expiresAt: null, customerId: 'cu1', checkoutSessionId: null, createdAt: at,
};
const move = (from: 'CREATED' | 'RECEIVED', to: 'RECEIVED' | 'SETTLED') => ({ paymentId: 'p1', from, to, at });
const settledPayment: PaymentEvent[] = [
  { type: 'PaymentCreated', data: payment },
  { type: 'PaymentReceived', data: { ...move('CREATED', 'RECEIVED'), receivedAmount: '1000', currency: 'CLP' } },
  { type: 'PaymentSettled', data: { ...move('RECEIVED', 'SETTLED'), clientId: 'c1', accountId: 'a1', currency: 'CLP', totalAmount: '1000',
    feeAmount: '0', netAmount: '1000', settlementBatchId: null, creditEventId: 'credit-1' } },
];

type ParentHistory = ParentStreamEvent[];
const parentOf = (history: ParentHistory) => foldEvents(parentRefundDecider, history);
const parent = DeciderSpecification.for(parentRefundDecider, asOwner<ParentRefundCommand>);

const requested = (refundId: string, amount: string): ParentRefundEvent => ({ type: 'PaymentRefundRequested',
  data: { paymentId: 'p1', refundId, amount, clientId: 'c1', currency: 'CLP', description: null, at } });
const accepted = (refundId: string, amount: string): ParentRefundEvent => ({ type: 'PaymentRefundAccepted', data: { paymentId: 'p1', refundId, amount, at } });
const request = (refundId: string, amount: string | null): AsOwner<ParentRefundCommand> => ({ type: 'RequestRefund', refundId, amount, description: null, now });

describe('refund of a payment: the parent decides the ceiling', () => {
  it('reserves a requested amount, or all that is left when none is given', () => {
    parent.given(settledPayment).when(request('r1', '300')).then([requested('r1', '300')]);
    parent.given([...settledPayment, requested('r1', '300')]).when(request('r2', null)).then([requested('r2', '700')]);
  });

  it('refuses a parent that is not SETTLED, an amount over what is left, nothing left, and a malformed amount', () => {
    parent.given(settledPayment.slice(0, 2)).when(request('r1', '1')).thenThrows('failedPrecondition', /is RECEIVED; only a SETTLED payment can be refunded/);
    parent.given([...settledPayment, requested('r1', '600')]).when(request('r2', '401')).thenThrows('failedPrecondition', /exceeds what is left .*: 400 CLP/);
    parent.given([...settledPayment, requested('r1', '1000')]).when(request('r2', null)).thenThrows('failedPrecondition', /nothing left to refund/);
    parent.given(settledPayment).when(request('r1', '1.5')).thenThrows('invalid', /amount/);
    parent.given(settledPayment).when(request('r1', '0')).thenThrows('invalid', /amount/);
  });

  it('answers another client\'s payment and a missing one as not found', () => {
    parent.given(settledPayment).when({ ...request('r1', '1'), tenant: OTHER_CLIENT }).thenThrows('notFound', /^payment not found$/);
    parent.given([]).when(request('r1', '1')).thenThrows('notFound', /^payment not found$/);
  });

  it('records the account\'s first answer only; a refusal gives the reservation back', () => {
    const history = [...settledPayment, requested('r1', '1000')];
    const refusal = { outcome: 'REFUSED', refusal: 'INSUFFICIENT_FUNDS', detail: 'account a1 has 10 CLP available' } as const;
    const refused: ParentRefundEvent = { type: 'PaymentRefundRefused', data: { paymentId: 'p1', refundId: 'r1', amount: '1000', refusal: 'INSUFFICIENT_FUNDS', detail: refusal.detail, at } };
    parent.given(history).when({ type: 'AnswerRefund', refundId: 'r1', answer: refusal, now }).then([refused]);
    expect(refundableRemainder(parentOf([...history, refused]))).to.equal('1000');
    parent.given([...history, refused]).when({ type: 'AnswerRefund', refundId: 'r1', answer: { outcome: 'HELD' }, now }).then([]);
    parent.given(history).when({ type: 'AnswerRefund', refundId: 'r1', answer: { outcome: 'HELD' }, now }).then([accepted('r1', '1000')]);
    parent.given([...history, accepted('r1', '1000')]).when({ type: 'AnswerRefund', refundId: 'r1', answer: refusal, now }).then([]);
  });

  it('records the child\'s end once: SETTLED keeps the reservation, any other end gives it back', () => {
    const history = [...settledPayment, requested('r1', '400'), accepted('r1', '400')];
    const settled: ParentRefundEvent = { type: 'PaymentRefundSettled', data: { paymentId: 'p1', refundId: 'r1', amount: '400', at } };
    parent.given(history).when({ type: 'EndRefund', refundId: 'r1', outcome: 'SETTLED', now }).then([settled]);
    expect(refundableRemainder(parentOf([...history, settled]))).to.equal('600');
    parent.given([...history, settled]).when({ type: 'EndRefund', refundId: 'r1', outcome: 'SETTLED', now }).then([]);
    const released: ParentRefundEvent = { type: 'PaymentRefundReleased', data: { paymentId: 'p1', refundId: 'r1', amount: '400', outcome: 'EXPIRED', at } };
    parent.given(history).when({ type: 'EndRefund', refundId: 'r1', outcome: 'EXPIRED', now }).then([released]);
    expect(refundableRemainder(parentOf([...history, released]))).to.equal('1000');
    // A child the parent reserved nothing for (funded from suspense) leaves the parent alone.
    parent.given(history).when({ type: 'EndRefund', refundId: 'other', outcome: 'SETTLED', now }).then([]);
  });

  it('records the acceptance with the end of a child that ended first; the answer after it changes nothing', () => {
    const history = [...settledPayment, requested('r1', '400')];
    const settled: ParentRefundEvent = { type: 'PaymentRefundSettled', data: { paymentId: 'p1', refundId: 'r1', amount: '400', at } };
    parent.given(history).when({ type: 'EndRefund', refundId: 'r1', outcome: 'SETTLED', now }).then([accepted('r1', '400'), settled]);
    parent.given([...history, accepted('r1', '400'), settled]).when({ type: 'AnswerRefund', refundId: 'r1', answer: { outcome: 'HELD' }, now }).then([]);
    expect(refundableRemainder(parentOf([...history, accepted('r1', '400'), settled]))).to.equal('600');
    const released: ParentRefundEvent = { type: 'PaymentRefundReleased', data: { paymentId: 'p1', refundId: 'r1', amount: '400', outcome: 'FAILED', at } };
    parent.given(history).when({ type: 'EndRefund', refundId: 'r1', outcome: 'FAILED', now }).then([accepted('r1', '400'), released]);
    expect(refundableRemainder(parentOf([...history, accepted('r1', '400'), released]))).to.equal('1000');
  });

  it('refuses the end of a refund the account refused', () => {
    const refused: ParentRefundEvent = { type: 'PaymentRefundRefused', data: { paymentId: 'p1', refundId: 'r1', amount: '400', refusal: 'INSUFFICIENT_FUNDS', detail: 'short', at } };
    parent.given([...settledPayment, requested('r1', '400'), refused]).when({ type: 'EndRefund', refundId: 'r1', outcome: 'SETTLED', now })
      .thenThrows('failedPrecondition', /r1 of payment p1 is REFUSED; it cannot end/);
  });

  it('leaves the payment\'s own state alone: its decider skips the refund events on its stream', () => {
    const history = [...settledPayment, requested('r1', '400'), accepted('r1', '400')] as PaymentEvent[];
    expect(foldEvents(paymentDecider, history)).to.deep.equal(foldEvents(paymentDecider, settledPayment));
  });

  it('never reserves more than the payment took, whatever the requests (property)', () => {
    fc.assert(fc.property(fc.array(fc.record({ amount: fc.option(fc.integer({ min: 1, max: 700 }), { nil: null }), refuse: fc.boolean(), end: fc.constantFrom('NONE', 'SETTLED', 'FAILED') }), { maxLength: 30 }), (requests) => {
      const history: ParentHistory = [...settledPayment];
      requests.forEach((r, i) => {
        const refundId = `r${i}`;
        let events: ParentRefundEvent[];
        try {
          events = parent.given(history).when(request(refundId, r.amount === null ? null : String(r.amount))).decided();
        } catch {
          return;
        }
        history.push(...events);
        const answer = r.refuse ? { outcome: 'REFUSED', refusal: 'INSUFFICIENT_FUNDS', detail: 'short' } as const : { outcome: 'HELD' } as const;
        history.push(...parent.given(history).when({ type: 'AnswerRefund', refundId, answer, now }).decided());
        if (!r.refuse && r.end !== 'NONE') history.push(...parent.given(history).when({ type: 'EndRefund', refundId, outcome: r.end as 'SETTLED' | 'FAILED', now }).decided());
        const state = parentOf(history);
        const reserved = [...state.refunds.values()].filter((x) => ['REQUESTED', 'ACCEPTED', 'SETTLED'].includes(x.state)).reduce((s, x) => s + Number(x.amount), 0);
        expect(reserved).to.equal(Number(state.reserved));
        expect(reserved).to.be.at.most(1000);
      });
    }));
  });
});

describe('refund of a deposit: its own stream decides the ceiling', () => {
  const deposit = { paymentId: 'p1', clientId: 'c1', totalAmount: '1000', currency: 'CLP', createdAt: at, externalId: 'sandbox:d1',
    provider: 'sandbox', providerDepositId: 'd1', reference: 'unknown', customerId: 'cu1', expiresAt: at,
    originator: { firstName: 'Ana', lastName: null, documentType: null, documentNumber: '1' } };
  const target = { accountId: 'a1', accountNumber: '100000000001', identityId: 'i1' };
  const purchase = { paymentId: 'p1', clientId: 'c1', externalId: 'sandbox:d1', totalAmount: '1000', currency: 'CLP', customerId: 'cu1', at };
  const waiting = [{ type: 'DepositReceived', data: deposit }, { type: 'PurchasePendingAssignment', data: { ...purchase, expiresAt: at } },
    { type: 'DepositAssignmentRequested', data: { paymentId: 'p1', clientId: 'c1', ...target, expectedAmount: null, at } }];
  const assignedDeposit = [...waiting,
    { type: 'DepositAssigned', data: { ...purchase, ...target, expectedAmount: '1000', reconciliationStatus: 'PAID', relatedPaymentId: null, creditEventId: 'credit-1' } },
    { type: 'PaymentSettled', data: { paymentId: 'p1', from: 'CREATED', to: 'SETTLED', at, clientId: 'c1', accountId: 'a1', currency: 'CLP',
      totalAmount: '1000', feeAmount: '0', netAmount: '1000', settlementBatchId: null, creditEventId: 'credit-1' } },
  ] as unknown as ParentHistory;

  it('reserves on an assigned deposit as on a payment, the account it was assigned to paying out', () => {
    parent.given(assignedDeposit).when(request('r1', '300')).then([requested('r1', '300')]);
    const state = parentOf([...assignedDeposit, requested('r1', '300')]);
    expect(state.payment).to.include({ accountId: 'a1', identityId: 'i1', identityEmail: null, customerId: 'cu1' });
    expect(refundableRemainder(state)).to.equal('700');
    parent.given([...assignedDeposit, requested('r1', '300')]).when(request('r2', '701')).thenThrows('failedPrecondition', /exceeds what is left .*: 700 CLP/);
  });

  it('refuses a deposit awaiting assignment or expired, and a companion child; another client\'s deposit is not found', () => {
    parent.given(waiting as unknown as ParentHistory).when(request('r1', '1')).thenThrows('failedPrecondition', /is CREATED; only a SETTLED payment can be refunded/);
    const expired = [...waiting.slice(0, 2), { type: 'PaymentExpired', data: { paymentId: 'p1', from: 'CREATED', to: 'EXPIRED', at, reason: 'EXPIRES_AT' } }];
    parent.given(expired as unknown as ParentHistory).when(request('r1', '1')).thenThrows('failedPrecondition', /is EXPIRED/);
    const companion = [{ type: 'DepositCompanionCreated', data: { paymentId: 'c2', clientId: 'c1', externalId: 'sandbox:d1:difference', parentPaymentId: 'p1',
      kind: 'OVERPAID', status: 'SETTLED', totalAmount: '200', currency: 'CLP', ...target, customerId: 'cu1', createdAt: at } }] as unknown as ParentHistory;
    parent.given(companion).when({ ...request('r1', '1') }).thenThrows('failedPrecondition', /holds the difference of deposit p1; refund the deposit instead/);
    parent.given(assignedDeposit).when({ ...request('r1', '1'), tenant: OTHER_CLIENT }).thenThrows('notFound', /^payment not found$/);
  });

  it('leaves the deposit\'s own state alone: its decider skips the refund events on its stream', () => {
    const history = [...assignedDeposit, requested('r1', '400'), accepted('r1', '400')] as unknown as DepositStreamEvent[];
    expect(foldEvents(depositDecider, history)).to.deep.equal(foldEvents(depositDecider, assignedDeposit as unknown as DepositStreamEvent[]));
  });
});

describe('account: a hold answered once', () => {
  const opened: AccountEvent = { type: 'AccountOpened', data: { accountId: 'a1', clientId: 'c1', identityId: 'i1', externalId: null, type: 'CHECKING',
    custody: 'PLATFORM', currency: 'CLP', name: null, accountNumber: '100000000001', accountHolder: null, country: 'CHL', parentId: null, openedAt: at } };
  const funded: AccountEvent[] = [opened, { type: 'AccountAdjusted', data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', amount: '500', reason: 'seed', adjustmentId: 'adj', adjustedAt: at } }];
  const account = DeciderSpecification.for(accountDecider, asOwner<AccountCommand>);
  const hold = (amount: string): AsOwner<AccountCommand> => ({ type: 'RequestHold', holdId: 'h1', amount, reason: 'refund', now });
  const base = { accountId: 'a1', clientId: 'c1', currency: 'CLP', holdId: 'h1', at };

  it('holds within the available funds, with an id derived from the hold', () => {
    const held = account.given(funded).when(hold('500')).decided();
    expect(held).to.deep.equal([{ type: 'AccountFundsHeld', id: holdAnswerId('a1', 'h1'), data: { ...base, amount: '500', reason: 'refund' } }]);
    expect(availableFunds(foldEvents(accountDecider, [...funded, ...held]))).to.equal('0');
  });

  it('records a refusal when the funds are short or the account is not ACTIVE, and repeats its first answer', () => {
    const short = account.given(funded).when(hold('501')).decided();
    expect(short).to.deep.equal([{ type: 'AccountHoldRefused', id: holdAnswerId('a1', 'h1'),
      data: { ...base, amount: '501', refusal: 'INSUFFICIENT_FUNDS', status: 'ACTIVE', availableFunds: '500' } }]);
    // Funds that arrive later do not change the answer.
    const later: AccountEvent = { type: 'AccountAdjusted', data: { accountId: 'a1', clientId: 'c1', currency: 'CLP', amount: '1000', reason: 'more', adjustmentId: 'adj2', adjustedAt: at } };
    account.given([...funded, ...short, later]).when(hold('501')).then([]);
    const blocked: AccountEvent = { type: 'AccountStatusChanged', data: { accountId: 'a1', from: 'ACTIVE', to: 'BLOCKED', changedAt: at } };
    expect(account.given([...funded, blocked]).when(hold('1')).decided()[0]).to.deep.include({ type: 'AccountHoldRefused' });
    expect((account.given([...funded, blocked]).when(hold('1')).decided()[0]!.data as { refusal: string }).refusal).to.equal('ACCOUNT_NOT_ACTIVE');
    // A refused hold cannot be debited or released.
    account.given([...funded, ...short]).when({ type: 'DebitHold', holdId: 'h1', now }).thenThrows('failedPrecondition', /REFUSED/);
  });
});

describe('refund child: its lifecycle', () => {
  const fromAccount: Omit<RefundCreatedData, 'createdAt'> = {
    refundId: 'r1', parentPaymentId: 'p1', clientId: 'c1', identityId: 'i1', identityEmail: null, customerId: null, totalAmount: '400',
    currency: 'CLP', description: 'damaged', funding: { source: 'ACCOUNT', accountId: 'a1', holdId: 'r1' },
  };
  const fromSuspense: Omit<RefundCreatedData, 'createdAt'> = { ...fromAccount, refundId: 'r2', parentPaymentId: 'deposit-1', funding: { source: 'SUSPENSE' } };
  const child = DeciderSpecification.for(refundDecider, asOwner<RefundCommand>);
  const created = (refund: Omit<RefundCreatedData, 'createdAt'>): RefundEvent => ({ type: 'RefundCreated', data: { ...refund, createdAt: at } });
  const end = (outcome: 'SETTLED' | 'FAILED' | 'UNSETTLED' | 'EXPIRED'): AsOwner<RefundCommand> => ({ type: 'EndRefund', outcome, reason: 'why', now });

  it('is created RECEIVED once; creating it again (the same step re-run) changes nothing', () => {
    child.given([]).when({ type: 'CreateRefund', refund: fromAccount, now }).then([created(fromAccount)]);
    child.given([created(fromAccount)]).when({ type: 'CreateRefund', refund: fromAccount, now }).then([]);
    expect(foldEvents(refundDecider, [created(fromAccount)]).status).to.equal('RECEIVED');
  });

  it('moves once from RECEIVED to each end, carrying its funding; the same end again changes nothing, another is refused', () => {
    const data = { refundId: 'r1', parentPaymentId: 'p1', clientId: 'c1', currency: 'CLP', amount: '400', fundingSource: 'ACCOUNT' as const, accountId: 'a1',
      identityId: 'i1', identityEmail: null, customerId: null, from: 'RECEIVED', at };
    child.given([created(fromAccount)]).when(end('SETTLED')).then([{ type: 'RefundSettled', data: { ...data, to: 'SETTLED' } }]);
    child.given([created(fromAccount)]).when(end('FAILED')).then([{ type: 'RefundFailed', data: { ...data, to: 'FAILED', reason: 'why' } }]);
    child.given([created(fromAccount)]).when(end('UNSETTLED')).then([{ type: 'RefundUnsettled', data: { ...data, to: 'UNSETTLED', reason: 'why' } }]);
    child.given([created(fromAccount)]).when(end('EXPIRED')).then([{ type: 'RefundExpired', data: { ...data, to: 'EXPIRED', reason: 'why' } }]);
    const settled = [created(fromAccount), ...child.given([created(fromAccount)]).when(end('SETTLED')).decided()];
    child.given(settled).when(end('SETTLED')).then([]);
    child.given(settled).when(end('FAILED')).thenThrows('failedPrecondition', /refund r1 is SETTLED; it cannot become FAILED/);
  });

  it('answers another client\'s refund and a missing one as not found', () => {
    child.given([created(fromAccount)]).when({ ...end('SETTLED'), tenant: OTHER_CLIENT }).thenThrows('notFound', /^refund not found$/);
    child.given([]).when(end('SETTLED')).thenThrows('notFound', /^refund not found$/);
  });

  it('funded from suspense: no account named; settled, the ledger moves suspense → refunds payable → clearing', () => {
    const [settled] = child.given([created(fromSuspense)]).when(end('SETTLED')).decided();
    expect(settled!.data).to.include({ fundingSource: 'SUSPENSE', accountId: null, to: 'SETTLED' });
    const recorded: RecordedEvent = { id: randomUUID(), stream: 'refund-r2', revision: 1n, position: { commit: 1n, prepare: 1n }, type: settled!.type,
      schemaVersion: 1, data: settled!.data, metadata: {}, recordedAt: now };
    expect(entriesFor(recorded, registered.postings).map((e) => e.lines.map((l) => `${l.accountId} ${l.amount}`))).to.deep.equal([
      ['system:CLP:suspense -400', 'system:CLP:refunds_payable 400'],
      ['system:CLP:refunds_payable -400', 'system:CLP:clearing 400'],
    ]);
    // Failed, the money stays where it was: no entry.
    const [failed] = child.given([created(fromSuspense)]).when(end('FAILED')).decided();
    expect(entriesFor({ ...recorded, type: failed!.type, data: failed!.data }, registered.postings)).to.deep.equal([]);
  });

  it('funded from an account: settled, the ledger pays refunds payable out to clearing (the hold\'s debit filled it)', () => {
    const [settled] = child.given([created(fromAccount)]).when(end('SETTLED')).decided();
    const recorded: RecordedEvent = { id: randomUUID(), stream: 'refund-r1', revision: 1n, position: { commit: 1n, prepare: 1n }, type: settled!.type,
      schemaVersion: 1, data: settled!.data, metadata: {}, recordedAt: now };
    expect(entriesFor(recorded, registered.postings).map((e) => e.lines.map((l) => `${l.accountId} ${l.amount}`))).to.deep.equal([
      ['system:CLP:refunds_payable -400', 'system:CLP:clearing 400'],
    ]);
  });
});
