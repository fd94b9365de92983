/**
 * What the HTTP benchmarks share: the load generator in its child process (./loadgen.ts) and the report of a run
 * (requests/s, latency, answers, and where the service's and the machine's time went).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import type { Profile } from './profile.ts';

export type Report = (target: string, what: string, value: string) => void;

export const CONNECTIONS = 16;
/** See bench/http.ts: traced runs report where a request's time went. */
const DIAGNOSE = !!process.env.BENCH_HTTP_DIAGNOSE;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number) => `${fmt(n, n < 10 ? 2 : 1)} ms`;

export interface LoadGenerator {
  run(spec: Omit<LoadSpec, 'kind'>): Promise<LoadResult>;
  close(): void;
}

export async function startLoadGenerator(): Promise<LoadGenerator> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./loadgen.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`load generator exited (${code})`)));
  });
  return {
    run(spec) {
      return new Promise((resolve, reject) => {
        // A child that dies mid-run answers nothing: fail the run rather than wait for ever.
        const died = (code: number | null) => reject(new Error(`load generator exited mid-run (${code})`));
        child.once('exit', died);
        child.once('message', (message: { kind: 'result'; result: LoadResult } | { kind: 'error'; message: string }) => {
          child.off('exit', died);
          if (message.kind === 'result') resolve(message.result);
          else reject(new Error(message.message));
        });
        child.send({ kind: 'run', ...spec });
      });
    },
    close() {
      if (child.connected) child.send({ kind: 'exit' });
    },
  };
}

// -------------------------------------------------------------------------------------------- runs

export function reportLoad(target: string, what: string, result: LoadResult, report: Report, targets: { rate?: string; latency: string }): void {
  report(target, `${what}: requests/s`,
    `${fmt(result.requestsPerSecond)}/s (${fmt(result.completed)} in ${fmt(result.seconds, 1)} s)${targets.rate ? `  ${targets.rate}` : ''}`);
  report(target, `${what}: latency p50 / p99`,
    `${ms(result.latency.p50)} / ${ms(result.latency.p99)} (mean ${ms(result.latency.mean)}, max ${ms(result.latency.max)})  ${targets.latency}`);
  const codes = Object.entries(result.statusCodes).map(([code, n]) => `${code}×${fmt(n)}`).join(' ');
  report(target, `${what}: non-2xx / errors / timeouts`,
    `${fmt(result.non2xx)} / ${fmt(result.errors)} / ${fmt(result.timeouts)}  (${codes || 'no answers'}; must be 0 / 0 / 0)`);
  if (result.firstError) {
    report(target, `${what}: first non-2xx answer`, `${result.firstError.status} ${result.firstError.body.replace(/\s+/g, ' ').slice(0, 400)}`);
  }
}

export function reportProfile(target: string, what: string, profile: Profile, load: LoadResult, report: Report): void {
  if (DIAGNOSE) reportTraces(target, what, profile, report);
  else report(target, `${what}: projection runners meanwhile`, `${fmt(profile.runnerBatchesPerSecond)} batches/s`);
  const pgCpu = profile.postgresCpu === null || target !== 'postgres' ? '' : `, postgres ${fmt(profile.postgresCpu * 100)}%`;
  report(target, `${what}: CPU (100% = one core)`,
    `service ${fmt(profile.serviceCpu * 100)}% (event loop busy ${fmt(profile.eventLoopUtilization * 100)}%), load generator ${fmt(load.cpuMs / 10 / load.seconds)}%${pgCpu}`);
  const m = profile.machine;
  if (m) {
    report(target, `${what}: whole machine (all CPUs)`,
      `busy ${fmt(m.busy * 100)}%, idle ${fmt(m.idle * 100)}%, iowait ${fmt(m.iowait * 100)}%, steal ${fmt(m.steal * 100)}%`);
  }
}

function reportTraces(target: string, what: string, profile: Profile, report: Report): void {
  report(target, `${what}: server time per request, mean (p50/p99)`,
    `${ms(profile.serverMs.mean)} (${ms(profile.serverMs.p50)} / ${ms(profile.serverMs.p99)}) over ${fmt(profile.requests)} requests`);
  report(target, `${what}:   SQL statements: count, summed wall time`,
    `${fmt(profile.queries, 1)}, ${ms(profile.queryMs)} (round trips incl. event-loop lag; parallel ones overlap)`);
  report(target, `${what}:   waiting for a pooled connection`, ms(profile.poolWaitMs));
  if (profile.rywMs.mean > 0) {
    report(target, `${what}:   read-your-writes wait per write, mean (p50/p99)`, `${ms(profile.rywMs.mean)} (${ms(profile.rywMs.p50)} / ${ms(profile.rywMs.p99)})`);
  }
  report(target, `${what}: event-loop lag mean / p99`, `${ms(profile.eventLoopDelayMs.mean)} / ${ms(profile.eventLoopDelayMs.p99)}`);
  report(target, `${what}: projection runners meanwhile`,
    `${fmt(profile.runnerBatchesPerSecond)} batches/s, ${fmt(profile.backgroundQueriesPerSecond)} statements/s ` +
    `(${fmt(profile.backgroundQueryMsPerSecond / 1000, 2)} connections busy, ${ms(profile.backgroundPoolWaitMs)} mean wait for one)`);
}

