/**
 * All the projectors and reactors of one process, and the read-your-writes wait: a command's response can
 * wait (bounded) until every active projector has passed the position its append reached.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import type { EventStore } from '../eventstore/port.ts';
import { positionReached, type Position } from '../eventstore/position.ts';
import type { Logger } from '../logging.ts';
import type { Projector, Reactor } from './projector.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_TTL_MS, Lanes, ProjectionRunner, type RunnerOptions } from './runner.ts';
import { SharedTransactions } from './sharedTransactions.ts';
import { ProjectionStateStore, type ProjectionStateRow } from './projectionState.ts';
import { SharedFeed, type ReleaseSignal } from './sharedFeed.ts';

export interface DaemonOptions extends Omit<RunnerOptions, 'owner'> {
  owner?: string;
  logger?: Logger;
}

export const DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS = 5_000;
/**
 * Partitions reacting at once across every reactor of the process (a pool of 16 connections by default): half of
 * them, so that a backlog of reactions leaves the projectors and the requests the other half.
 */
const REACTOR_LANES = 8;
/**
 * How often the head of the feed is read when nothing said there is something new. Appends of this process say
 * so at once, and on Postgres so do other processes' (LISTEN/NOTIFY): this only bounds the delay of a lost notice.
 */
const DEFAULT_IDLE_POLL_MS = 1_000;
/**
 * How often a wait looks at projection_state for projectors run by another process (or a version building here):
 * no notice tells this process when another one's checkpoint moves. Waits for runners of this process listen to
 * them instead, and use no timer but their bound.
 */
const STATE_POLL_MS = 25;

export class ProjectionDaemon {
  readonly owner: string;
  private readonly runners: ProjectionRunner[] = [];
  /** Read-model views share one namespace: a table name belongs to exactly one projector. */
  private readonly tableOwners = new Map<string, string>();
  private readonly states: ProjectionStateStore;
  /** One reading of the feed for every runner of this process. */
  private readonly feed: SharedFeed;
  private started = false;

