/**
 * The payment decider (the machine drawn in src/payments/decider.ts): given events / when command / then events or error.
 *
 * 1. Every legal move spelled out with its exact events.
 * 2. A table of which (status, flow, command) the machine allows, iterated over every combination, so a cell
 *    nobody thought about still gets asserted (allowed → the target status; otherwise refused naming the status).
 * 3. A fast-check property over random command sequences.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { foldEvents } from '../src/domain/decider.ts';
import { DomainError } from '../src/domain/errors.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';
import {
  MAX_REVIEW_DOCUMENTS, paymentDecider, type AccountAnswer, needsAccountAnswer, type PaymentCommand as TenantCommand, type PaymentState, type Screening,
} from '../src/payments/decider.ts';
import {
  TERMINAL_STATUSES, type PaymentCreatedData, type PaymentEvent, type PaymentFlow, type PaymentStatus,
} from '../src/payments/events.ts';

const now = new Date('2026-03-04T05:06:07.000Z');
const at = now.toISOString();
const PAST = '2026-03-04T05:00:00.000Z'; // a deadline already gone at `now`
const SOON = '2026-03-04T05:30:00.000Z';
const LATER = '2026-03-04T06:00:00.000Z';

/** Commands of the payment's own client unless they name another tenant. */
type PaymentCommand = AsOwner<TenantCommand>;
type Payment = Omit<PaymentCreatedData, 'createdAt'>;
const base: Payment = {
  paymentId: 'p1', clientId: 'c1', externalId: 'order-1', identityId: 'i1', identityExternalId: null, identityEmail: null,
  accountId: 'a1', accountNumber: '100000000001', totalAmount: '10000', currency: 'CLP', description: null, product: null,
  type: 'CHECKOUT', purchaseAmount: null, purchaseCurrency: null, exchange: null, origins: [], destinations: [],
  fees: [{ name: 'processing', type: 'FIXED', value: '250', amount: '250', currency: 'CLP' }], feeAmount: '250',
  flow: 'CARD', method: 'CARD', settlement: 'INSTANT', expiresAt: null, customerId: null, checkoutSessionId: null,
};
const card = (overrides: Partial<Payment> = {}): Payment => ({ ...base, ...overrides });
const push = (overrides: Partial<Payment> = {}): Payment => ({ ...base, flow: 'PUSH', method: 'PIX', ...overrides });
const quote = (quoteExpiresAt: string): Payment['exchange'] =>
  ({ product: 'CLP:USDC', rate: '0.001', marketValue: '10.000000', quotedAt: PAST, quoteExpiresAt });

/** One command per case; ResolveReview has two. Fixed arguments so the table and the property can share them. */
const COMMANDS = {
  CreatePayment: { type: 'CreatePayment', payment: card(), screening: { outcome: 'CLEAR' }, now },
  MarkPending: { type: 'MarkPending', now },
  Authorize: { type: 'Authorize', now },
  Capture: { type: 'Capture', now },
  Reject: { type: 'Reject', reason: 'card declined', now },
  Receive: { type: 'Receive', receivedAmount: '10000', now },
  Settle: { type: 'Settle', batchId: 'batch-1', account: { outcome: 'CREDITED', creditEventId: 'credit-1', settlementBatchId: 'batch-1' }, now },
  Expire: { type: 'Expire', now },
  RequireReview: { type: 'RequireReview', reason: 'manual check', now },
  Approve: { type: 'ResolveReview', decision: 'APPROVED', actor: 'ops@example.com', now },
  RejectReview: { type: 'ResolveReview', decision: 'REJECTED', actor: 'ops@example.com', now },
  AttachDocument: { type: 'AttachDocument', document: { documentId: 'd1', type: 'INVOICE', url: null, contentType: null }, now },
} satisfies Record<string, PaymentCommand>;
type CommandName = keyof typeof COMMANDS;
const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];
// A command type added to PaymentCommand but missing above stops the build, so the table cannot silently skip it.
type Uncovered = Exclude<PaymentCommand['type'], (typeof COMMANDS)[CommandName]['type']>;
const everyCommandCovered: [Uncovered] extends [never] ? true : Uncovered = true;
void everyCommandCovered;
const { Authorize: A, Capture: C, Receive: R, Settle: S, MarkPending: P, Reject: X, Expire: E, RequireReview: RR } = COMMANDS;
/** The account's answers, as the settlement process manager passes them on. */
const credited = (settlementBatchId: string | null): AccountAnswer => ({ outcome: 'CREDITED', creditEventId: 'credit-1', settlementBatchId });
const refusedBy = (status: string, settlementBatchId: string | null): AccountAnswer => ({ outcome: 'REFUSED', status, settlementBatchId });
/** Settling an INSTANT payment at once, with the account's answer. */
const now1 = (account: AccountAnswer | null): PaymentCommand => ({ type: 'Settle', batchId: null, account, now });

