/**
 * Events of a test clock (sandbox, DESIGN section 20). Stream: `test-clock-<clockId>`: the clock's own stream
 * decides its time (forward only, at most MAX_ADVANCE_MS per advance, one advance at a time) and how many
 * objects it holds (MAX_OBJECTS_PER_CLOCK, each bound here before it is created). A client's clocks are counted
 * on `test-clocks-<clientId>` (MAX_CLOCKS_PER_CLIENT), a slot taken before a clock is created and freed when it
 * is deleted.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

/** The kinds of object a clock can hold: what a creating request with `Test-Clock` makes. */
export const boundObjectKinds = ['payment', 'payment_attempt', 'checkout_session', 'payment_link', 'deposit'] as const;
export type BoundObjectKind = (typeof boundObjectKinds)[number];

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const testClockEventSchemas = {
  TestClockCreated: closed({
    clockId: textSchema,
    clientId: textSchema,
    name: nullableTextSchema,
    /** The clock's time from now on, until it is advanced. */
    frozenTime: instantSchema,
    /** Real time of creation. */
    createdAt: instantSchema,
  }),
  /** An object about to be created under the clock (its creation event then names the clock). */
  TestClockObjectBound: closed({
    clockId: textSchema,
    objectId: textSchema,
    kind: { type: 'string', enum: boundObjectKinds },
    /** The clock's time when it was bound: the object's createdAt. */
    at: instantSchema,
  }),
  /**
   * The clock moves from `from` to `to`: its status is `advancing` until every time-driven effect due up to `to`
   * is recorded (each effect an event of its object, whose business time is when it fell due on this clock).
   */
  TestClockAdvanced: closed({
    clockId: textSchema,
    clientId: textSchema,
    from: instantSchema,
    to: instantSchema,
    /** Real time the advance was asked. */
    at: instantSchema,
  }),
  /** Every effect due up to `frozenTime` is recorded: the clock is `ready` again. */
  TestClockReady: closed({
    clockId: textSchema,
    clientId: textSchema,
    name: nullableTextSchema,
    frozenTime: instantSchema,
    /** Real time the effects were all recorded. */
    at: instantSchema,
  }),
  TestClockDeleted: closed({ clockId: textSchema, clientId: textSchema, at: instantSchema }),
} as const;

/** A client's clocks, counted: a slot per clock that exists. */
export const testClockSlotEventSchemas = {
  TestClockSlotTaken: closed({ clientId: textSchema, clockId: textSchema, at: instantSchema }),
  TestClockSlotFreed: closed({ clientId: textSchema, clockId: textSchema, at: instantSchema }),
} as const;

type Data<K extends keyof typeof testClockEventSchemas> = FromSchema<(typeof testClockEventSchemas)[K]>;
type SlotData<K extends keyof typeof testClockSlotEventSchemas> = FromSchema<(typeof testClockSlotEventSchemas)[K]>;

export type TestClockEvent =
  | { type: 'TestClockCreated'; data: Data<'TestClockCreated'> }
  | { type: 'TestClockObjectBound'; data: Data<'TestClockObjectBound'> }
  | { type: 'TestClockAdvanced'; data: Data<'TestClockAdvanced'> }
  | { type: 'TestClockReady'; data: Data<'TestClockReady'> }
  | { type: 'TestClockDeleted'; data: Data<'TestClockDeleted'> };

export type TestClockSlotEvent =
  | { type: 'TestClockSlotTaken'; data: SlotData<'TestClockSlotTaken'> }
  | { type: 'TestClockSlotFreed'; data: SlotData<'TestClockSlotFreed'> };

export type TestClockEventData<T extends TestClockEvent['type']> = Extract<TestClockEvent, { type: T }>['data'];

export const testClockEvents = { schemas: { ...testClockEventSchemas, ...testClockSlotEventSchemas } } satisfies ContextEvents;

export const testClockStream = (clockId: string) => `test-clock-${clockId}`;
export const testClockSlotsStream = (clientId: string) => `test-clocks-${clientId}`;

/** The optional property a creation event names its clock with (absent: the object follows the wall clock). */
export const testClockIdProperty = { testClockId: nullableTextSchema } as const;

/**
 * The step up to the version of a creation event that may name its clock (`testClockId`, optional): older data
 * lacks it, which reads as bound to no clock, so the data stays as it was.
 */
export const boundToNoClock = (data: unknown) => data;
