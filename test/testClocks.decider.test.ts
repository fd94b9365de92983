/** The test clock's decider, pure: creation bounds, forward-only advances of at most 90 days, one at a time, binding bounds, deletion. */
import { expect } from 'chai';
import { foldEvents } from '../src/domain/decider.ts';
import { DomainError } from '../src/domain/errors.ts';
import {
  MAX_ADVANCE_MS, MAX_CLOCKS_PER_CLIENT, MAX_OBJECTS_PER_CLOCK, testClockDecider, testClockSlotDecider, type TestClockCommand, type TestClockState,
} from '../src/testClocks/decider.ts';
import type { TestClockEvent } from '../src/testClocks/events.ts';

const NOW = new Date('2026-01-01T00:00:00.000Z');
const HOUR_MS = 60 * 60 * 1000;
const tenant = { clientId: 'alice' };
const at = (ms: number) => new Date(NOW.getTime() + ms);
const created: TestClockEvent = {
  type: 'TestClockCreated', data: { clockId: 'c1', clientId: 'alice', name: null, frozenTime: NOW.toISOString(), createdAt: NOW.toISOString() },
};

const stateOf = (events: TestClockEvent[]): TestClockState => foldEvents(testClockDecider, events);
const refusal = (command: TestClockCommand, events: TestClockEvent[]): DomainError => {
  try {
    testClockDecider.decide(command, stateOf(events));
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('not refused');
};

describe('test clock decider', () => {
  it('creates a clock at now or later, never in the past (beyond a minute of skew) nor more than 365 days ahead', () => {
    const create = (frozenTime: Date): TestClockCommand =>
      ({ type: 'CreateClock', tenant, now: NOW, clock: { clockId: 'c1', clientId: 'alice', name: null, frozenTime: frozenTime.toISOString() } });
    expect(testClockDecider.decide(create(NOW), stateOf([]))).to.have.length(1);
    expect(testClockDecider.decide(create(at(-30_000)), stateOf([]))).to.have.length(1);
    expect(refusal(create(at(-HOUR_MS)), []).message).to.match(/^frozenTime: .* is in the past/);
    expect(refusal(create(at(366 * 24 * HOUR_MS)), []).kind).to.equal('invalid');
    expect(testClockDecider.decide(create(NOW), stateOf([created])), 'created once').to.deep.equal([]);
  });

  it('advances forward only, by at most 90 days (exactly 90 allowed), one advance at a time', () => {
    const advance = (to: Date): TestClockCommand => ({ type: 'AdvanceClock', tenant, to, now: NOW });
    for (const to of [at(-1), NOW, at(MAX_ADVANCE_MS + 1)]) {
      const error = refusal(advance(to), [created]);
      expect(error.kind).to.equal('invalid');
      expect(error.message).to.match(/^frozenTime: /);
    }
    const [advanced] = testClockDecider.decide(advance(at(MAX_ADVANCE_MS)), stateOf([created]));
    expect(advanced).to.deep.include({ type: 'TestClockAdvanced' });
    expect(stateOf([created, advanced!])).to.include({ status: 'advancing', frozenTime: at(MAX_ADVANCE_MS).toISOString() });
    expect(refusal(advance(at(MAX_ADVANCE_MS + HOUR_MS)), [created, advanced!]).kind).to.equal('failedPrecondition');

    const markReady = (to: Date): TestClockCommand => ({ type: 'MarkReady', tenant: 'any', to: to.toISOString(), now: NOW });
    expect(testClockDecider.decide(markReady(at(HOUR_MS)), stateOf([created, advanced!])), 'another advance’s target').to.deep.equal([]);
    const [ready] = testClockDecider.decide(markReady(at(MAX_ADVANCE_MS)), stateOf([created, advanced!]));
    expect(stateOf([created, advanced!, ready!]).status).to.equal('ready');
    expect(testClockDecider.decide(markReady(at(MAX_ADVANCE_MS)), stateOf([created, advanced!, ready!])), 'ready once').to.deep.equal([]);
  });

  it('answers another client’s clock, a deleted one and none at all as not found', () => {
    const advance: TestClockCommand = { type: 'AdvanceClock', tenant: { clientId: 'bob' }, to: at(HOUR_MS), now: NOW };
    expect(refusal(advance, [created]).kind).to.equal('notFound');
    const deleted: TestClockEvent = { type: 'TestClockDeleted', data: { clockId: 'c1', clientId: 'alice', at: NOW.toISOString() } };
    for (const command of [{ ...advance, tenant }, { type: 'DeleteClock', tenant, now: NOW } as const,
      { type: 'BindObject', tenant, objectId: 'p1', kind: 'payment', eventId: 'e1' } as const]) {
      expect(refusal(command, [created, deleted]).kind).to.equal('notFound');
      expect(refusal(command, []).kind).to.equal('notFound');
    }
  });

  it('binds at most MAX_OBJECTS_PER_CLOCK objects, at the clock’s time', () => {
    const bind: TestClockCommand = { type: 'BindObject', tenant, objectId: 'p1', kind: 'payment', eventId: 'e1' };
    const [bound] = testClockDecider.decide(bind, stateOf([created]));
    expect(bound).to.deep.equal({ id: 'e1', type: 'TestClockObjectBound', data: { clockId: 'c1', objectId: 'p1', kind: 'payment', at: NOW.toISOString() } });
    const full = { ...stateOf([created]), objects: MAX_OBJECTS_PER_CLOCK };
    expect(() => testClockDecider.decide(bind, full)).to.throw(DomainError, /holds 10000 objects/);
  });

  it('counts a client’s clocks: at most MAX_CLOCKS_PER_CLIENT at once, a freed slot taken again', () => {
    let state = testClockSlotDecider.initialState;
    for (let n = 0; n < MAX_CLOCKS_PER_CLIENT; n++) {
      for (const event of testClockSlotDecider.decide({ type: 'TakeSlot', clientId: 'alice', clockId: `c${n}`, now: NOW }, state)) {
        state = testClockSlotDecider.evolve(state, event);
      }
    }
    expect(() => testClockSlotDecider.decide({ type: 'TakeSlot', clientId: 'alice', clockId: 'extra', now: NOW }, state)).to.throw(DomainError, /at most 100/);
    for (const event of testClockSlotDecider.decide({ type: 'FreeSlot', clientId: 'alice', clockId: 'c0', now: NOW }, state)) {
      state = testClockSlotDecider.evolve(state, event);
    }
    expect(testClockSlotDecider.decide({ type: 'TakeSlot', clientId: 'alice', clockId: 'extra', now: NOW }, state)).to.have.length(1);
  });
});
