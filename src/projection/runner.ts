/**
 * Runs one projector version or one reactor: holds its lease, reads the feed after its checkpoint in
 * batches, applies each batch and moves the checkpoint in one transaction, waits for wake-ups when caught up,
 * and backs off (bounded) when a batch fails, retrying the same batch: events are never skipped.
 *
 * The lease keeps one instance per projection across processes. Its holder renews it every heartbeat, beside
 * the batch loop; a standby instance tries to take it every heartbeat, and as soon as the holder's lease runs
 * out, so a holder that died without releasing it (kill -9, a lost machine) is replaced within about the lease
 * time. A holder that cannot renew (the database unreachable) counts its lease as lost once it may have
 * expired, and stops writing; the checkpoint's compare-and-set on the lease owner backs that up in the database.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database, NoTables } from '../db/database.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import type { Position } from '../eventstore/position.ts';
import { silentLogger, type Logger } from '../logging.ts';
import type { LaterWrites, Projector, Reactor } from './projector.ts';
import { assertValidName, writesNow } from './projector.ts';
import { activateVersion, createFreshSchema, projectorSchemaName } from './projectorSchema.ts';
import { ProjectionStateStore, REACTOR_STATE_VERSION } from './projectionState.ts';
import type { SharedFeed } from './sharedFeed.ts';
import type { SharedTransactions } from './sharedTransactions.ts';

export type RunnerSubject = { kind: 'projector'; projector: Projector } | { kind: 'reactor'; reactor: Reactor };

export type LeaseChange = 'acquired' | 'lost';

export interface RunnerOptions {
  /** Identifies this process in leases. */
  owner: string;
  batchSize?: number;
  /** How long a lease lasts without renewal: a dead holder's projections resume elsewhere after at most this. */
  leaseTtlMs?: number;
  /** How often the holder renews its lease and a standby instance looks whether it ran out; at most half the lease. */
  heartbeatMs?: number;
  /** Told whenever this process takes a projection's lease or loses it (metrics). */
  onLeaseChange?: (projection: string, change: LeaseChange) => void;
  /**
   * How often the process reads the feed's head when nothing said there is something new (a notification lost
   * between processes only delays); the runners themselves wait for the shared feed (./sharedFeed.ts).
   */
  idlePollMs?: number;
  /**
   * Subscribes the runner's lease renewal to a beat shared by every runner of the process, so that their
   * renewals go to the database together (one statement); without it, the runner keeps a timer of its own.
   */
  heartbeats?: (beat: () => void) => () => void;
  /**
   * Reactors: events of different streams (or of another partition the reactor names) react at once, up to
   * this many partitions of a batch at a time; the events of one partition react one after the other, in
   * feed order.
   */
  reactorConcurrency?: number;
  /**
   * Shared by every reactor of a process: partitions reacting at once across all of them, so that a backlog does
   * not take every pooled connection from the projectors and the requests.
   */
  reactorLanes?: Lanes;
  /**
   * Shared by every projector of a process: batches of projectors at the head of the feed ready in the same turn
   * commit in one transaction (./sharedTransactions.ts). A projector catching up or building commits its large
   * batches alone, so that it does not hold the others' back.
   */
  sharedTransactions?: SharedTransactions;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  logger?: Logger;
}

/** `retired`: a newer version replaced this one (an old process during a rolling deploy); the runner has ended. */
export type RunnerState = 'starting' | 'standby' | 'building' | 'active' | 'failing' | 'retired' | 'stopped';

/** Another instance moved the checkpoint or holds the lease: this one must stop writing. */
class CheckpointConflictError extends Error {
  override readonly name = 'CheckpointConflictError';
}

/** The lease may have expired without renewal (a reactor checks before each effect). */
class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

export const DEFAULT_LEASE_TTL_MS = 5_000;
export const DEFAULT_HEARTBEAT_MS = 1_000;
/** A standby instance that found the lease just expiring waits at least this long before trying again. */
const MIN_STANDBY_POLL_MS = 20;

/**
 * A batch with nothing this runner handles moves only the in-memory checkpoint (what this process's
 * read-your-writes looks at) until this long has passed since the last stored one: a transaction per batch
 * for events a runner ignores was most of the database's work under load. A reactor stores its checkpoint at
 * most this often too, whatever it reacted to: its reactions are commands with deterministic ids, so those a
 * crash makes it run again (at most this long's worth) find their events already recorded and change nothing.
 */
const IGNORED_CHECKPOINT_INTERVAL_MS = 1_000;
/**
 * A runner caught up waits for the shared feed to say it grew; this bounds that wait should a wake-up be lost
 * (the feed itself reads the head at least every idle poll).
 */
