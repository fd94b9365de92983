/**
 * The checkout context without HTTP: the amounts and taxes against a model in bigint minor units (fast-check),
 * and the session's and link's deciders, given events / when command / then events or error.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { computeTotals, type ItemInput } from '../src/checkout/amounts.ts';
import { paymentDestinations } from '../src/checkout/handlers.ts';
import { foldEvents } from '../src/domain/decider.ts';
import { DomainError } from '../src/domain/errors.ts';
import {
  effectiveStatus, linkActive, linkDecider, sessionDecider, type LinkCommand, type SessionCommand, type SessionState,
} from '../src/checkout/decider.ts';
import type { CheckoutSessionCreatedData, LinkEvent, PaymentLinkCreatedData, SessionEvent, SessionStatus } from '../src/checkout/events.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

const SCALES = { CLP: 0, USD: 2, USDC: 6 } as const;
type ModelCurrency = keyof typeof SCALES;

/** `minor` units of `currency` as its canonical decimal string. */
function text(minor: bigint, currency: ModelCurrency): string {
  const scale = SCALES[currency];
  if (scale === 0) return minor.toString();
  const digits = minor.toString().padStart(scale + 1, '0');
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The model of a PERCENTAGE tax: preTax × percent, percent in hundredths, rounded half-up to a minor unit. */
function percentTax(preTaxMinor: bigint, percentHundredths: bigint): bigint {
  const product = preTaxMinor * percentHundredths;
  const quotient = product / 10_000n;
  return 2n * (product % 10_000n) >= 10_000n ? quotient + 1n : quotient;
}

const modelItem = fc.record({
  preTax: fc.bigInt({ min: 0n, max: 10n ** 12n }),
  tax: fc.oneof(
    fc.constant(null),
    fc.record({ type: fc.constant('FIXED' as const), minor: fc.bigInt({ min: 0n, max: 10n ** 9n }) }),
    fc.record({ type: fc.constant('PERCENTAGE' as const), hundredths: fc.bigInt({ min: 0n, max: 10_000n }) }),
  ),
});

describe('checkout amounts, against a model in minor units', () => {
  it('each item is preTaxAmount + tax (FIXED as sent, PERCENTAGE half-up at the scale); the session sums them', () => {
    fc.assert(fc.property(fc.constantFrom(...Object.keys(SCALES) as ModelCurrency[]), fc.array(modelItem, { minLength: 1, maxLength: 8 }), (currency, items) => {
      let preTaxSum = 0n;
      let totalSum = 0n;
      const inputs: ItemInput[] = items.map((item, n) => {
        const tax = item.tax === null ? 0n : item.tax.type === 'FIXED' ? item.tax.minor : percentTax(item.preTax, item.tax.hundredths);
        preTaxSum += item.preTax;
        totalSum += item.preTax + tax;
        return {
          description: `item ${n}`, preTaxAmount: text(item.preTax, currency),
          tax: item.tax === null ? null : item.tax.type === 'FIXED'
            ? { name: 'fixed', type: 'FIXED', value: text(item.tax.minor, currency) }
            : { name: 'vat', type: 'PERCENTAGE', value: text(item.tax.hundredths, 'USD') },
        };
      });
      if (totalSum === 0n) {
        expect(() => computeTotals(inputs, currency, {})).to.throw(DomainError, /greater than zero/);
        return;
      }
      const totals = computeTotals(inputs, currency, {});
      expect(totals.preTaxAmount).to.equal(text(preTaxSum, currency));
      expect(totals.totalAmount).to.equal(text(totalSum, currency));
      items.forEach((item, n) => {
        const tax = item.tax === null ? 0n : item.tax.type === 'FIXED' ? item.tax.minor : percentTax(item.preTax, item.tax.hundredths);
        expect(totals.items[n]!.totalAmount).to.equal(text(item.preTax + tax, currency));
        if (item.tax) expect(totals.items[n]!.tax!.amount).to.equal(text(tax, currency));
      });
      // The client's own totals: the right ones pass, one minor unit off is refused naming the field.
      expect(computeTotals(inputs, currency, { preTaxAmount: totals.preTaxAmount, totalAmount: totals.totalAmount }).totalAmount).to.equal(totals.totalAmount);
      expect(() => computeTotals(inputs, currency, { totalAmount: text(totalSum + 1n, currency) })).to.throw(DomainError, /^totalAmount: .* disagrees/);
    }), { numRuns: 300 });
  });

  it('rounds a percentage half-up at the currency’s scale', () => {
    const tax = (preTaxAmount: string, value: string, currency: string) =>
      computeTotals([{ description: 'x', preTaxAmount, tax: { name: 't', type: 'PERCENTAGE', value } }], currency, {}).items[0]!.tax!.amount;
    expect(tax('5', '10', 'CLP')).to.equal('1'); // 0.5 → 1
    expect(tax('4', '10', 'CLP')).to.equal('0'); // 0.4 → 0
    expect(tax('10.05', '10', 'USD')).to.equal('1.01'); // 1.005 → 1.01
    expect(tax('100', '19.5', 'CLP')).to.equal('20'); // 19.5 → 20
  });

  it('refuses an amount beyond the currency’s scale and a tax amount that disagrees, naming the field', () => {
    expect(() => computeTotals([{ description: 'x', preTaxAmount: '1.5' }], 'CLP', {})).to.throw(/^items\[0\]\.preTaxAmount:/);
    expect(() => computeTotals([{ description: 'x', preTaxAmount: '100', tax: { name: 't', type: 'FIXED', value: '0.5' } }], 'CLP', {}))
      .to.throw(/^items\[0\]\.tax\.value:/);
    expect(() => computeTotals([{ description: 'x', preTaxAmount: '100', tax: { name: 't', type: 'PERCENTAGE', value: '19', amount: '18' } }], 'CLP', {}))
      .to.throw(/^items\[0\]\.tax\.amount: 18 disagrees/);
  });
});

const T0 = new Date('2026-03-04T05:00:00.000Z');
const plus = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const created = (status: 'ATTEMPT' | 'ACTIVE' = 'ACTIVE'): CheckoutSessionCreatedData => ({
  sessionId: 's1', clientId: 'c1', paymentLinkId: status === 'ATTEMPT' ? 'l1' : null, checkoutToken: 'tok', status,
  currency: 'CLP', items: [], preTaxAmount: '100', totalAmount: '100', paymentMethodsAllowed: ['CARD'], destinations: [], owner: { identityId: 'i1' },
  customer: null, customerRequirements: [], successUrl: null, failedUrl: null, redirectUrl: null, duration: 60, paymentConfigs: [],
  expiresAt: plus(60).toISOString(), createdAt: T0.toISOString(),
});

/** The events that bring a session to `status` (before its expiresAt). */
function history(status: SessionStatus): SessionEvent[] {
  const start: SessionEvent = { type: 'CheckoutSessionCreated', data: created(status === 'ATTEMPT' ? 'ATTEMPT' : 'ACTIVE') };
  if (status === 'ATTEMPT' || status === 'ACTIVE') return [start];
  if (status === 'EXPIRED') return [start, { type: 'CheckoutSessionExpired', data: { sessionId: 's1', from: 'ACTIVE', to: 'EXPIRED', reason: 'DELETED', at: T0.toISOString() } }];
  const started: SessionEvent = { type: 'CheckoutSessionPaymentStarted', data: { sessionId: 's1', from: 'ACTIVE', to: 'PROCESSING_PAYMENT', paymentId: 'p1', method: 'CARD', at: T0.toISOString() } };
  if (status === 'PROCESSING_PAYMENT') return [start, started];
  const base = { sessionId: 's1', from: 'PROCESSING_PAYMENT', paymentId: 'p1', at: T0.toISOString() } as const;
  return [start, started, status === 'FINISHED'
    ? { type: 'CheckoutSessionFinished', data: { ...base, to: 'FINISHED' } }
    : { type: 'CheckoutSessionFailed', data: { ...base, to: 'FAILED', reason: 'FAILED' } }];
}

function decide(status: SessionStatus, command: AsOwner<SessionCommand>): SessionEvent[] {
  const state: SessionState = foldEvents(sessionDecider, history(status));
  return sessionDecider.decide(asOwner<SessionCommand>(command), state);
}
const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return error.kind;
    throw error;
  }
  return 'none';
};