const fold = (history: PaymentEvent[]) => foldEvents(paymentDecider, history);
const { given } = DeciderSpecification.for(paymentDecider, asOwner<TenantCommand>);
/** Histories are built by the decider itself; each step it takes is pinned by the explicit tests below. */
function historyOf(payment: Payment, ...commands: PaymentCommand[]): PaymentEvent[] {
  const history: PaymentEvent[] = [];
  for (const command of [{ type: 'CreatePayment', payment, screening: { outcome: 'CLEAR' }, now } as const, ...commands]) {
    history.push(...given(history).when(command).decided());
  }
  return history;
}

const created = (payment: Payment): PaymentEvent => ({ type: 'PaymentCreated', data: { ...payment, createdAt: at } });
const moved = (from: PaymentStatus, to: PaymentStatus) => ({ paymentId: 'p1', from, to, at });
const received = (from: PaymentStatus, amount: string, currency = 'CLP'): PaymentEvent =>
  ({ type: 'PaymentReceived', data: { ...moved(from, 'RECEIVED'), receivedAmount: amount, currency } });
const settled = (p: Payment, netAmount: string, settlementBatchId: string | null = null): PaymentEvent => ({ type: 'PaymentSettled', data: {
  ...moved('RECEIVED', 'SETTLED'), clientId: 'c1', accountId: 'a1', currency: p.currency, totalAmount: p.totalAmount,
  feeAmount: p.feeAmount, netAmount, settlementBatchId, creditEventId: 'credit-1' } });
const unsettled = (receivedAmount: string, reason: 'ACCOUNT_NOT_ACTIVE' | 'AMOUNT_MISMATCH', detail: string, settlementBatchId: string | null = null): PaymentEvent =>
  ({ type: 'PaymentUnsettled', data: { ...moved('RECEIVED', 'UNSETTLED'), clientId: 'c1', currency: 'CLP', receivedAmount, reason, detail, settlementBatchId } });