const CAUGHT_UP_SAFETY_WAKE_MS = 30_000;
/** A runner behind the head takes batches this many times its batch size (at most MAX_BATCH events). */
const CATCH_UP_BATCH_FACTOR = 5;
const MAX_BATCH = 10_000;
/** Partitions of a reactor's batch reacting at once, by default. */
const DEFAULT_REACTOR_CONCURRENCY = 16;

/** A bound on work running at once, shared by those that take a lane (FIFO). */
export class Lanes {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(lanes: number) {
    this.free = Math.max(1, lanes);
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

export class ProjectionRunner extends EventEmitter {
  readonly name: string;
  readonly version: number;
  readonly kind: 'projector' | 'reactor';
  checkpoint: Position | null = null;
  /** The checkpoint as stored; behind `checkpoint` only by events this runner does not handle. */
  private stored: Position | null = null;
  private storedAt = 0;
  /** A reactor's events reacted to since its stored checkpoint (added to `events_handled` when it is stored). */
  private reactedUnstored = 0;
  state: RunnerState = 'starting';
  lastError: string | null = null;
  /**
   * Whether this version is, as far as this runner last saw, the active one: the version whose tables the
   * main schema's views show. False while it builds beside another (also while such a build is failing).
   */
  servesReaders = false;

  private readonly handles: ReadonlySet<string>;
  private readonly states: ProjectionStateStore;
  /**
   * The schema this version is first built in. Batches write to the one its projection_state row names, which a
   * replay (src/projection/replay.ts) may have moved to a rebuilt schema.
   */
  private readonly schema: string | null;
  private readonly batchSize: number;
  private readonly leaseTtlMs: number;
  private readonly heartbeatMs: number;
  private readonly reactorConcurrency: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly logger: Logger;
  private leased = false;
  private registered = false;
  /** performance.now() of the latest renewal's start: the lease runs at least until then plus its TTL. */
  private leaseRenewedAt = 0;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private stopBeats: (() => void) | null = null;
  /** The renewal in flight, if any: one at a time, and `stop` waits for it before releasing the lease. */
  private heartbeatRun: Promise<void> | null = null;
  private heartbeatFailing = false;
  private stopping = false;
  /** Aborted by `stop`, for reactions that wait (see Reactor). */
  private readonly stopped = new AbortController();
  private loop: Promise<void> | null = null;
  private pendingWake = false;
  /** Whether the last batch was full: more was waiting. */
  private behind = false;
  private wakeSleeper: (() => void) | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly database: Database,
    private readonly feed: SharedFeed,
    private readonly subject: RunnerSubject,
    private readonly options: RunnerOptions,
  ) {
    super();
    this.setMaxListeners(0); // every request waiting for read-your-writes listens for a moment
    const described = subject.kind === 'projector' ? subject.projector : subject.reactor;
    assertValidName(described.name);
    this.name = described.name;
    this.kind = subject.kind;
    this.version = subject.kind === 'projector' ? subject.projector.version : REACTOR_STATE_VERSION;
    this.handles = new Set(described.handles);
    this.states = new ProjectionStateStore(database);
    this.schema = subject.kind === 'projector' ? projectorSchemaName(database.schema, subject.projector) : null;
    this.batchSize = Math.min(Math.max(options.batchSize ?? (subject.kind === 'projector' ? 1000 : 256), 1), MAX_BATCH);
    this.leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.heartbeatMs = Math.max(Math.min(options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, this.leaseTtlMs / 2), 1);
    this.reactorConcurrency = Math.min(Math.max(options.reactorConcurrency ?? DEFAULT_REACTOR_CONCURRENCY, 1), 64);
    this.initialBackoffMs = options.initialBackoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.logger = (options.logger ?? silentLogger).child({ projection: this.name, version: this.version });
  }

  get holdsLease(): boolean {
    return this.leased;
  }

  /** Whether any of these event types changes what this runner writes. */
  handlesAny(eventTypes: readonly string[]): boolean {
    return eventTypes.some((type) => this.handles.has(type));
  }

  /** Whether a write of these event types waits for this projector to pass it (see `Projector.awaitedFor`). */
  awaitedBy(eventTypes: readonly string[]): boolean {
    if (this.subject.kind !== 'projector') return false;
    const awaited = this.subject.projector.awaitedFor;
    return awaited ? eventTypes.some((type) => awaited.includes(type)) : this.handlesAny(eventTypes);
  }

