/**
 * Start-up of the embedded service as a user starts it: `npm start` in a child process, on a new data directory
 * (in a fresh temporary directory) and again on the same directory once it exists. For each: the time from
 * spawning `npm start` to the first `GET /health` answering 200, the CPU time the processes used until then
 * (user + system, npm included: on a busy machine the wall time says more about the neighbours), and the
 * resident memory of the service process then (VmRSS) and its peak so far (VmHWM), from /proc. On a new
 * directory, also the time until the demo client's credentials are printed (they work from then on).
 *
 * BENCH_STARTUP_RUNS (default 3) sets how many times each start is measured; figures are medians, with the
 * range beside them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Report = (target: string, what: string, value: string) => void;

const RUNS = Math.max(1, Number(process.env.BENCH_STARTUP_RUNS ?? 3));
const HEALTH_POLL_MS = 10;
/** A start slower than this is reported as failed rather than waited for. */
const START_TIMEOUT_MS = 120_000;
const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux: the unit of /proc/<pid>/stat's CPU times
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

interface Start {
  firstHealthMs: number;
  credentialsMs: number | null;
  cpuMs: number;
  rssMb: number;
  hwmMb: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The process and its descendants (npm, the shell it runs, node). */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // gone
  }
  return [pid, ...children.flatMap(processTree)];
}

function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // Fields after the command name: state is [0]; utime, stime, cutime, cstime are [11..14].
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // gone
    }
  }
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** VmRSS and VmHWM of the service: the process of the tree with the largest resident set (npm is small). */
function serviceMemoryMb(pids: number[]): { rssMb: number; hwmMb: number } {
  let largest = { rssMb: NaN, hwmMb: NaN };
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
      const rssMb = kb('VmRSS') / 1024;
      if (!(rssMb <= largest.rssMb)) largest = { rssMb, hwmMb: kb('VmHWM') / 1024 };
    } catch {
      // gone
    }
  }
  return largest;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid!, 'SIGTERM'); // the whole group: npm and the service
  await exited;
}

async function measureStart(dataDir: string, waitForCredentials: boolean): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: repoRoot,
    detached: true, // its own process group, stopped as one
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_FORMAT: 'json' },
  });
  let output = '';
  let credentialsMs: number | null = null;
  const onOutput = (chunk: Buffer) => {
    output += chunk.toString();
    if (credentialsMs === null && /apiKey:\s+\S+/.test(output)) credentialsMs = performance.now() - started;
  };
  child.stdout!.on('data', onOutput);
  child.stderr!.on('data', onOutput);
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}):\n${output}`);
      if (performance.now() - started > START_TIMEOUT_MS) throw new Error(`no 200 from /health within ${START_TIMEOUT_MS} ms`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false);
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
    }
    const firstHealthMs = performance.now() - started;
    const pids = processTree(child.pid!);
    const result = { firstHealthMs, cpuMs: cpuMs(pids), ...serviceMemoryMb(pids) };
    if (waitForCredentials) {
      while (credentialsMs === null) {
        if (child.exitCode !== null || performance.now() - started > START_TIMEOUT_MS) throw new Error(`no demo credentials:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
      }
    }
    return { ...result, credentialsMs };
  } finally {
    await stop(child);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
function figure(values: number[], unit: string): string {
  const range = values.length > 1 ? ` (${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))})` : '';
  return `${Math.round(median(values)).toLocaleString('en-US')} ${unit}${range}`;
}

export async function benchStartup(report: Report): Promise<void> {
  const fresh: Start[] = [];
  const existing: Start[] = [];
  for (let run = 0; run < RUNS; run++) {
    const root = mkdtempSync(join(tmpdir(), 'ledger-bench-startup-'));
    try {
      fresh.push(await measureStart(join(root, 'data'), true));
      existing.push(await measureStart(join(root, 'data'), false));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  for (const [which, starts] of [['new data dir', fresh], ['existing data dir', existing]] as const) {
    report('embedded', `npm start → first /health 200, ${which}`, figure(starts.map((s) => s.firstHealthMs), 'ms'));
    report('embedded', `  CPU time until then (npm and service), ${which}`, figure(starts.map((s) => s.cpuMs), 'ms'));
    report('embedded', `  service VmRSS then / VmHWM, ${which}`,
      `${figure(starts.map((s) => s.rssMb), 'MB')} / ${figure(starts.map((s) => s.hwmMb), 'MB')}`);
  }
  report('embedded', 'npm start → demo credentials printed, new data dir', figure(fresh.map((s) => s.credentialsMs!), 'ms'));
}
