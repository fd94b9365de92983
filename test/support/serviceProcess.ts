/** Starts the service as `npm start` would (a child process), for tests of the process as a whole. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

let built = false;

/**
 * The compiled service (dist/) as the sources in the tree are: `npm start` would rebuild it too, but here
 * the rebuild happens before the clock of `listeningPort` starts. Once per test process; about 0.1 s when
 * nothing changed.
 */
export function ensureBuilt(): void {
  if (built) return;
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
  built = true;
}

export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Embedded mode unless `env` names another: the suite's own DATABASE_URL is not inherited. */
export function startService(env: Record<string, string>): ServiceProcess {
  const { DATABASE_URL: _db, EVENTSTORE_CONNECTION_STRING: _es, ...inherited } = process.env;
  ensureBuilt();
  const child = spawn(process.execPath, ['scripts/run.mjs', 'main'], {
    cwd: repoRoot,
    env: { ...inherited, LOG_FORMAT: 'json', LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Resolves with the port once the service says where it listens. */
export async function listeningPort(service: ServiceProcess, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /listening on http:\/\/[^:]+:(\d+)/.exec(service.output());
    if (match) return Number(match[1]);
    if (service.child.exitCode !== null) throw new Error(`service exited early:\n${service.output()}`);
    if (Date.now() > deadline) throw new Error(`service did not start in time:\n${service.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
