/**
 * Where a request's time goes, measured from outside the service code: the bench harness wraps the HTTP
 * handler (an AsyncLocalStorage context per request), the database pool (waiting for a connection, and each
 * statement's round trip), and `services.readYourWrites`. Statements made outside any request are the
 * projection runners'. Also CPU of this process, of the local Postgres server (Linux /proc, when readable),
 * and event-loop utilisation. The request tracing costs the service much of its throughput, so the bench turns
 * it on only in diagnose mode (see bench/http.ts); the CPU and runner figures are cheap and always on.
 *
 * BENCH_HTTP_CPU_PROFILE=<dir> also writes a V8 CPU profile of this process per measured run (open it in
 * Chrome DevTools or speedscope); that one does slow the service down a little.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';
import type pg from 'pg';
import type { Services } from '../src/http/services.ts';
import type { ProjectionDaemon } from '../src/projection/daemon.ts';

export interface Statement {
  text: string;
  values: unknown[];
}

interface RequestTrace {
  startedAt: number;
  /** Set on one request per window: the statements it made, in order. */
  statements?: Statement[];
  poolWaitMs: number;
  queryMs: number;
  queries: number;
  rywMs: number;
}

export interface Profile {
  seconds: number;
  requests: number;
  /** Per request, means over the window (server side: from the first byte parsed to the answer sent). */
  serverMs: { mean: number; p50: number; p99: number };
  poolWaitMs: number;
  queryMs: number;
  queries: number;
  rywMs: { mean: number; p50: number; p99: number };
  /** Statements outside any request (projection runners, the idempotency purge...), per second. */
  backgroundQueriesPerSecond: number;
  backgroundQueryMsPerSecond: number;
  /** Mean wait for a pooled connection outside requests (projection runners), ms. */
  backgroundPoolWaitMs: number;
  /** Runner batches (checkpoint advances) per second, all runners. */
  runnerBatchesPerSecond: number;
  eventLoopUtilization: number;
  /** How late timers fired (event-loop lag), ms. */
  eventLoopDelayMs: { mean: number; p99: number };
  /** The statements of one request of the window. */
  sampleStatements: Statement[];
  /** The whole machine over the window, shares of all its CPU time (steal: taken by the hypervisor). */
  machine: { busy: number; iowait: number; steal: number; idle: number } | null;
  /** Share of one core. */
  serviceCpu: number;
  postgresCpu: number | null;
}

const traces = new AsyncLocalStorage<RequestTrace>();
const DELAY_RESOLUTION_MS = 10;
const wrapped = Symbol('bench-wrapped');

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);

/** CPU seconds of every process named `postgres` (the local server and its backends), or null. */
function postgresCpuSeconds(): Map<number, number> | null {
  try {
    const ticks = 100; // USER_HZ on Linux
    const result = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const close = stat.lastIndexOf(')');
        const name = stat.slice(stat.indexOf('(') + 1, close);
        if (name !== 'postgres') continue;
        const fields = stat.slice(close + 2).split(' ');
        result.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / ticks);
      } catch {
        // the process ended meanwhile
      }
    }
    return result.size > 0 ? result : null;
  } catch {
    return null;
  }
}

/** Jiffies of the whole machine by kind (Linux /proc/stat), or null. */
function machineCpu(): Record<'busy' | 'iowait' | 'steal' | 'idle', number> | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = fields as [number, number, number, number, number, number, number, number];
    return { busy: user + nice + system + irq + softirq, iowait, steal, idle };
  } catch {
    return null;
  }
}

export class Profiler {
  private active = false;
  private startedAt = 0;
  private finished: RequestTrace[] = [];
  private serverTimes: number[] = [];
  private rywTimes: number[] = [];
  private backgroundQueries = 0;
  private backgroundQueryMs = 0;
  private backgroundConnects = 0;
  private backgroundPoolWaitMs = 0;
  private runnerBatches = 0;
  private elu: EventLoopUtilization | null = null;
  private cpu: NodeJS.CpuUsage | null = null;
  private pgCpu: Map<number, number> | null = null;
  private sampled: RequestTrace | null = null;
  private machine: ReturnType<typeof machineCpu> = null;
  private delay: IntervalHistogram | null = null;