  start(): void {
    if (this.loop) return;
    this.unsubscribe = this.feed.subscribe(() => this.nudge());
    const beat = () => {
      this.heartbeatRun ??= this.heartbeat().finally(() => { this.heartbeatRun = null; });
    };
    if (this.options.heartbeats) {
      this.stopBeats = this.options.heartbeats(beat);
    } else {
      this.heartbeatTimer = setInterval(beat, this.heartbeatMs);
      this.heartbeatTimer.unref();
    }
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.nudge();
    this.unsubscribe?.();
    this.stopBeats?.();
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    await this.loop;
    this.feed.leave(this);
    // A renewal landing after the release below would hold the lease from the next instance until it expired.
    await this.heartbeatRun;
    // Store what was only in memory, so the next holder does not read those events again.
    if (this.leased && this.checkpoint && this.checkpoint !== this.stored) await this.storeBatch([], this.checkpoint).catch(() => undefined);
    if (this.leased) await this.states.releaseLease(this.name, this.version, this.options.owner).catch(() => undefined);
    this.leased = false;
    this.state = 'stopped';
  }

  /** Looks at the feed now: it grew, or a lease changed hands. */
  nudge(): void {
    this.pendingWake = true;
    this.wakeSleeper?.();
  }

  private async sleep(ms: number, wakeable: boolean): Promise<void> {
    if (this.stopping || (wakeable && this.pendingWake)) {
      this.pendingWake = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleeper = wakeable ? done : () => { if (this.stopping) done(); };
    });
    this.wakeSleeper = null;
    if (wakeable) this.pendingWake = false;
  }

  private async run(): Promise<void> {
    let backoff = this.initialBackoffMs;
    while (!this.stopping) {
      try {
        if (this.leased && !this.leaseSurely()) this.loseLease('it was not renewed in time');
        const taken = this.leased ? true : await this.takeLease();
        if (taken === 'retired') {
          this.state = 'retired';
          this.logger.info('a newer version replaced this one; its runner ends');
          return;
        }
        if (taken !== true) {
          this.state = 'standby';
          // Back when the holder's lease runs out, or at the next heartbeat if that is sooner.
          await this.sleep(Math.max(Math.min(taken.retryInMs, this.heartbeatMs), MIN_STANDBY_POLL_MS), false);
          continue;
        }
        const caughtUp = await this.step();
        backoff = this.initialBackoffMs;
        if (caughtUp) {
          await this.whenCaughtUp();
          // A checkpoint moved only in memory (over events it ignores) is stored within the interval even when
          // nothing more comes: another process's read-your-writes reads it from projection_state.
          const unstored = this.checkpoint !== this.stored;
          await this.sleep(unstored ? Math.max(IGNORED_CHECKPOINT_INTERVAL_MS - (Date.now() - this.storedAt), 1) : CAUGHT_UP_SAFETY_WAKE_MS, true);
        }
      } catch (error) {
        if (this.stopping) break;
        if (error instanceof CheckpointConflictError || error instanceof LeaseLostError) {
          // Not this projection's failure: another instance runs it now. Nothing of the batch was stored.
          this.loseLease(error.message);
          continue;
        }
        const message = error instanceof Error ? error.message : String(error);
        this.lastError = message;
        this.state = 'failing';
        this.logger.error({ err: error, retryInMs: backoff }, 'projection batch failed; retrying the same batch');
        // The others need not wait for this one while it backs off.
        this.feed.leave(this);
        await this.states.recordError(this.name, this.version, message).catch(() => undefined);
        await this.sleep(backoff, false);
        backoff = Math.min(backoff * 2, this.maxBackoffMs);
      }
    }
  }

  /** True once the lease is ours; otherwise 'retired', or how long the holder's lease still runs. */
  private async takeLease(): Promise<true | 'retired' | { retryInMs: number }> {
    if (!this.registered) {
      await this.states.register(this.name, this.version, this.kind, this.schema);
      this.registered = true;
    }
    const claimedAt = performance.now();
    const claim = await this.states.claimLease(this.name, this.version, this.options.owner, this.leaseTtlMs);
    if (!claim.held) return claim.retired ? 'retired' : { retryInMs: claim.remainingMs };
    this.leaseRenewedAt = claimedAt;
    const row = await this.states.get(this.name, this.version);
    if (!row) return { retryInMs: this.heartbeatMs };
    this.checkpoint = row.checkpoint;
    this.stored = row.checkpoint;
    this.storedAt = Date.now();
    if (this.subject.kind === 'projector') {
      const projector = this.subject.projector;
      if (row.status === 'building' && row.checkpoint === null) {
        await createFreshSchema(this.database.db, projector, this.schema!, this.database.schema);
      }
      // A projector seen for the first time has nothing older to serve: expose it while it builds.
      if (row.status === 'building' && (await this.states.activeVersion(this.name)) === null) {
        await activateVersion(this.database.db, projector, this.schema!, this.database.schema);
        row.status = 'active';
      }
      this.state = row.status === 'active' ? 'active' : 'building';
    } else {
      this.state = 'active';
    }
    this.servesReaders = this.state === 'active';
    this.leased = true;
    this.logger.info({ checkpoint: this.checkpoint, state: this.state, previousOwner: claim.previousOwner }, 'lease taken');
    this.options.onLeaseChange?.(this.name, 'acquired');
    this.emit('lease');
    return true;
  }

