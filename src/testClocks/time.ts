/**
 * The one place a rule of time asks what time it is for an object: its test clock's time when it is bound to
 * one, the wall clock's otherwise. Every rule of time (expiry, quote lifetimes, the deposit's 48 h, session and
 * link durations, settlement periods) reads it through here, so a new rule follows clocks by calling it too.
 */
import type { EventMetadata } from '../eventstore/port.ts';
import { comparePositions, type Position } from '../eventstore/position.ts';
import { streamState } from '../eventstore/streams.ts';
import { recordedAs } from '../eventstore/typedEvents.ts';
import type { Platform } from '../platform.ts';
import { paymentStream } from '../payments/events.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import { testClockStreamType } from './decider.ts';
import { testClockStream } from './events.ts';
import { setBounded } from '../domain/boundedMap.ts';

/**
 * The time of `clockId` (the wall clock's when null): its frozenTime, read from its stream. A deleted clock keeps
 * the time it had: its objects stay judged at it (README, "Test clocks").
 */
export async function timeOf(platform: Platform, clockId: string | null | undefined): Promise<Date> {
  if (!clockId) return platform.runtime.now();
  const state = await streamState(platform, testClockStreamType, testClockStream(clockId));
  return state.frozenTime ? new Date(state.frozenTime) : platform.runtime.now();
}

/** Platforms whose runtime stands at a clock's instant (platformAt's). */
const onAClock = new WeakSet<Platform>();

/**
 * The platform as a command at `at` sees it: its runtime's clock stands at `at` (ids still come from the runtime).
 * `appended`: its commands do not wait for the read models each, but report what they appended there (an advance
 * waits once per round of effects instead).
 */
export function platformAt(platform: Platform, at: Date, options: { appended?: (position: Position) => void } = {}): Platform {
  const frozen = new Date(at);
  const { appended } = options;
  const clocked: Platform = {
    ...platform, runtime: { newId: () => platform.runtime.newId(), now: () => new Date(frozen) },
    ...(appended ? { readYourWrites: async (position: Position | null) => { if (position) appended(position); } } : {}),
  };
  onAClock.add(clocked);
  return clocked;
}

/** True when the platform stands at a clock's instant already (platformAt's): its commands need not ask again. */
export function isOnAClock(platform: Platform): boolean {
  return onAClock.has(platform);
}

/**
 * The platform as a command on an object bound to `clockId` sees it: unchanged when the object has no clock, or
 * when the platform stands at a clock's instant already (an advance's effect, at the instant it fell due).
 */
export async function platformOn(platform: Platform, clockId: string | null | undefined): Promise<Platform> {
  if (!clockId || onAClock.has(platform)) return platform;
  return platformAt(platform, await timeOf(platform, clockId));
}

/**
 * The clock a payment (a deposit too) was created under, as its creation event names it, or null: what its
 * children (refunds, companions) follow.
 */
export async function clockOfPayment(platform: Platform, paymentId: string): Promise<string | null> {
  const store = platform.storage.store;
  let known = clocksOfPayments.get(store);
  if (!known) clocksOfPayments.set(store, known = new Map());
  const kept = known.get(paymentId);
  if (kept !== undefined) {
    // Asked again: it moves to the newest end, kept longest.
    setBounded(known, KEPT_CLOCKS_OF_PAYMENTS, paymentId, kept);
    return kept;
  }
  const [created] = await store.readStream(paymentStream(paymentId), { limit: 1 });
  if (!created) return null;
  const { data } = recordedAs<StoredEventData>(created);
  const clockId = 'testClockId' in data ? data.testClockId ?? null : null;
  // The one asked about least lately goes first.
  setBounded(known, KEPT_CLOCKS_OF_PAYMENTS, paymentId, clockId);
  return clockId;
}

/**
 * The clock a payment was created under, by payment, of the payments asked about last (per store: ids are only
 * unique within a database). Its first event says, and never changes: a refund, a capture, the autopilot's end
 * of a refund ask again without a read.
 */
const clocksOfPayments = new WeakMap<object, Map<string, string | null>>();
/** Payments whose clock is kept (entries, about 100 bytes each). */
const KEPT_CLOCKS_OF_PAYMENTS = 10_000;

