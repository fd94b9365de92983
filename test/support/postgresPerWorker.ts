/**
 * A Postgres server of its own for each worker of a parallel run, when TEST_DATABASE_URLS names several
 * (space-separated; `.ci/run` starts two): loaded before the test files (.mocharc's `require`), it sets this
 * worker's DATABASE_URL to the first server no other live worker holds.
 *
 * Why: the event feed on Postgres shows an event once every transaction older than it has ended anywhere on the
 * server, so two test files on one server slow down each other's waits for the read models, and a test that reads
 * the feed at once after its append can miss it while the other file's transaction is open. One server per worker
 * keeps each file's feed to itself, as in a run of one file at a time.
 *
 * Only workers take a server: mocha's parallel workers are forked with an IPC channel, the main process (which
 * loads this file too) is not. Without TEST_DATABASE_URLS, with one URL, outside a worker, or when every server is
 * held, DATABASE_URL stays as it is (one server shared, which is still correct, only slower).
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether process `pid` is still running. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the claim file: true when this process now holds it (a claim of a process that is gone is taken over). */
function claim(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(path, 'utf8').trim());
    // A holder that has not written its pid yet is alive by definition.
    if (!Number.isInteger(holder) || holder === 0 || alive(holder)) return false;
    rmSync(path, { force: true });
  }
  return false;
}

const urls = (process.env.TEST_DATABASE_URLS ?? '').split(/\s+/).filter(Boolean);
if (urls.length > 1 && typeof process.send === 'function') {
  // The workers of one run share their parent, the main mocha process: claims are per run.
  const dir = join(tmpdir(), `payments-ledger-test-servers-${process.ppid}-${createHash('sha256').update(urls.join(' ')).digest('hex').slice(0, 12)}`);
  mkdirSync(dir, { recursive: true });
  const index = urls.findIndex((_, i) => claim(join(dir, `${i}.pid`)));
  if (index >= 0) {
    process.env.DATABASE_URL = urls[index];
    // A worker ended by a signal leaves its claim: a worker started after it in the same run takes it over.
    process.once('exit', () => {
      rmSync(join(dir, `${index}.pid`), { force: true });
      try {
        rmdirSync(dir);
      } catch {
        // Another worker's claim is still in it: the last worker out removes it.
      }
    });
  }
}