  /** Whether the lease certainly has not expired: renewed less than its TTL ago, counted from the renewal's start. */
  private leaseSurely(): boolean {
    return performance.now() - this.leaseRenewedAt < this.leaseTtlMs;
  }

  /** From now on this instance writes nothing for this projection until it takes the lease again. */
  private loseLease(reason: string): void {
    if (!this.leased) return;
    this.leased = false;
    this.state = 'standby';
    this.logger.warn({ reason }, 'lease lost; another instance may run this projection now');
    this.feed.leave(this);
    this.options.onLeaseChange?.(this.name, 'lost');
    this.emit('lease');
    this.nudge();
  }

  /**
   * Renews the lease, beside the batch loop so that a long batch or a backoff does not let it lapse. Never
   * throws: a database that cannot be reached costs the lease once it may have expired, not the process.
   */
  private async heartbeat(): Promise<void> {
    if (this.stopping || !this.leased) return;
    // A batch stored since the last beat renewed the lease with its checkpoint. (Half a beat, not a whole one:
    // timers fire a little early or late, and a renewal skipped by a hair would wait a whole beat more.)
    if (performance.now() - this.leaseRenewedAt < this.heartbeatMs / 2) return;
    const sentAt = performance.now();
    try {
      const renewal = await this.states.renewLease(this.name, this.version, this.options.owner, this.leaseTtlMs);
      if (this.heartbeatFailing) this.logger.info('lease renewal works again');
      this.heartbeatFailing = false;
      // 'busy': the batch holding the row renews the lease as it commits (and if it fails, the next beat tries again).
      if (renewal === 'kept' && this.leased) this.leaseRenewedAt = Math.max(this.leaseRenewedAt, sentAt);
      else if (renewal === 'lost') this.loseLease('another instance holds it, or the version was retired');
    } catch (error) {
      if (!this.heartbeatFailing) this.logger.warn({ err: error }, 'could not renew the lease; retrying every heartbeat');
      this.heartbeatFailing = true;
      if (!this.leaseSurely()) this.loseLease('it could not be renewed before it may have expired');
    }
  }

  /** Reads and applies one batch; true when the feed had nothing more to give. */
  private async step(): Promise<boolean> {
    // Woken before the read: a wake-up that comes while it is in flight makes the runner look again.
    this.pendingWake = false;
    // Behind (the last batch was full), batches grow: fewer, larger transactions through a backlog.
    const limit = this.behind ? Math.min(this.batchSize * CATCH_UP_BATCH_FACTOR, MAX_BATCH) : this.batchSize;
    const { events, caughtUp } = await this.feed.next(this.checkpoint, limit, this);
    this.behind = events.length >= limit;
    if (events.length === 0) {
      if (this.checkpoint !== this.stored && Date.now() - this.storedAt >= IGNORED_CHECKPOINT_INTERVAL_MS) {
        await this.storeBatch([], this.checkpoint!);
      }
      return caughtUp;
    }
    const last = events[events.length - 1]!.position;
    const relevant = events.filter((event) => this.handles.has(event.type));
    if (relevant.length > 0 || Date.now() - this.storedAt >= IGNORED_CHECKPOINT_INTERVAL_MS) {
      await this.storeBatch(relevant, last);
    }
    if (this.state === 'failing') {
      this.state = (await this.isBuilding()) ? 'building' : 'active';
      this.servesReaders = this.state === 'active';
    }
    this.lastError = null;
    this.checkpoint = last;
    this.emit('advanced', last);
    return false;
  }

