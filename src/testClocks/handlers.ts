/**
 * Commands on test clocks, and the work an advance sets off. A clock's stream decides its own changes; the
 * objects bound to it are bound on that stream before they are created (so it alone bounds how many it holds),
 * and each names the clock in its creation event. An advance is recorded at once (status `advancing`); the
 * clock's reactor (./reactor.ts) then runs, with the clock's time, the same commands the scheduled jobs run
 * with the wall clock's (deposit expiry, payment expiry and settlement batches, session expiry), each effect at
 * the instant it fell due, until nothing bound to the clock is due any more, and marks the clock `ready`.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { runCommand } from '../eventstore/streams.ts';
import type { Position } from '../eventstore/position.ts';
import type { Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import { expireDueSessions } from '../checkout/jobs.ts';
import { expireDueCompanions, expireUnassignedDeposits } from '../deposits/jobs.ts';
import { expireDuePayments, runSettlementBatch } from '../payments/jobs.ts';
import { testClockDecider, testClockSlotsStreamType, testClockStreamType } from './decider.ts';
import { loadClock } from './binding.ts';
import { testClockSlotsStream, testClockStream } from './events.ts';
import { clockScope, type TimeScope } from './time.ts';

/**
 * Rounds of due effects one advance runs at most. Each round runs every time rule once over the clock's due
 * objects (each rule at most its job's batch size); an object has at most two effects (its expiry or its
 * settlement, then its children's), so MAX_OBJECTS_PER_CLOCK objects need far fewer rounds than this.
 */
export const MAX_EFFECT_ROUNDS = 100;
/** How long an advance waits for the read models to show what was recorded before it (they select due objects). */
const READ_MODELS_WAIT_MS = 30_000;
/**
 * The read-model tables the time rules select their due objects from (the ports' `unassignedDue`, `companionsDue`,
 * `payableUntilDue`, `awaitingSettlement` and `expiring`): what a round must see of the rounds before it. A rule
 * that selects from another table names it here.
 */
const DUE_OBJECT_TABLES = ['deposits', 'payments', 'checkout_sessions'];

/** A new clock of the client (at most MAX_CLOCKS_PER_CLIENT at once: a slot is taken on the client's count first). */
export async function createClock(
  platform: Platform, clientId: string, input: { frozenTime?: string; name?: string }, metadata: EventMetadata,
): Promise<string> {
  const clockId = createdId(platform.runtime, metadata, 'test clock');
  const now = platform.runtime.now();
  const frozenTime = input.frozenTime ? new Date(input.frozenTime).toISOString() : now.toISOString();
  // Refused before a slot is taken: a clock that cannot exist takes none.
  testClockDecider.decide({ type: 'CreateClock', tenant: { clientId }, now, clock: { clockId, clientId, name: input.name ?? null, frozenTime } },
    testClockDecider.initialState);
  await runCommand(platform, testClockSlotsStreamType, testClockSlotsStream(clientId), { type: 'TakeSlot', clientId, clockId, now }, metadata);
  await runCommand(platform, testClockStreamType, testClockStream(clockId), {
    type: 'CreateClock', tenant: { clientId }, now, clock: { clockId, clientId, name: input.name ?? null, frozenTime },
  }, metadata, { expectNewStream: true });
  return clockId;
}

/** Deletes the clock (then 404); its objects keep the time it had (README, "Test clocks"). Frees its slot. */
export async function deleteClock(platform: Platform, tenant: Tenant, clockId: string, metadata: EventMetadata): Promise<void> {
  const { state } = await runCommand(platform, testClockStreamType, testClockStream(clockId), { type: 'DeleteClock', tenant, now: platform.runtime.now() }, metadata);
  const clientId = state.clock!.clientId;
  await runCommand(platform, testClockSlotsStreamType, testClockSlotsStream(clientId),
    { type: 'FreeSlot', clientId, clockId, now: platform.runtime.now() }, metadata);
}

/**
 * Moves the clock to `frozenTime` (the clock's stream refuses an earlier or equal time, more than 90 days, or a
 * clock still advancing). Answers once the advance is recorded: the effects follow (status `advancing`).
 */
export async function advanceClock(
  platform: Platform, tenant: Tenant, clockId: string, frozenTime: string, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, testClockStreamType, testClockStream(clockId), { type: 'AdvanceClock', tenant, to: new Date(frozenTime), now: platform.runtime.now() }, metadata);
}

/**
 * Every time-driven effect due on the clock up to `until`, recorded, round after round (an effect may make
 * another one due: a deposit's expiry issues its refund child), until a round finds nothing due; then the clock
 * is marked ready. `after`: the position of the advance, which the read models must have passed first, so that
 * every object bound before it is seen. Safe to run again: each object's stream refuses what already happened.
 */
export async function runClockEffects(
  platform: Platform, clockId: string, until: Date, after: Position, causationId: string,
): Promise<{ effects: number; rounds: number }> {
  await readModelsAt(platform, clockId, after, DUE_OBJECT_TABLES);
  const scope = clockScope(platform, clockId, until, causationId);
  let effects = 0;
  let rounds = 0;
  while (rounds < MAX_EFFECT_ROUNDS) {
    rounds++;
    const done = await runRound(platform, scope);
    if (done === 0) break;
    effects += done;
    // The effects did not wait for the read models one by one: the next round selects from the tables of due
    // objects once they have caught up with all of them.
    await readModelsAt(platform, clockId, scope.appendedUpTo(), DUE_OBJECT_TABLES);
  }
  // A client that sees the clock ready reads every effect back, from whichever read model shows it.
  await readModelsAt(platform, clockId, scope.appendedUpTo());
  const state = await loadClock(platform, clockId);
  if (state.clock && !state.deleted) {
    await runCommand(platform, testClockStreamType, testClockStream(clockId), { type: 'MarkReady', tenant: 'any', to: until.toISOString(), now: platform.runtime.now() },
      { clientId: state.clock.clientId, actor: 'test-clock', causationId });
  }
  return { effects, rounds };
}

/**
 * One round: every time rule over the clock's due objects, side by side (each rule's objects are its own kind,
 * and each object's stream decides, so an object two rules picked changes once), all within the scope's bound on
 * effects in flight. Answers how many effects were recorded. A failing rule fails the round once the others end.
 */
async function runRound(platform: Platform, scope: TimeScope): Promise<number> {
  const outcomes = await Promise.allSettled([
    expireUnassignedDeposits(platform, scope).then((r) => r.expired),
    expireDuePayments(platform, scope).then((r) => r.expired),
    runSettlementBatch(platform, scope).then((r) => r.settled + r.unsettled),
    expireDueSessions(platform, scope).then((r) => r.expired),
    expireDueCompanions(platform, scope).then((r) => r.expired),
  ]);
  let done = 0;
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') throw outcome.reason;
    done += outcome.value;
  }
  return done;
}

/** Waits until the read models (those owning `tables`; all without) have passed `position`; throws past the bound. */
async function readModelsAt(platform: Platform, clockId: string, position: Position | null, tables?: readonly string[]): Promise<void> {
  if (position && !(await platform.projections.waitFor(position, READ_MODELS_WAIT_MS, undefined, tables ? { tables } : {}))) {
    throw new Error(`test clock ${clockId}: the read models did not reach ${position.commit}-${position.prepare} within ${READ_MODELS_WAIT_MS} ms; retried`);
  }
}