  /** The HTTP handler to serve: `app` run inside a trace of its own. */
  handler(app: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      const trace: RequestTrace = { startedAt: performance.now(), poolWaitMs: 0, queryMs: 0, queries: 0, rywMs: 0 };
      if (this.active && !this.sampled) {
        this.sampled = trace;
        trace.statements = [];
      }
      res.on('finish', () => {
        if (!this.active) return;
        this.finished.push(trace);
        this.serverTimes.push(performance.now() - trace.startedAt);
      });
      traces.run(trace, () => app(req, res));
    };
  }

  instrumentPool(pool: pg.Pool): void {
    const connect = pool.connect.bind(pool) as (callback?: unknown) => Promise<pg.PoolClient> | undefined;
    const instrumentClient = (client: pg.PoolClient) => {
      const tagged = client as pg.PoolClient & { [wrapped]?: true };
      if (tagged[wrapped]) return;
      tagged[wrapped] = true;
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const result = query(...args);
        if (typeof args[args.length - 1] === 'function' || !(result instanceof Promise)) return result;
        const trace = traces.getStore();
        if (trace?.statements) {
          const [first, second] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
          trace.statements.push(typeof first === 'string' ? { text: first, values: second ?? [] } : { text: first.text, values: first.values ?? [] });
        }
        const started = performance.now();
        const done = () => {
          if (!this.active) return;
          const ms = performance.now() - started;
          if (trace) {
            trace.queries++;
            trace.queryMs += ms;
          } else {
            this.backgroundQueries++;
            this.backgroundQueryMs += ms;
          }
        };
        result.then(done, done);
        return result;
      };
    };
    (pool as unknown as { connect: (callback?: unknown) => unknown }).connect = (callback?: unknown) => {
      if (typeof callback === 'function') return connect(callback);
      const trace = traces.getStore();
      const started = performance.now();
      return connect()!.then((client) => {
        const waited = performance.now() - started;
        if (trace) {
          trace.poolWaitMs += waited;
        } else if (this.active) {
          this.backgroundConnects++;
          this.backgroundPoolWaitMs += waited;
        }
        instrumentClient(client);
        return client;
      });
    };
  }

  wrapReadYourWrites(services: Services): void {
    const original = services.readYourWrites.bind(services);
    services.readYourWrites = async (position, eventTypes) => {
      const started = performance.now();
      try {
        await original(position, eventTypes);
      } finally {
        const ms = performance.now() - started;
        const trace = traces.getStore();
        // Waits of requests only: those of background work (reactors, jobs) are not a request's latency.
        if (trace) trace.rywMs += ms;
        if (trace && this.active) this.rywTimes.push(ms);
      }
    };
  }

  watchRunners(projections: ProjectionDaemon): void {
    for (const runner of projections.projectionRunners) runner.on('advanced', () => { if (this.active) this.runnerBatches++; });
  }

  private session: Session | null = null;

  /** With BENCH_HTTP_CPU_PROFILE set: starts the V8 profiler (stopped, and written, by `saveCpuProfile`). */
  async startCpuProfile(): Promise<void> {
    if (!process.env.BENCH_HTTP_CPU_PROFILE) return;
    this.session = new Session();
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  async saveCpuProfile(name: string): Promise<string | null> {
    const dir = process.env.BENCH_HTTP_CPU_PROFILE;
    if (!dir || !this.session) return null;
    const { profile } = await this.session.post('Profiler.stop');
    this.session.disconnect();
    this.session = null;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name.replace(/[^A-Za-z0-9_-]+/g, '_')}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    return file;
  }

  start(): void {
    this.finished = [];
    this.serverTimes = [];
    this.rywTimes = [];
    this.backgroundQueries = 0;
    this.backgroundQueryMs = 0;
    this.backgroundConnects = 0;
    this.backgroundPoolWaitMs = 0;
    this.runnerBatches = 0;
    this.sampled = null;
    this.delay = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS });
    this.delay.enable();
    this.elu = performance.eventLoopUtilization();
    this.cpu = process.cpuUsage();
    this.pgCpu = postgresCpuSeconds();
    this.machine = machineCpu();
    this.startedAt = performance.now();
    this.active = true;
  }

  stop(): Profile {
    this.active = false;
    this.delay!.disable();
    const seconds = (performance.now() - this.startedAt) / 1000;
    const elu = performance.eventLoopUtilization(this.elu!);
    const cpu = process.cpuUsage(this.cpu!);
    let postgresCpu: number | null = null;
    const pgNow = postgresCpuSeconds();
    if (this.pgCpu && pgNow) {
      let used = 0;
      for (const [pid, secondsNow] of pgNow) used += secondsNow - (this.pgCpu.get(pid) ?? 0);
      postgresCpu = used / seconds;
    }
    let machine: Profile['machine'] = null;
    const machineNow = machineCpu();
    if (this.machine && machineNow) {
      const d = {
        busy: machineNow.busy - this.machine.busy, iowait: machineNow.iowait - this.machine.iowait,
        steal: machineNow.steal - this.machine.steal, idle: machineNow.idle - this.machine.idle,
      };
      const all = d.busy + d.iowait + d.steal + d.idle || 1;
      machine = { busy: d.busy / all, iowait: d.iowait / all, steal: d.steal / all, idle: d.idle / all };
    }
    const server = [...this.serverTimes].sort((a, b) => a - b);
    const ryw = [...this.rywTimes].sort((a, b) => a - b);
    const n = this.finished.length;
    return {
      seconds,
      requests: n,
      serverMs: { mean: mean(server), p50: percentile(server, 50), p99: percentile(server, 99) },
      poolWaitMs: mean(this.finished.map((t) => t.poolWaitMs)),
      queryMs: mean(this.finished.map((t) => t.queryMs)),
      queries: mean(this.finished.map((t) => t.queries)),
      rywMs: { mean: mean(ryw), p50: percentile(ryw, 50), p99: percentile(ryw, 99) },
      backgroundQueriesPerSecond: this.backgroundQueries / seconds,
      backgroundQueryMsPerSecond: this.backgroundQueryMs / seconds,
      backgroundPoolWaitMs: this.backgroundConnects ? this.backgroundPoolWaitMs / this.backgroundConnects : 0,
      runnerBatchesPerSecond: this.runnerBatches / seconds,
      eventLoopUtilization: elu.utilization,
      // The histogram holds the timer's whole interval; the lag is what exceeds the resolution.
      eventLoopDelayMs: {
        mean: Math.max(0, this.delay!.mean / 1e6 - DELAY_RESOLUTION_MS),
        p99: Math.max(0, this.delay!.percentile(99) / 1e6 - DELAY_RESOLUTION_MS),
      },
      sampleStatements: this.sampled?.statements ?? [],
      machine,
      serviceCpu: (cpu.user + cpu.system) / 1e6 / seconds,
      postgresCpu,
    };
  }
}