  /**
   * A projector applies `events` and stores the checkpoint `last` in one transaction. A reactor reacts to them,
   * then stores `last` only when it has nothing to react to or its last store is IGNORED_CHECKPOINT_INTERVAL_MS old.
   */
  private async storeBatch(events: RecordedEvent[], last: Position): Promise<void> {
    if (this.subject.kind === 'projector') {
      await this.applyProjected(this.subject.projector, events, last);
    } else {
      await this.applyReacted(this.subject.reactor, events);
      this.reactedUnstored += events.length;
      if (events.length > 0 && Date.now() - this.storedAt < IGNORED_CHECKPOINT_INTERVAL_MS) return;
      const startedAt = performance.now();
      const moved = await this.states.advanceReactorCheckpoint(this.name, this.options.owner, this.leaseTtlMs, this.stored, last, this.reactedUnstored);
      if (!moved) throw new CheckpointConflictError(`${this.name}: checkpoint moved by another instance`);
      // The same statement renewed the lease.
      this.leaseRenewedAt = Math.max(this.leaseRenewedAt, startedAt);
      this.reactedUnstored = 0;
    }
    this.stored = last;
    this.storedAt = Date.now();
  }

  /** Moves the checkpoint in a transaction that also renews the lease (the same statement does both). */
  private async applyProjected(projector: Projector, events: RecordedEvent[], last: Position): Promise<void> {
    const shared = this.state === 'active' && !this.behind ? this.options.sharedTransactions : undefined;
    const apply = events.length > 0 ? (trx: Kysely<NoTables>, later: LaterWrites) => projector.apply(trx, events, later) : null;
    const alone = async (trx: Kysely<NoTables>) => {
      const moved = await this.states.advanceCheckpoint(trx, this.name, this.version, this.options.owner, this.leaseTtlMs,
        this.stored, last, events.length, apply ? this.database.schema : undefined);
      if (!moved) throw new CheckpointConflictError(`${this.name} v${this.version}: checkpoint moved by another instance`);
      await apply?.(trx, writesNow(trx));
    };
    const startedAt = performance.now();
    if (shared) {
      const checkpoint = { name: this.name, version: this.version, owner: this.options.owner, ttlMs: this.leaseTtlMs, previous: this.stored, next: last, handled: events.length };
      await shared.run({ checkpoint, apply, alone });
    } else {
      await this.database.db.transaction().execute(alone);
    }
    this.leaseRenewedAt = Math.max(this.leaseRenewedAt, startedAt);
  }

  /**
   * Reacts to a batch: ordered within a partition (a stream, unless the reactor names another key), partitions
   * side by side up to `reactorConcurrency`. At least once: the checkpoint moves (in memory, then stored) only once
   * every event of the batch has reacted; a failure stops new partitions from starting, waits for those running,
   * and the batch is tried again (the effects' deterministic ids make the second run change nothing).
   */
  private async applyReacted(reactor: Reactor, events: RecordedEvent[]): Promise<void> {
    if (reactor.dueAt && events.length > 0) {
      // The checkpoint moves once the whole batch has reacted: waiting once for its last due event costs no more.
      const waitMs = events.reduce((latest, event) => Math.max(latest, reactor.dueAt!(event)), 0) - Date.now();
      if (waitMs > 0) await sleep(waitMs, undefined, { signal: this.stopped.signal });
    }
    const partitions = new Map<string, RecordedEvent[]>();
    for (const event of events) {
      const key = reactor.partition?.(event) ?? event.stream;
      const lane = partitions.get(key);
      if (lane) lane.push(event);
      else partitions.set(key, [event]);
    }
    const lanes = [...partitions.values()];
    let next = 0;
    let failure: { error: unknown } | null = null;
    const work = async () => {
      for (let i = next++; i < lanes.length && !failure; i = next++) {
        const lane = lanes[i]!;
        const react = async () => {
          for (const event of lane) {
            if (failure) return;
            if (!this.leased || !this.leaseSurely()) throw new LeaseLostError(`${this.name}: lease lost in the middle of a batch`);
            await reactor.react(event, this.stopped.signal);
          }
        };
        await (this.options.reactorLanes ? this.options.reactorLanes.run(react) : react());
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.reactorConcurrency, lanes.length) }, () => work().catch((error: unknown) => {
      failure ??= { error };
    })));
    if (failure) throw (failure as { error: unknown }).error;
  }

  private async isBuilding(): Promise<boolean> {
    if (this.subject.kind !== 'projector') return false;
    return (await this.states.get(this.name, this.version))?.status === 'building';
  }

  /** A rebuilt version takes over from the old one once it has caught up with the feed. */
  private async whenCaughtUp(): Promise<void> {
    if (this.state !== 'building' || this.subject.kind !== 'projector') return;
    await activateVersion(this.database.db, this.subject.projector, this.schema!, this.database.schema);
    this.state = 'active';
    this.servesReaders = true;
    this.logger.info({ checkpoint: this.checkpoint }, 'rebuilt version caught up and is now active');
    this.emit('activated');
    this.emit('lease');
  }
}
