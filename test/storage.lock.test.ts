import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDataDirLock, DataDirLockedError, LOCK_FILE } from '../src/db/dataDirLock.ts';
import { listeningPort, startService } from './support/serviceProcess.ts';
import { writeFileSync, existsSync } from 'node:fs';

describe('embedded data directory lock', () => {
  let dataDir: string;
  beforeEach(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-lock-')); });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a second holder is refused while the first holds the lock; released, it can be taken again', () => {
    const first = acquireDataDirLock(dataDir);
    // Another process's lock: simulate it with the parent's pid, which is alive.
    first.release();
    writeFileSync(join(dataDir, LOCK_FILE), `${process.ppid}\nsomewhen\n`);
    expect(() => acquireDataDirLock(dataDir)).to.throw(DataDirLockedError, new RegExp(`pid ${process.ppid}`));
    rmSync(join(dataDir, LOCK_FILE));
    const again = acquireDataDirLock(dataDir);
    again.release();
    expect(existsSync(join(dataDir, LOCK_FILE))).to.equal(false);
  });

  it('takes over a stale lock whose process is gone', () => {
    writeFileSync(join(dataDir, LOCK_FILE), '999999999\nlong ago\n');
    const lock = acquireDataDirLock(dataDir);
    lock.release();
  });

  it('a second `npm start` on the same data dir exits with a clear message and leaves the first serving', async function () {
    this.timeout(120_000);
    const first = startService({ DATA_DIR: dataDir, PORT: '0' });
    try {
      const port = await listeningPort(first);
      const second = startService({ DATA_DIR: dataDir, PORT: '0' });
      const code = await second.exited;
      expect(code).to.equal(1);
      expect(second.output()).to.match(/data directory .* is in use by another payments-ledger process \(pid \d+\)/);
      expect(second.output()).not.to.match(/\n\s+at /); // a message, not a stack trace

      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).to.equal(200);
      expect(first.child.exitCode).to.equal(null);
    } finally {
      first.child.kill('SIGTERM');
      expect(await first.exited).to.equal(0);
    }
    expect(existsSync(join(dataDir, LOCK_FILE))).to.equal(false);
  });
});
