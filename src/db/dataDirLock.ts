/**
 * PGlite does not lock its data directory, and two processes writing one directory would corrupt it. The
 * service takes an exclusive lock file (created with O_EXCL) holding its pid; a lock whose process is gone
 * is stale and taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const LOCK_FILE = 'payments-ledger.lock';

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  constructor(readonly dataDir: string, readonly holderPid: number) {
    super(`data directory ${dataDir} is in use by another payments-ledger process (pid ${holderPid}). ` +
      'Stop that process first, or start this one with another DATA_DIR. ' +
      `If no such process exists, delete ${join(dataDir, LOCK_FILE)}.`);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Records the HTTP port, so local tools (the CLI) can reach the running service. */
  announcePort(port: number): void;
  release(): void;
}

export interface LockHolder {
  pid: number;
  port: number | null;
}

/** The live process holding the data directory, if any. */
export function lockHolder(dataDir: string): LockHolder | null {
  let content: string;
  try {
    content = readFileSync(join(dataDir, LOCK_FILE), 'utf8');
  } catch {
    return null;
  }
  const [pidLine, , portLine] = content.split('\n');
  const pid = Number.parseInt(pidLine ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return null;
  const port = /^port=(\d+)$/.exec(portLine ?? '');
  return { pid, port: port ? Number(port[1]) : null };
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  let content = `${process.pid}\n${new Date().toISOString()}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, content);
      closeSync(fd);
      let released = false;
      return {
        path,
        announcePort(port) {
          if (released) return;
          const announced = `${content.split('\n').slice(0, 2).join('\n')}\nport=${port}\n`;
          writeFileSync(path, announced, { mode: 0o600 });
          content = announced;
        },
        release() {
          if (released) return;
          released = true;
          try {
            if (readFileSync(path, 'utf8') === content) rmSync(path);
          } catch {
            // already gone
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSync(path, 'utf8').split('\n')[0] ?? '', 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
        throw new DataDirLockedError(dataDir, holder);
      }
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not take the lock on ${dataDir}`);
}
