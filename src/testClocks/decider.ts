/**
 * A test clock, pure (README, "Test clocks"):
 *
 *   (none) ─create→ ready ─advance→ advancing ─every effect due recorded→ ready ─ … ─delete→ (gone: 404)
 *
 * Only its stream decides that time moves forward, by at most MAX_ADVANCE_MS at once, one advance at a time
 * (two advances sent together: the first appended wins, the second is decided on the clock it left), and that it
 * holds at most MAX_OBJECTS_PER_CLOCK objects. A client's clocks are counted on a stream of their own.
 */
import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { domainInvalid, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import type { BoundObjectKind, TestClockEvent, TestClockEventData, TestClockSlotEvent } from './events.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
/** The longest one advance may move a clock (90 days exactly is allowed). */
export const MAX_ADVANCE_MS = 90 * DAY_MS;
/** Objects one clock may hold (everything created with its `Test-Clock` header, children not counted). */
export const MAX_OBJECTS_PER_CLOCK = 10_000;
/** Clocks one client may have at once (deleted ones do not count). */
export const MAX_CLOCKS_PER_CLIENT = 100;
/** How far ahead of now a new clock may start. */
export const MAX_START_AHEAD_MS = 365 * DAY_MS;
/**
 * How far behind now a new clock's frozenTime may be and still count as "now": a client that sends the time it
 * read a moment before the request arrived is not refused.
 */
export const START_SKEW_MS = 60 * 1000;

export type TestClockStatus = 'ready' | 'advancing';

export type TestClockCommand = (
  | { type: 'CreateClock'; clock: Omit<TestClockEventData<'TestClockCreated'>, 'createdAt'>; now: Date }
  | { type: 'BindObject'; objectId: string; kind: BoundObjectKind; eventId: string }
  | { type: 'AdvanceClock'; to: Date; now: Date }
  | { type: 'MarkReady'; to: string; now: Date }
  | { type: 'DeleteClock'; now: Date }
) & TenantScoped;

export interface TestClockState {
  clock: TestClockEventData<'TestClockCreated'> | null;
  deleted: boolean;
  status: TestClockStatus;
  /** The clock's time: its target while it is advancing. */
  frozenTime: string | null;
  /** Objects bound to it (each once: a binding repeated with the same event id is not appended again). */
  objects: number;
}

function live(state: TestClockState): TestClockEventData<'TestClockCreated'> {
  if (!state.clock || state.deleted) throw domainNotFound('test clock not found');
  return state.clock;
}

export const testClockDecider: Decider<TestClockCommand, TestClockEvent & { id?: string }, TestClockState> = {
  initialState: { clock: null, deleted: false, status: 'ready', frozenTime: null, objects: 0 },

  decide(command, state) {
    refuseOtherTenants(command.tenant, state.clock?.clientId ?? null, 'test clock not found');
    if (command.type === 'CreateClock') {
      if (state.clock) return [];
      const frozen = Date.parse(command.clock.frozenTime);
      const now = command.now.getTime();
      if (frozen < now - START_SKEW_MS) throw domainInvalid(`frozenTime: ${command.clock.frozenTime} is in the past`);
      if (frozen > now + MAX_START_AHEAD_MS) throw domainInvalid(`frozenTime: ${command.clock.frozenTime} is more than 365 days ahead`);
      return [{ type: 'TestClockCreated', data: { ...command.clock, createdAt: command.now.toISOString() } }];
    }
    const clock = live(state);
    switch (command.type) {
      case 'BindObject':
        if (state.objects >= MAX_OBJECTS_PER_CLOCK) {
          throw domainPrecondition(`test clock ${clock.clockId} holds ${MAX_OBJECTS_PER_CLOCK} objects, the most one clock may hold; use another clock`);
        }
        return [{ id: command.eventId, type: 'TestClockObjectBound',
          data: { clockId: clock.clockId, objectId: command.objectId, kind: command.kind, at: state.frozenTime! } }];
      case 'AdvanceClock': {
        const from = Date.parse(state.frozenTime!);
        const to = command.to.getTime();
        if (to <= from) throw domainInvalid(`frozenTime: ${command.to.toISOString()} is not after the clock's frozenTime ${state.frozenTime}`);
        if (to - from > MAX_ADVANCE_MS) {
          throw domainInvalid(`frozenTime: ${command.to.toISOString()} is more than 90 days after the clock's frozenTime ${state.frozenTime}`);
        }
        if (state.status === 'advancing') throw domainPrecondition(`test clock ${clock.clockId} is advancing to ${state.frozenTime}; wait until it is ready`);
        return [{ type: 'TestClockAdvanced', data: { clockId: clock.clockId, clientId: clock.clientId, from: state.frozenTime!,
          to: command.to.toISOString(), at: command.now.toISOString() } }];
      }
      case 'MarkReady':
        // Another run recorded it first, or the clock moved on (a later advance marks itself ready).
        if (state.status !== 'advancing' || state.frozenTime !== command.to) return [];
        return [{ type: 'TestClockReady', data: { clockId: clock.clockId, clientId: clock.clientId, name: clock.name,
          frozenTime: command.to, at: command.now.toISOString() } }];
      case 'DeleteClock':
        return [{ type: 'TestClockDeleted', data: { clockId: clock.clockId, clientId: clock.clientId, at: command.now.toISOString() } }];
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'TestClockCreated':
        return { ...state, clock: event.data, frozenTime: event.data.frozenTime, status: 'ready' };
      case 'TestClockObjectBound':
        return { ...state, objects: state.objects + 1 };
      case 'TestClockAdvanced':
        return { ...state, frozenTime: event.data.to, status: 'advancing' };
      case 'TestClockReady':
        return { ...state, status: 'ready' };
      case 'TestClockDeleted':
        return { ...state, deleted: true };
    }
  },
};

export type TestClockSlotCommand =
  | { type: 'TakeSlot'; clientId: string; clockId: string; now: Date }
  | { type: 'FreeSlot'; clientId: string; clockId: string; now: Date };

/** The client's clocks that exist (at most MAX_CLOCKS_PER_CLIENT ids). */
export interface TestClockSlotState {
  clocks: ReadonlySet<string>;
}

export const testClockSlotDecider: Decider<TestClockSlotCommand, TestClockSlotEvent, TestClockSlotState> = {
  initialState: { clocks: new Set() },

  decide(command, state) {
    const data = { clientId: command.clientId, clockId: command.clockId, at: command.now.toISOString() };
    if (command.type === 'FreeSlot') return state.clocks.has(command.clockId) ? [{ type: 'TestClockSlotFreed', data }] : [];
    if (state.clocks.has(command.clockId)) return [];
    if (state.clocks.size >= MAX_CLOCKS_PER_CLIENT) {
      throw domainPrecondition(`a client may have at most ${MAX_CLOCKS_PER_CLIENT} test clocks; delete one first`);
    }
    return [{ type: 'TestClockSlotTaken', data }];
  },

  evolve(state, event) {
    const clocks = new Set(state.clocks);
    if (event.type === 'TestClockSlotTaken') clocks.add(event.data.clockId);
    else clocks.delete(event.data.clockId);
    return { clocks };
  },
};

/** `test-clock-<clockId>`: a request waits for every read model after a change of the clock; binding is a step of a creation. */
export const testClockStreamType = streamType('test-clock-', { decider: testClockDecider, readModels: {
  CreateClock: 'all', AdvanceClock: 'all', MarkReady: 'all', DeleteClock: 'all', BindObject: 'none',
} });

/** The client's count of clocks: a step before a clock's creation, after its deletion. */
export const testClockSlotsStreamType = streamType('test-clocks-', { decider: testClockSlotDecider, readModels: {
  TakeSlot: 'none', FreeSlot: 'none',
} });