describe('the checkout session decider', () => {
  const statuses: SessionStatus[] = ['ATTEMPT', 'ACTIVE', 'PROCESSING_PAYMENT', 'FINISHED', 'FAILED', 'EXPIRED'];

  it('follows a payment created for it from ATTEMPT, ACTIVE or EXPIRED (a payment that appeared late wins); the same payment heard twice changes nothing', () => {
    for (const status of statuses) {
      const start = () => decide(status, { type: 'StartPayment', paymentId: 'p2', method: 'CARD', eventId: 'e1', now: plus(1) });
      if (status === 'ATTEMPT' || status === 'ACTIVE' || status === 'EXPIRED') {
        expect(start()[0]!.data).to.include({ from: status, to: 'PROCESSING_PAYMENT', paymentId: 'p2' });
      } else {
        // Held by or ended with another payment: a session can have no other than its one.
        expect(refusal(start), status).to.equal('failedPrecondition');
      }
    }
    // Past its expiresAt too: the payment exists, so the session shows it.
    expect(decide('ACTIVE', { type: 'StartPayment', paymentId: 'p2', method: null, eventId: 'e1', now: plus(60) })[0]!.data)
      .to.include({ from: 'ACTIVE', to: 'PROCESSING_PAYMENT' });
    expect(decide('PROCESSING_PAYMENT', { type: 'StartPayment', paymentId: 'p1', method: 'CARD', eventId: 'e1', now: plus(1) })).to.deep.equal([]);
    // Recorded with the id the command carries: the pay call and the reactor derive the same one.
    expect(decide('ACTIVE', { type: 'StartPayment', paymentId: 'p2', method: 'CARD', eventId: 'e1', now: plus(1) })[0]).to.have.property('id', 'e1');
  });

  it('the pay call reserves only an open session before its expiresAt, once; a reservation whose payment was not created is released', () => {
    for (const status of statuses) {
      const reserve = () => decide(status, { type: 'ReservePayment', paymentId: 'p1', method: 'CARD', now: plus(1) });
      if (status === 'ATTEMPT' || status === 'ACTIVE') expect(reserve()[0]!.data).to.include({ from: status, to: 'PROCESSING_PAYMENT', paymentId: 'p1' });
      // PROCESSING_PAYMENT with the same payment too: a second pay of the session is refused, whoever sends it.
      else expect(refusal(reserve), status).to.equal('failedPrecondition');
    }
    expect(refusal(() => decide('ACTIVE', { type: 'ReservePayment', paymentId: 'p1', method: null, now: plus(60) }))).to.equal('failedPrecondition');
    const released = decide('PROCESSING_PAYMENT', { type: 'ReleasePayment', paymentId: 'p1', reason: 'refused', now: plus(1) });
    expect(released[0]).to.deep.include({ type: 'CheckoutSessionPaymentReleased' });
    expect(released[0]!.data).to.include({ from: 'PROCESSING_PAYMENT', to: 'ACTIVE', paymentId: 'p1', reason: 'refused' });
    const reopened = foldEvents(sessionDecider, [...history('PROCESSING_PAYMENT'), ...released]);
    expect(reopened).to.include({ status: 'ACTIVE', paymentId: null });
    expect(sessionDecider.decide(asOwner<SessionCommand>({ type: 'Expire', reason: 'DELETED', now: plus(2) }), reopened)[0]!.data).to.include({ to: 'EXPIRED' });
    expect(decide('PROCESSING_PAYMENT', { type: 'ReleasePayment', paymentId: 'other', reason: 'refused', now: plus(1) })).to.deep.equal([]);
    for (const status of ['ACTIVE', 'FINISHED', 'FAILED', 'EXPIRED'] as const) {
      expect(decide(status, { type: 'ReleasePayment', paymentId: 'p1', reason: 'refused', now: plus(1) }), status).to.deep.equal([]);
    }
  });

  it('a reservation whose payment did not appear within the timeout is released once: ACTIVE, or EXPIRED when its time is up', () => {
    // Reserved at T0 (history), recorded by the store at W0 (wall clock); expiresAt T0 + 60 s; a timeout of 10 s.
    const W0 = new Date('2031-01-01T00:00:00.000Z');
    const wall = (seconds: number) => new Date(W0.getTime() + seconds * 1000);
    const command = (wallSeconds: number, now: Date, paymentId = 'p1') => ({
      type: 'ReleaseStalledPayment', paymentId, reservationRecordedAt: W0.toISOString(), timeoutSeconds: 10, wallNow: wall(wallSeconds), now,
    }) as const;
    const stalled = (wallSeconds: number, now: Date, paymentId = 'p1') => decide('PROCESSING_PAYMENT', command(wallSeconds, now, paymentId));
    // The timeout runs on the wall clock, whatever the session's own (business) time says.
    expect(stalled(9, plus(1_000))).to.deep.equal([]);
    const released = stalled(10, plus(1));
    expect(released.map((e) => e.type)).to.deep.equal(['CheckoutSessionPaymentReleased']);
    expect(released[0]!.data).to.include({ from: 'PROCESSING_PAYMENT', to: 'ACTIVE', paymentId: 'p1', at: plus(1).toISOString() });
    expect((released[0]!.data as { reason: string }).reason).to.match(/^no payment p1 appeared within 10 s of the reservation/);
    // EXPIRED at once when the session's time is up (its own time: a test clock's, when it has one).
    const expired = stalled(10, plus(60));
    expect(expired.map((e) => e.type)).to.deep.equal(['CheckoutSessionPaymentReleased', 'CheckoutSessionExpired']);
    expect(expired[1]!.data).to.include({ from: 'ACTIVE', to: 'EXPIRED', reason: 'EXPIRES_AT' });
    expect(foldEvents(sessionDecider, [...history('PROCESSING_PAYMENT'), ...expired])).to.include({ status: 'EXPIRED', paymentId: null });
    // Once released, asked again (another process's job) it records nothing; nor for another payment, nor once it ended.
    const after = foldEvents(sessionDecider, [...history('PROCESSING_PAYMENT'), ...released]);
    expect(sessionDecider.decide(asOwner<SessionCommand>(command(11, plus(2))), after)).to.deep.equal([]);
    expect(stalled(10, plus(1), 'other')).to.deep.equal([]);
    for (const status of ['ACTIVE', 'FINISHED', 'FAILED', 'EXPIRED'] as const) {
      expect(decide(status, command(100, plus(100))), status).to.deep.equal([]);
    }
    // The late payment then takes the released session, ACTIVE or EXPIRED.
    for (const events of [released, expired]) {
      const state = foldEvents(sessionDecider, [...history('PROCESSING_PAYMENT'), ...events]);
      expect(sessionDecider.decide(asOwner<SessionCommand>({ type: 'StartPayment', paymentId: 'p1', method: 'CARD', eventId: 'e9', now: plus(61) }), state)[0]!.data)
        .to.include({ to: 'PROCESSING_PAYMENT', paymentId: 'p1' });
    }
  });

  it('a method chosen on a session opened from a link makes it ACTIVE; an allowed method only', () => {
    expect(decide('ATTEMPT', { type: 'ChooseMethod', method: 'CARD', now: plus(1) })[0]!.data).to.include({ from: 'ATTEMPT', to: 'ACTIVE', method: 'CARD' });
    expect(decide('ACTIVE', { type: 'ChooseMethod', method: 'CARD', now: plus(1) })).to.deep.equal([]);
    expect(refusal(() => decide('ATTEMPT', { type: 'ChooseMethod', method: 'PIX', now: plus(1) }))).to.equal('invalid');
    expect(refusal(() => decide('ATTEMPT', { type: 'ChooseMethod', method: 'CARD', now: plus(60) }))).to.equal('failedPrecondition');
    expect(refusal(() => decide('PROCESSING_PAYMENT', { type: 'ChooseMethod', method: 'CARD', now: plus(1) }))).to.equal('failedPrecondition');
  });

  it('its payment’s settlement finishes it, a failure fails it; other news changes nothing', () => {
    expect(decide('PROCESSING_PAYMENT', { type: 'EndPayment', paymentId: 'p1', ending: { outcome: 'SETTLED' }, eventId: 'e2', now: plus(1) }).map((e) => e.type))
      .to.deep.equal(['CheckoutSessionFinished']);
    expect(decide('PROCESSING_PAYMENT', { type: 'EndPayment', paymentId: 'p1', ending: { outcome: 'FAILED', reason: 'EXPIRED' }, eventId: 'e2', now: plus(1) })[0]!.data)
      .to.include({ to: 'FAILED', reason: 'EXPIRED' });
    expect(decide('PROCESSING_PAYMENT', { type: 'EndPayment', paymentId: 'other', ending: { outcome: 'SETTLED' }, eventId: 'e2', now: plus(1) })).to.deep.equal([]);
    for (const status of ['FINISHED', 'FAILED', 'ACTIVE'] as const) {
      expect(decide(status, { type: 'EndPayment', paymentId: 'p1', ending: { outcome: 'SETTLED' }, eventId: 'e2', now: plus(1) }), status).to.deep.equal([]);
    }
  });

  it('expires by time only once expiresAt passed; DELETE expires an open session at once and refuses a paid one', () => {
    expect(decide('ACTIVE', { type: 'Expire', reason: 'EXPIRES_AT', now: plus(59) })).to.deep.equal([]);
    expect(decide('ACTIVE', { type: 'Expire', reason: 'EXPIRES_AT', now: plus(60) })[0]!.data).to.include({ from: 'ACTIVE', to: 'EXPIRED', reason: 'EXPIRES_AT' });
    expect(decide('ATTEMPT', { type: 'Expire', reason: 'DELETED', now: plus(1) })[0]!.data).to.include({ from: 'ATTEMPT', reason: 'DELETED' });
    expect(decide('EXPIRED', { type: 'Expire', reason: 'DELETED', now: plus(1) })).to.deep.equal([]);
    for (const status of ['PROCESSING_PAYMENT', 'FINISHED', 'FAILED'] as const) {
      expect(refusal(() => decide(status, { type: 'Expire', reason: 'DELETED', now: plus(1) })), status).to.equal('failedPrecondition');
      expect(decide(status, { type: 'Expire', reason: 'EXPIRES_AT', now: plus(600) }), status).to.deep.equal([]);
    }
    expect(effectiveStatus('ACTIVE', plus(60), plus(60))).to.equal('EXPIRED');
    expect(effectiveStatus('PROCESSING_PAYMENT', plus(60), plus(600))).to.equal('PROCESSING_PAYMENT');
  });

  it('a refresh moves expiresAt to now + duration while the session is not final', () => {
    for (const status of statuses) {
      const refresh = () => decide(status, { type: 'Refresh', now: plus(30) });
      if (['ATTEMPT', 'ACTIVE', 'PROCESSING_PAYMENT'].includes(status)) expect(refresh()[0]!.data).to.include({ expiresAt: plus(90).toISOString() });
      else expect(refusal(refresh), status).to.equal('failedPrecondition');
    }
    expect(refusal(() => decide('ACTIVE', { type: 'Refresh', now: plus(61) }))).to.equal('failedPrecondition');
  });

  it('another client’s session is not found, whatever the command', () => {
    const state = foldEvents(sessionDecider, history('ACTIVE'));
    for (const command of [{ type: 'Refresh' }, { type: 'Expire', reason: 'DELETED' }] as const) {
      expect(refusal(() => sessionDecider.decide({ ...command, tenant: OTHER_CLIENT, now: plus(1) } as SessionCommand, state))).to.equal('notFound');
    }
  });
});

