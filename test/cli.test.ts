import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listeningPort, repoRoot, startService } from './support/serviceProcess.ts';

interface Run { code: number | null; stdout: string; stderr: string }

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const { DATABASE_URL: _db, EVENTSTORE_CONNECTION_STRING: _es, ...inherited } = process.env;
  const child = spawn('npm', ['run', 'cli', '--', ...args], { cwd: repoRoot, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

async function authenticates(port: number, credentials: { clientId: string; clientSecret: string; apiKey: string }): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': credentials.apiKey },
    body: JSON.stringify({ clientId: credentials.clientId, clientSecret: credentials.clientSecret }),
  });
  return response.status;
}

describe('cli: clients create', function () {
  this.timeout(180_000);
  let dataDir: string;
  beforeEach(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-cli-')); });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('with the service stopped, opens the store itself and prints the credentials alone on stdout', async () => {
    const run = await cli(['clients', 'create', '--name', 'Offline Shop'], { DATA_DIR: dataDir });
    expect(run.code, run.stderr).to.equal(0);
    const credentials = JSON.parse(run.stdout);
    expect(Object.keys(credentials).sort()).to.deep.equal(['apiKey', 'clientId', 'clientSecret', 'name']);
    expect(credentials.name).to.equal('Offline Shop');

    const service = startService({ DATA_DIR: dataDir, PORT: '0' });
    try {
      expect(await authenticates(await listeningPort(service), credentials)).to.equal(200);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('with the service running, calls its operator route; without the operator key it says what is missing', async () => {
    const service = startService({ DATA_DIR: dataDir, PORT: '0', OPERATOR_API_KEY: 'cli-test-operator-key' });
    try {
      const port = await listeningPort(service);
      const refused = await cli(['clients', 'create', '--name', 'No Key'], { DATA_DIR: dataDir });
      expect(refused.code).to.equal(2);
      expect(refused.stdout).to.equal('');
      expect(refused.stderr).to.match(/OPERATOR_API_KEY/);

      const run = await cli(['clients', 'create', '--name', 'Online Shop'], { DATA_DIR: dataDir, OPERATOR_API_KEY: 'cli-test-operator-key' });
      expect(run.code, run.stderr).to.equal(0);
      const credentials = JSON.parse(run.stdout);
      expect(credentials.name).to.equal('Online Shop');
      expect(await authenticates(port, credentials)).to.equal(200);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('refuses a missing name with usage', async () => {
    const run = await cli(['clients', 'create'], { DATA_DIR: dataDir });
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/--name is required/);
  });
});

describe('cli: integrity', function () {
  this.timeout(180_000);
  let dataDir: string;
  beforeEach(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-cli-')); });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('seals the history and verifies it: the report alone on stdout, exit 0; refused while the service holds the data', async () => {
    expect((await cli(['clients', 'create', '--name', 'Audited Shop'], { DATA_DIR: dataDir })).code).to.equal(0);
    const sealed = await cli(['integrity', 'seal'], { DATA_DIR: dataDir });
    expect(sealed.code, sealed.stderr).to.equal(0);
    expect(JSON.parse(sealed.stdout)).to.include({ sequence: 1, fromPosition: null });

    const run = await cli(['verify', 'integrity'], { DATA_DIR: dataDir });
    expect(run.code, run.stderr).to.equal(0);
    const report = JSON.parse(run.stdout);
    expect(Object.keys(report).sort()).to.deep.equal(
      ['digests', 'events', 'eventsAfterLatestDigest', 'latestDigest', 'ok', 'problems', 'streams', 'unchainedEvents']);
    expect(report).to.include({ ok: true, digests: 1, unchainedEvents: 0, eventsAfterLatestDigest: 0 });
    expect(report.events).to.be.greaterThan(1);

    const service = startService({ DATA_DIR: dataDir, PORT: '0' });
    try {
      await listeningPort(service);
      const refused = await cli(['verify', 'integrity'], { DATA_DIR: dataDir });
      expect(refused.code).to.equal(2);
      expect(refused.stdout).to.equal('');
      expect(refused.stderr).to.match(/stop it first/);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }

    // The service built the read models: finance's commands read them.
    const trial = await cli(['ledger', 'trial-balance', '--json'], { DATA_DIR: dataDir });
    expect(trial.code, trial.stderr).to.equal(0);
    expect(JSON.parse(trial.stdout)).to.be.an('array');
    const balances = await cli(['ledger', 'balances', '--as-of', new Date().toISOString(), '--json'], { DATA_DIR: dataDir });
    expect(balances.code, balances.stderr).to.equal(0);
    expect(JSON.parse(balances.stdout)).to.be.an('array');
    const badInstant = await cli(['ledger', 'balances', '--as-of', 'yesterday'], { DATA_DIR: dataDir });
    expect(badInstant.code).to.equal(2);
    expect(badInstant.stderr).to.match(/--as-of must be an ISO 8601 instant/);

    const exported = await cli(['export', 'events', '--from', '2000-01-01T00:00:00Z', '--to', '2100-01-01T00:00:00Z', '--stream-prefix', 'client-'],
      { DATA_DIR: dataDir });
    expect(exported.code, exported.stderr).to.equal(0);
    const lines = exported.stdout.trim().split('\n').map((line) => JSON.parse(line));
    // Our client and the demo client the embedded service registers on its first start.
    expect(lines.map((l) => l.type)).to.deep.equal(['ClientRegistered', 'ClientRegistered']);
    expect(Object.keys(lines[0]).sort()).to.deep.equal(['data', 'id', 'metadata', 'position', 'recordedAt', 'revision', 'schemaVersion', 'stream', 'type']);
  });
});
