/**
 * PGlite does not lock its data directory, and two processes writing one directory would corrupt it. The
 * service takes an exclusive lock file (created with O_EXCL) holding its pid; a lock whose process is gone
 * is stale and taken over.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * The lock file appears with its content in one step (written aside, then hard-linked into place, which
 * fails if it exists), so nobody ever reads a half-written lock. A stale lock is renamed away before it is
 * replaced: of two processes taking over the same stale lock, only one rename succeeds.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  let content = `${process.pid}\n${new Date().toISOString()}\n`;
  const pending = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(pending, content, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(pending, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = Number.parseInt(readFileSync(path, 'utf8').split('\n')[0] ?? '', 10);
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
          throw new DataDirLockedError(dataDir, holder);
        }
        const moved = `${path}.stale.${process.pid}`;
        try {
          renameSync(path, moved); // only one contender wins this
        } catch (renameError) {
          if ((renameError as NodeJS.ErrnoException).code !== 'ENOENT') throw renameError;
          continue;
        }
        // Between our read and our rename another process may have taken the lock: then give it back.
        const movedHolder = Number.parseInt(readFileSync(moved, 'utf8').split('\n')[0] ?? '', 10);
        if (Number.isInteger(movedHolder) && movedHolder !== process.pid && processAlive(movedHolder)) {
          try {
            linkSync(moved, path);
          } finally {
            rmSync(moved, { force: true });
          }
          throw new DataDirLockedError(dataDir, movedHolder);
        }
        rmSync(moved, { force: true });
        continue;
      }
      let released = false;
      return {
        path,
        announcePort(port) {
          if (released) return;
          const announced = `${content.split('\n').slice(0, 2).join('\n')}\nport=${port}\n`;
          const aside = `${pending}.port`;
          writeFileSync(aside, announced, { mode: 0o600 });
          renameSync(aside, path);
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
    }
    throw new Error(`could not take the lock on ${dataDir}`);
  } finally {
    rmSync(pending, { force: true });
  }
}