describe('the payment link decider', () => {
  const link: PaymentLinkCreatedData = {
    ...created(), linkId: 'l1', activeUntil: plus(60).toISOString(),
  } as unknown as PaymentLinkCreatedData;
  const start: LinkEvent = { type: 'PaymentLinkCreated', data: link };
  const run = (events: LinkEvent[], command: AsOwner<LinkCommand>) => linkDecider.decide(asOwner<LinkCommand>(command), foldEvents(linkDecider, events));

  it('is active for duration seconds after creation, and again after activation; deleted, it is gone', () => {
    const state = foldEvents(linkDecider, [start]);
    expect(linkActive(state, plus(59))).to.equal(true);
    expect(linkActive(state, plus(60))).to.equal(false);
    const activated = run([start], { type: 'Activate', now: plus(100) });
    expect(activated[0]!.data).to.include({ activeUntil: plus(160).toISOString() });
    expect(linkActive(foldEvents(linkDecider, [start, ...activated]), plus(159))).to.equal(true);
    const deleted = run([start], { type: 'Delete', now: plus(1) });
    expect(linkActive(foldEvents(linkDecider, [start, ...deleted]), plus(2))).to.equal(false);
    expect(refusal(() => run([start, ...deleted], { type: 'Activate', now: plus(2) }))).to.equal('notFound');
    expect(refusal(() => run([start, ...deleted], { type: 'Delete', now: plus(2) }))).to.equal('notFound');
    expect(refusal(() => linkDecider.decide({ type: 'Activate', tenant: OTHER_CLIENT, now: plus(1) }, foldEvents(linkDecider, [start])))).to.equal('notFound');
  });
});

describe('a session payment’s destinations', () => {
  const account = (amount: string, accountNumber = '100') =>
    ({ type: 'ACCOUNT', amount, account: { type: 'CHECKING', currency: 'CLP', accountNumber, accountHolder: 'Shop' } });

  it('are the session’s parts, adding up to its total; a session recorded before they had to pays its first account the whole total', () => {
    expect(paymentDestinations({ currency: 'CLP', totalAmount: '1500', destinations: [{ ...account('1000'), name: 'a' }, account('500')] })
      .map((node) => [node.type, node.name, node.amount, node.currency])).to.deep.equal([['ACCOUNT', 'a', '1000', 'CLP'], ['ACCOUNT', undefined, '500', 'CLP']]);
    for (const destinations of [[account('1000')], [{ type: 'CARD', amount: '500' }, account('1000')], [account('1000'), account('500', '200')]]) {
      const nodes = paymentDestinations({ currency: 'CLP', totalAmount: '1500', destinations });
      expect(nodes.map((node) => [node.amount, (node.account as { accountNumber: string }).accountNumber])).to.deep.equal([['1500', '100']]);
    }
  });
});