/**
 * What an event recorded under a clock carries in its metadata besides the usual: the clock, and the business
 * time (when it happened on the clock; the store adds the real recording time). `GET /payments/{id}/events`
 * shows both.
 */
export function onClockMetadata(metadata: EventMetadata, clockId: string | null | undefined, at: Date): EventMetadata {
  return clockId ? { ...metadata, testClockId: clockId, businessTime: at.toISOString() } : metadata;
}

/**
 * Whose time a run of the time-driven work follows: the wall clock's (objects bound to no clock: the scheduled
 * jobs), or one test clock's (its objects only, each effect at the instant it fell due on the clock, up to
 * `until`: an advance).
 */
export interface TimeScope {
  /** Null: objects bound to no clock. */
  readonly clockId: string | null;
  /** Effects one rule runs at once, at most (each on its own object's stream). */
  readonly concurrency: number;
  /**
   * Runs one effect within the scope's own bound, shared by every rule run with it (a clock's rules run side by
   * side, and their effects together stay under CLOCK_EFFECT_CONCURRENCY); at once on the wall clock.
   */
  run<T>(effect: () => Promise<T>): Promise<T>;
  /** Effects due at or before this instant are run. */
  readonly until: Date;
  /** The platform as the effect due at `dueAt` runs on: at `dueAt` on a clock, at the wall clock's now otherwise. */
  platformFor(dueAt: Date): Platform;
  /** The metadata of an effect due at `dueAt`, acting as `actor`. */
  metadataFor(clientId: string, actor: string, dueAt: Date): EventMetadata;
  /** The furthest position the effects run so far appended (a clock's: they do not wait for the read models each). */
  appendedUpTo(): Position | null;
}

export function wallClockScope(platform: Platform): TimeScope {
  return {
    clockId: null, until: platform.runtime.now(), concurrency: 1, run: (effect) => effect(),
    platformFor: () => platform,
    metadataFor: (clientId, actor) => ({ clientId, actor }),
    appendedUpTo: () => null,
  };
}

export function clockScope(platform: Platform, clockId: string, until: Date, causationId?: string): TimeScope {
  let furthest: Position | null = null;
  const appended = (position: Position) => {
    if (!furthest || comparePositions(position, furthest) > 0) furthest = position;
  };
  return {
    clockId, until, concurrency: CLOCK_EFFECT_CONCURRENCY, run: bounded(CLOCK_EFFECT_CONCURRENCY),
    platformFor: (dueAt) => platformAt(platform, dueAt, { appended }),
    metadataFor: (clientId, actor, dueAt) => onClockMetadata({ clientId, actor, ...(causationId ? { causationId } : {}) }, clockId, dueAt),
    appendedUpTo: () => furthest,
  };
}

/**
 * Effects of one advance in flight at once, at most, all its rules together: each on its own object's stream, so
 * they never contend with each other. Well above the database pool's 16 connections on purpose: the store sends the
 * reads and the appends of effects in flight together (read groups and group commit, at most 4 statements of each
 * at once), so more effects at once cost fewer statements each (bench/testClocks.ts, 1,000 objects: about 2.5
 * statements an object at 16, 1.5 at 64), while what waits is held in this process, not on the pool.
 */
const CLOCK_EFFECT_CONCURRENCY = 64;

/** A bound of `slots` runs in flight at once; the others wait their turn, first come first served. */
function bounded(slots: number): <T>(effect: () => Promise<T>) => Promise<T> {
  let free = slots;
  const waiting: Array<() => void> = [];
  return async (effect) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await effect();
    } finally {
      // The slot passes to the next in line, or is free again.
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

/**
 * Runs `work` on every item in order, at most `concurrency` at once and within the scope's bound. The first failure
 * stops the run: no item is started after it, those in flight finish, then it is thrown.
 */
export async function eachDue<T>(
  scope: TimeScope, items: readonly T[], work: (item: T) => Promise<void>, concurrency = scope.concurrency,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | null = null;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    for (let i = next++; i < items.length && !failure; i = next++) {
      try {
        await scope.run(() => work(items[i]!));
      } catch (error) {
        failure ??= { error };
      }
    }
  }));
  if (failure) throw (failure as { error: unknown }).error;
}