describe('payment decider', () => {
  describe('legal moves, event by event', () => {
    it('creates once, and screening decides whether it starts failed or under review', () => {
      const clear = given([]).when(COMMANDS.CreatePayment).decided();
      expect(clear).to.deep.equal([created(card())]);
      const screened = (screening: Screening) => given([]).when({ type: 'CreatePayment', payment: card(), screening, now }).decided();
      expect(screened({ outcome: 'BLOCK', reason: 'sanctioned' })).to.deep.equal([created(card()),
        { type: 'PaymentFailed', data: { ...moved('CREATED', 'FAILED'), reason: 'sanctioned' } }]);
      expect(screened({ outcome: 'REVIEW', reason: 'over threshold' })).to.deep.equal([created(card()),
        { type: 'PaymentReviewRequired', data: { ...moved('CREATED', 'REQUIRES_REVIEW'), reason: 'over threshold' } }]);
      // The stream's first event is what makes externalId unique; a second create is a conflict whatever the status.
      given(clear).when(COMMANDS.CreatePayment).thenThrows('alreadyExists', /"order-1" already exists/);
    });

    it('answers notFound to every other command on an empty history', () => {
      for (const name of COMMAND_NAMES.filter((n) => n !== 'CreatePayment')) given([]).when(COMMANDS[name]).thenThrows('notFound', /not found/);
    });

    it('answers notFound to every command of another client, and lets operators, the provider and the jobs (any tenant) act', () => {
      const history = historyOf(card());
      for (const name of COMMAND_NAMES.filter((n) => n !== 'CreatePayment')) {
        given(history).when({ ...COMMANDS[name], tenant: OTHER_CLIENT }).thenThrows('notFound', /^payment not found$/);
      }
      given(history).when({ ...A, tenant: 'any' }).then([{ type: 'PaymentAuthorized', data: moved('CREATED', 'AUTHORIZED') }]);
    });

    it('card: authorizes, captures, then receives', () => {
      const t1 = card({ settlement: 'T+1' });
      given(historyOf(t1)).when(A).then([{ type: 'PaymentAuthorized', data: moved('CREATED', 'AUTHORIZED') }]);
      given(historyOf(t1, A)).when(C).then([{ type: 'PaymentCaptured', data: moved('AUTHORIZED', 'CAPTURED') }]);
      given(historyOf(t1, A, C)).when(R).then([received('CAPTURED', '10000')]);
    });

    it('push: waits for the payer only on the push flow, and receives from CREATED or PENDING', () => {
      const t1 = push({ settlement: 'T+1' });
      given(historyOf(t1)).when(P).then([{ type: 'PaymentPending', data: moved('CREATED', 'PENDING') }]);
      given(historyOf(t1)).when(R).then([received('CREATED', '10000')]);
      given(historyOf(t1, P)).when(R).then([received('PENDING', '10000')]);
      given(historyOf(card())).when(P).thenThrows('failedPrecondition', /is CREATED; it cannot wait for the payer/);
    });

    it('refuses to authorize or capture a push payment, naming card payments', () => {
      given(historyOf(push())).when(A).thenThrows('failedPrecondition', /paid by PIX; only card payments are authorized/);
      given(historyOf(push({ method: null }))).when(C).thenThrows('failedPrecondition', /paid by a push transfer; only card payments are captured/);
    });

    it('INSTANT: receiving only receives; settling at once records the account credit, net = total − fee at the scale', () => {
      given(historyOf(card(), A, C)).when(R).then([received('CAPTURED', '10000')]);
      given(historyOf(card(), A, C, R)).when(now1(credited(null))).then([settled(card(), '9750')]);
      // USD and BRL keep two decimals: 10.50 − 0.50 is "10.00", not "10".
      const usd = push({ currency: 'USD', totalAmount: '10.50', feeAmount: '0.50' });
      given(historyOf(usd, { ...R, receivedAmount: '10.50' })).when(now1(credited(null))).then([settled(usd, '10.00')]);
      const brl = push({ currency: 'BRL', totalAmount: '100.00', feeAmount: '2.35' });
      given(historyOf(brl, { ...R, receivedAmount: '100.00' })).when(now1(credited(null))).then([settled(brl, '97.65')]);
      // Amounts compare as decimals, not as text.
      given(historyOf(usd, { ...R, receivedAmount: '10.5' })).when(now1(credited(null))).then([settled(usd, '10.00')]);
    });

    it('INSTANT: an account that refused or a different amount leaves the funds UNSETTLED, with why', () => {
      given(historyOf(push(), R)).when(now1(refusedBy('BLOCKED', null))).then(
        [unsettled('10000', 'ACCOUNT_NOT_ACTIVE', 'destination account 100000000001 is BLOCKED')]);
      given(historyOf(push(), R)).when(now1(refusedBy('CLOSED', null))).then(
        [unsettled('10000', 'ACCOUNT_NOT_ACTIVE', 'destination account 100000000001 is CLOSED')]);
      // A different amount is never offered to the account: it is unsettled without its answer.
      given(historyOf(push(), { ...R, receivedAmount: '9000' })).when(now1(null)).then(
        [unsettled('9000', 'AMOUNT_MISMATCH', 'received 9000 CLP, expected 10000 CLP')]);
    });

    it('asks the account only when the amount received is the amount expected, and cannot settle without its answer', () => {
      expect(needsAccountAnswer(fold(historyOf(push(), R)))).to.equal(true);
      expect(needsAccountAnswer(fold(historyOf(push(), { ...R, receivedAmount: '9000' })))).to.equal(false);
      expect(needsAccountAnswer(fold(historyOf(push())))).to.equal(false);
      expect(() => given(historyOf(push(), R)).when(now1(null)).decided()).to.throw(/needs its destination account's answer/);
    });

    it('T+1: the batch reconciles what was received, stamping the batch the account answered', () => {
      const t1 = push({ settlement: 'T+1' });
      given(historyOf(t1, R)).when(S).then([settled(t1, '9750', 'batch-1')]);
      given(historyOf(t1, R)).when({ ...S, account: refusedBy('PENDING', 'batch-1') }).then(
        [unsettled('10000', 'ACCOUNT_NOT_ACTIVE', 'destination account 100000000001 is PENDING', 'batch-1')]);
      // Two batch runs raced: the account answered the first, and that batch is the one recorded.
      given(historyOf(t1, R)).when({ ...S, batchId: 'batch-2' }).then([settled(t1, '9750', 'batch-1')]);
      // The amount reconciled is the one received earlier, not anything in the Settle command.
      given(historyOf(t1, { ...R, receivedAmount: '9999' })).when({ ...S, account: null }).then(
        [unsettled('9999', 'AMOUNT_MISMATCH', 'received 9999 CLP, expected 10000 CLP', 'batch-1')]);
      given(historyOf(t1)).when(S).thenThrows('failedPrecondition', /is CREATED; it cannot be settled/);
      given(historyOf(t1, R, S)).when(S).thenThrows('failedPrecondition', /is SETTLED; it cannot be settled/);
    });

    it('settles INSTANT payments at once and the others only in a batch', () => {
      given(historyOf(push(), R)).when(S).thenThrows('failedPrecondition', /settles INSTANT, not in a batch/);
      given(historyOf(push({ settlement: 'T+2' }), R)).when(now1(credited(null))).thenThrows('failedPrecondition', /settles T\+2, in a settlement batch/);
    });

    it('fails on a provider rejection before RECEIVED', () => {
      const failed = (from: PaymentStatus): PaymentEvent => ({ type: 'PaymentFailed', data: { ...moved(from, 'FAILED'), reason: 'card declined' } });
      given(historyOf(card())).when(X).then([failed('CREATED')]);
      given(historyOf(card(), A)).when(X).then([failed('AUTHORIZED')]);
      given(historyOf(card(), A, C)).when(X).then([failed('CAPTURED')]);
      given(historyOf(push(), P)).when(X).then([failed('PENDING')]);
    });

    it('expires at the earlier of expiresAt and the quote end, with that reason', () => {
      const expired = (from: PaymentStatus, reason: 'EXPIRES_AT' | 'QUOTE_EXPIRED'): PaymentEvent =>
        ({ type: 'PaymentExpired', data: { ...moved(from, 'EXPIRED'), reason } });
      given(historyOf(push({ expiresAt: PAST }))).when(E).then([expired('CREATED', 'EXPIRES_AT')]);
      given(historyOf(push({ exchange: quote(PAST) }))).when(E).then([expired('CREATED', 'QUOTE_EXPIRED')]);
      // Only the earlier deadline has to have passed; the reason is the earlier one, whichever field it is.
      given(historyOf(push({ expiresAt: LATER, exchange: quote(PAST) }), P)).when(E).then([expired('PENDING', 'QUOTE_EXPIRED')]);
      given(historyOf(card({ expiresAt: PAST, exchange: quote(LATER) }), A, C)).when(E).then([expired('CAPTURED', 'EXPIRES_AT')]);
      // The deadline itself counts as passed (the decider refuses only while expiry.at > now).
      given(historyOf(push({ expiresAt: at }))).when(E).then([expired('CREATED', 'EXPIRES_AT')]);
      const both = push({ expiresAt: SOON, exchange: quote(PAST) });
      given(historyOf(both)).when({ ...E, now: new Date(LATER) }).then([{ type: 'PaymentExpired',
        data: { ...moved('CREATED', 'EXPIRED'), at: LATER, reason: 'QUOTE_EXPIRED' } }]);
    });

    it('refuses to expire before the deadline, without one, or once RECEIVED', () => {
      given(historyOf(push({ expiresAt: LATER, exchange: quote(SOON) }))).when(E).thenThrows('failedPrecondition', new RegExp(`payable until ${SOON}`));
      given(historyOf(push())).when(E).thenThrows('failedPrecondition', /has no expiry/);
      given(historyOf(push({ expiresAt: PAST, settlement: 'T+1' }), R)).when(E).thenThrows('failedPrecondition', /is RECEIVED; it cannot expire/);
    });

    it('approving a review returns to the status it had; rejecting it fails the payment', () => {
      const cases: Array<[PaymentStatus, PaymentEvent[]]> = [
        ['CREATED', historyOf(card())], ['AUTHORIZED', historyOf(card(), A)], ['CAPTURED', historyOf(card(), A, C)],
        ['PENDING', historyOf(push(), P)],
      ];
      for (const [status, history] of cases) {
        const review: PaymentEvent = { type: 'PaymentReviewRequired', data: { ...moved(status, 'REQUIRES_REVIEW'), reason: 'manual check' } };
        given(history).when(RR).then([review]);
        given([...history, review]).when(COMMANDS.Approve).then(
          [{ type: 'PaymentReviewApproved', data: { ...moved('REQUIRES_REVIEW', status), actor: 'ops@example.com' } }]);
        given([...history, review]).when(COMMANDS.RejectReview).then(
          [{ type: 'PaymentReviewRejected', data: { ...moved('REQUIRES_REVIEW', 'FAILED'), actor: 'ops@example.com' } }]);
      }
      // Delivered funds are left to reconciliation: a rejected review would strand them outside the ledger.
      given(historyOf(push({ settlement: 'T+1' }), R)).when(RR).thenThrows('failedPrecondition', /is RECEIVED; it cannot be put under review/);
    });

    it('a provider must report a well-formed, positive amount at the currency scale', () => {
      for (const bad of ['9999.5', '-5', '0', 'ten']) {
        given(historyOf(push({ settlement: 'T+1' }))).when({ ...R, receivedAmount: bad }).thenThrows('invalid', /receivedAmount/);
      }
    });

    it('a payment under review can still expire', () => {
      given(historyOf(push({ expiresAt: PAST }), P, RR)).when(E).then(
        [{ type: 'PaymentExpired', data: { ...moved('REQUIRES_REVIEW', 'EXPIRED'), reason: 'EXPIRES_AT' } }]);
    });

    it('takes review documents only under review, at most MAX_REVIEW_DOCUMENTS', () => {
      const doc = (i: number): PaymentCommand => ({ type: 'AttachDocument', now, document: { documentId: `d${i}`, type: 'ID', url: `https://x/${i}`, contentType: 'image/png' } });
      const history = historyOf(card(), RR);
      given(history).when(doc(1)).then([{ type: 'PaymentDocumentAttached',
        data: { paymentId: 'p1', document: { documentId: 'd1', type: 'ID', url: 'https://x/1', contentType: 'image/png', attachedAt: at } } }]);
      for (let i = 1; i <= MAX_REVIEW_DOCUMENTS; i++) history.push(...given(history).when(doc(i)).decided());
      given(history).when(doc(21)).thenThrows('failedPrecondition', /already has 20 review documents/);
      given(historyOf(card())).when(doc(1)).thenThrows('failedPrecondition', /is CREATED; it cannot take review documents/);
    });
  });

  describe('the transition table', () => {
    const RV = 'REQUIRES_REVIEW';
    const settleBlocked: PaymentCommand = { ...S, account: refusedBy('BLOCKED', 'batch-1') };
    type Row = [flow: PaymentFlow, path: PaymentCommand[], allowed: Partial<Record<CommandName, PaymentStatus>>];
    /**
     * The source of truth: for each status a flow can reach (and each status a review can resume), the commands
     * allowed and where they lead. Every command not listed must be refused. T+1 settlement, so RECEIVED rests;
     * every payment has an expiresAt already past, so Expire is decided by status alone.
     */
    const TABLE: Row[] = [
      ['CARD', [], { Authorize: 'AUTHORIZED', Reject: 'FAILED', Expire: 'EXPIRED', RequireReview: RV }],
      ['CARD', [A], { Capture: 'CAPTURED', Reject: 'FAILED', Expire: 'EXPIRED', RequireReview: RV }],
      ['CARD', [A, C], { Receive: 'RECEIVED', Reject: 'FAILED', Expire: 'EXPIRED', RequireReview: RV }],
      ['CARD', [A, C, R], { Settle: 'SETTLED' }],
      ['CARD', [A, C, R, S], {}],
      ['CARD', [A, C, R, settleBlocked], {}],
      ['CARD', [E], {}],
      ['CARD', [X], {}],
      ['CARD', [RR], { Approve: 'CREATED', RejectReview: 'FAILED', Expire: 'EXPIRED', AttachDocument: RV }],
      ['CARD', [A, RR], { Approve: 'AUTHORIZED', RejectReview: 'FAILED', Expire: 'EXPIRED', AttachDocument: RV }],
      ['CARD', [A, C, RR], { Approve: 'CAPTURED', RejectReview: 'FAILED', Expire: 'EXPIRED', AttachDocument: RV }],
      ['PUSH', [], { MarkPending: 'PENDING', Receive: 'RECEIVED', Reject: 'FAILED', Expire: 'EXPIRED', RequireReview: RV }],
      ['PUSH', [P], { Receive: 'RECEIVED', Reject: 'FAILED', Expire: 'EXPIRED', RequireReview: RV }],
      ['PUSH', [R], { Settle: 'SETTLED' }],
      ['PUSH', [R, S], {}],
      ['PUSH', [R, settleBlocked], {}],
      ['PUSH', [E], {}],
      ['PUSH', [X], {}],
      ['PUSH', [RR], { Approve: 'CREATED', RejectReview: 'FAILED', Expire: 'EXPIRED', AttachDocument: RV }],
      ['PUSH', [P, RR], { Approve: 'PENDING', RejectReview: 'FAILED', Expire: 'EXPIRED', AttachDocument: RV }],
    ];
    const REACHABLE: PaymentStatus[] = ['CREATED', 'PENDING', 'AUTHORIZED', 'CAPTURED', 'RECEIVED', 'SETTLED', 'UNSETTLED', 'EXPIRED', 'FAILED', RV];
    const paymentFor = (flow: PaymentFlow) => (flow === 'CARD' ? card : push)({ settlement: 'T+1', expiresAt: PAST });
    const rows = TABLE.map(([flow, path, allowed]) => {
      const history = historyOf(paymentFor(flow), ...path);
      const state = fold(history);
      return { flow, history, allowed, status: state.status!, label: `${flow} ${state.status}${state.resumeStatus ? ` (resumes ${state.resumeStatus})` : ''}` };
    });

    it('covers every reachable status, in both flows where the flow can reach it', () => {
      expect([...new Set(rows.map((r) => r.status))]).to.have.members(REACHABLE);
      const push = new Set(rows.filter((r) => r.flow === 'PUSH').map((r) => r.status));
      expect(REACHABLE.filter((s) => !push.has(s))).to.deep.equal(['AUTHORIZED', 'CAPTURED']);
    });

    for (const row of rows) {
      it(`${row.label}: every command goes where the table says or is refused`, () => {
        const wrong: string[] = [];
        for (const name of COMMAND_NAMES) {
          const target = row.allowed[name];
          let outcome: string;
          try {
            const events = given(row.history).when(COMMANDS[name]).decided();
            outcome = `→ ${fold([...row.history, ...events]).status}`;
          } catch (error) {
            if (!(error instanceof DomainError)) throw error;
            outcome = `${error.kind}: ${error.message}`;
          }
          // What a refusal must say: the status, except where a rule that is not about status refuses first.
          const refusal = name === 'CreatePayment' ? /^alreadyExists: /
            : row.flow === 'PUSH' && (name === 'Authorize' || name === 'Capture') ? /^failedPrecondition: .*only card payments/
            : new RegExp(`^failedPrecondition: payment p1 is ${row.status};`);
          const ok = target ? outcome === `→ ${target}` : refusal.test(outcome);
          if (!ok) wrong.push(`${name}: expected ${target ? `→ ${target}` : refusal}, got ${outcome}`);
        }
        expect(wrong).to.deep.equal([]);
      });
    }
  });

  describe('properties', () => {
    const payment = fc.record({
      flow: fc.constantFrom<PaymentFlow>('CARD', 'PUSH'),
      settlement: fc.constantFrom<Payment['settlement']>('INSTANT', 'T+1', 'T+2'),
      expiresAt: fc.constantFrom(null, PAST, LATER),
      exchange: fc.constantFrom(null, quote(SOON), quote(LATER)),
    }).map((p) => (p.flow === 'CARD' ? card : push)(p));
    const screening = fc.constantFrom<Screening>({ outcome: 'CLEAR' }, { outcome: 'REVIEW', reason: 'r' }, { outcome: 'BLOCK', reason: 'b' });
    // Commands that end a payment are drawn less often; otherwise most runs die before reaching a review off the
    // happy path (e.g. AUTHORIZED → review → approve).
    const ENDING: ReadonlySet<CommandName> = new Set(['Reject', 'RejectReview', 'Expire', 'Receive', 'Settle']);
    const VARIANTS: Partial<Record<CommandName, fc.Arbitrary<PaymentCommand>>> = {
      Receive: fc.constantFrom('10000', '9000').map((receivedAmount) => ({ ...R, receivedAmount })),
      Settle: fc.record({
        batchId: fc.constantFrom(null, 'batch-1'),
        account: fc.constantFrom<AccountAnswer>(credited('batch-1'), refusedBy('BLOCKED', null), refusedBy('CLOSED', 'batch-1')),
      }).map((settle) => ({ ...S, ...settle })),
      Expire: fc.constantFrom(now, new Date(SOON), new Date('2026-03-05T00:00:00.000Z')).map((moment) => ({ ...E, now: moment })),
    };
    const command = fc.oneof(...COMMAND_NAMES.map((n) =>
      ({ weight: ENDING.has(n) ? 1 : 4, arbitrary: VARIANTS[n] ?? fc.constant<PaymentCommand>(COMMANDS[n]) })));

    it('never leaves a terminal status; every move starts where the state is; approval returns to the pre-review status', () => {
      fc.assert(fc.property(payment, screening, fc.array(command, { maxLength: 30, size: 'max' }), (p, screen, commands) => {
        let state: PaymentState = paymentDecider.initialState;
        let preReview: PaymentStatus | null = null;
        const apply = (events: PaymentEvent[]) => {
          for (const event of events) {
            if ('from' in event.data) expect(event.data.from, `${event.type}.from`).to.equal(state.status);
            if (event.type === 'PaymentReviewRequired') preReview = event.data.from;
            if (event.type === 'PaymentReviewApproved') expect(event.data.to, 'approved back to').to.equal(preReview);
            state = paymentDecider.evolve(state, event);
          }
        };
        apply(given([]).when({ type: 'CreatePayment', payment: p, screening: screen, now }).decided());
        for (const next of commands) {
          const before = state.status!;
          let events: PaymentEvent[];
          try {
            events = paymentDecider.decide(asOwner<TenantCommand>(next), state);
          } catch (error) {
            // Once created, the machine only ever refuses on preconditions (or the duplicate create).
            expect(error).to.be.instanceOf(DomainError);
            expect((error as DomainError).kind).to.equal(next.type === 'CreatePayment' ? 'alreadyExists' : 'failedPrecondition');
            continue;
          }
          expect(TERMINAL_STATUSES.has(before), `${next.type} accepted in terminal ${before}`).to.equal(false);
          apply(events);
        }
      }), { numRuns: 3000 });
    });
  });
});