  constructor(
    private readonly database: Database,
    store: EventStore,
    private readonly options: DaemonOptions = {},
  ) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.states = new ProjectionStateStore(database);
    this.feed = new SharedFeed(store, { idlePollMs: options.idlePollMs ?? DEFAULT_IDLE_POLL_MS, releases: database.pool as unknown as ReleaseSignal });
  }

  /** One beat for every runner's lease renewal, so that they go to the database in one statement. */
  private readonly beats = new Set<() => void>();
  private beatTimer: NodeJS.Timeout | null = null;

  private readonly heartbeats = (beat: () => void): (() => void) => {
    this.beats.add(beat);
    if (!this.beatTimer) {
      this.beatTimer = setInterval(() => { for (const each of this.beats) each(); }, this.heartbeatMs());
      this.beatTimer.unref();
    }
    return () => {
      this.beats.delete(beat);
      if (this.beats.size === 0 && this.beatTimer) {
        clearInterval(this.beatTimer);
        this.beatTimer = null;
      }
    };
  };

  private heartbeatMs(): number {
    const ttl = this.options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    return Math.max(Math.min(this.options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, ttl / 2), 1);
  }

  addProjector(projector: Projector): this {
    for (const table of projector.tables) {
      const owner = this.tableOwners.get(table);
      if (owner) throw new Error(`table ${table} of projector ${projector.name} is already owned by ${owner}`);
      this.tableOwners.set(table, projector.name);
    }
    return this.add(new ProjectionRunner(this.database, this.feed, { kind: 'projector', projector }, this.runnerOptions()));
  }

  addReactor(reactor: Reactor): this {
    return this.add(new ProjectionRunner(this.database, this.feed, { kind: 'reactor', reactor }, this.runnerOptions()));
  }

  private add(runner: ProjectionRunner): this {
    if (this.runners.some((r) => r.name === runner.name)) throw new Error(`projection ${runner.name} added twice`);
    this.runners.push(runner);
    if (this.started) runner.start();
    return this;
  }

  private readonly reactorLanes = new Lanes(REACTOR_LANES);
  private sharedTransactions: SharedTransactions | null = null;

  private runnerOptions(): RunnerOptions {
    const { owner: _owner, ...rest } = this.options;
    return {
      reactorLanes: this.reactorLanes, sharedTransactions: this.sharedTransactions ??= new SharedTransactions(this.database.db, this.states, this.database.schema), ...rest, owner: this.owner,
      heartbeats: this.heartbeats,
    };
  }

  get projectionRunners(): readonly ProjectionRunner[] {
    return this.runners;
  }

  start(): void {
    this.started = true;
    for (const runner of this.runners) runner.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    await Promise.all(this.runners.map((runner) => runner.stop()));
  }

  /** Reads the head of the feed now (the runners at the head hear of what it finds). */
  nudge(): void {
    this.feed.nudge();
  }

  /**
   * Resolves true once every projector serving reads has passed `position`, false when `timeoutMs` runs out.
   * Runners of this process serving reads are watched in memory; otherwise (leased elsewhere, or a version
   * still building) the active version's checkpoint is read from projection_state.
   * Reactors are not waited for: their effects are new commands with positions of their own.
   */
  async waitFor(
    position: Position, timeoutMs = DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS, eventTypes?: readonly string[],
    /**
     * `forWrite`: a write's read-your-writes, only for the event types each projector's readers read back at once
     * (`awaitedFor`). `projector`: that projector only (a read of what it writes after the fact). `tables`: the
     * projectors that own these read-model tables only (a query of those tables alone; an unknown table throws).
     */
    options: { forWrite?: boolean; projector?: string; tables?: readonly string[] } = {},
  ): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const owners = options.tables === undefined ? null : new Set(options.tables.map((table) => this.ownerOf(table)));
    // A read model that handles none of the written event types reads the same before and after them.
    const waited = this.runners.filter((r) => r.kind === 'projector'
      && (options.projector === undefined || r.name === options.projector)
      && (owners === null || owners.has(r.name))
      && (!eventTypes || (options.forWrite ? r.awaitedBy(eventTypes) : r.handlesAny(eventTypes))));
    // Without the types, make sure the head is read now, whatever woke the feed before.
    if (!eventTypes) this.feed.nudge();
    for (;;) {
      const progress = await this.progress(waited, position);
      if (progress === 'passed') return true;
      if (progress === 'unattended') return false;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      // Runners of this process tell when they advance; only a projector run elsewhere is looked at on a timer.
      const local = waited.filter((r) => r.holdsLease && r.servesReaders);
      const polled = local.length < waited.length;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, polled ? Math.min(STATE_POLL_MS, remaining) : remaining);
        function done() {
          clearTimeout(timer);
          for (const runner of waited) {
            runner.off('advanced', done);
            runner.off('lease', done);
          }
          resolve();
        }
        for (const runner of waited) {
          runner.on('advanced', done);
          runner.on('lease', done);
        }
      });
    }
  }

  /** The projector that writes read-model table `table`. */
  private ownerOf(table: string): string {
    const owner = this.tableOwners.get(table);
    if (owner === undefined) throw new Error(`no projector of this process owns table ${table}`);
    return owner;
  }

  /**
   * Whether readers see `position` in every projector's read model. Readers see the active version, whoever
   * runs it: a version building beside it (here or in another process) answers for nothing until it is
   * swapped in, so the active version's checkpoint is what counts then, and a projector without an active
   * version has not passed anything readers could see. 'unattended': an active version that has not passed
   * `position` is run by no process (this one runs only a newer version, still building), so waiting is vain.
   */
  private async progress(projectors: readonly ProjectionRunner[], position: Position): Promise<'passed' | 'behind' | 'unattended'> {
    const elsewhere: ProjectionRunner[] = [];
    for (const runner of projectors) {
      if (runner.holdsLease && runner.servesReaders) {
        if (!positionReached(runner.checkpoint, position)) return 'behind';
      } else if (runner.state === 'starting') {
        return 'behind';
      } else {
        elsewhere.push(runner);
      }
    }
    if (elsewhere.length === 0) return 'passed';
    const rows = await this.states.list();
    let progress: 'passed' | 'behind' | 'unattended' = 'passed';
    for (const runner of elsewhere) {
      const active = rows.find((r) => r.name === runner.name && r.status === 'active');
      if (!active) return 'behind';
      // Swapped in since this runner last looked: its own checkpoint may be ahead of the stored one.
      if (active.version === runner.version && runner.holdsLease && positionReached(runner.checkpoint, position)) continue;
      if (positionReached(active.checkpoint, position)) continue;
      // A lease released and not taken again: the process that ran that version stopped.
      if (active.version !== runner.version && active.leaseOwner === null) progress = 'unattended';
      else return 'behind';
    }
    return progress;
  }

  /** Every projection's state as stored, for readiness, metrics and the operator CLI. */
  async status(): Promise<ProjectionStateRow[]> {
    const rows = await this.states.list();
    // A runner of this process may be ahead of its stored checkpoint by events it ignores (see the runner).
    return rows.map((row) => {
      const local = this.runners.find((r) => r.holdsLease && r.name === row.name && r.version === row.version);
      return local?.checkpoint && !positionReached(row.checkpoint, local.checkpoint) ? { ...row, checkpoint: local.checkpoint } : row;
    });
  }
}
