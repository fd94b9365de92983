/**
 * A PostgreSQL server of a test's own, in a temporary directory, which the test may stop and start again: an
 * outage of the real database, not a simulated one. Needs the server binaries (Debian's postgresql package;
 * `.ci/run` installs it); `postgresBinaries()` is null without them, and such suites are pending.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function postgresBinaries(): string | null {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // No pg_config on the PATH: look where Debian puts the server.
  }
  if (existsSync('/usr/lib/postgresql')) {
    for (const version of readdirSync('/usr/lib/postgresql').sort().reverse()) candidates.push(`/usr/lib/postgresql/${version}/bin`);
  }
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) ?? null;
}

export interface ThrowawayPostgres {
  url: string;
  stop(): void;
  start(): void;
  destroy(): void;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** initdb refuses to run as root: as root, the server runs as the `postgres` user. */
function asPostgres(command: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  execFileSync(root ? 'runuser' : command, root ? ['-u', 'postgres', '--', command, ...args] : args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = postgresBinaries();
  if (!bin) throw new Error('no PostgreSQL server binaries');
  const root = mkdtempSync(join(tmpdir(), 'ledger-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, uid);
  }
  const data = join(root, 'data');
  const port = await freePort();
  asPostgres(join(bin, 'initdb'), ['-D', data, '--auth=trust', '-U', 'postgres', '--encoding=UTF8']);
  const start = () => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', join(root, 'server.log'), '-w', '-t', '60', '-o',
    `-p ${port} -c listen_addresses=127.0.0.1 -k ${root} -c max_connections=100 -c fsync=off`, 'start']);
  // `fast`: sessions are ended at once, as when an operator restarts the server.
  const stop = () => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    start,
    destroy() {
      try {
        asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped.
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
