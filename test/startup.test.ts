import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyPgliteTemplate, isCluster, pgliteTemplateDir } from '../src/db/pgliteTemplate.ts';
import { listeningPort, startService, type ServiceProcess } from './support/serviceProcess.ts';
import { until } from './support/until.ts';

/** The cluster's system identifier, which initdb draws at random: the first 8 bytes of global/pg_control. */
function systemIdentifier(cluster: string): string {
  return readFileSync(join(cluster, 'global', 'pg_control')).subarray(0, 8).toString('hex');
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  expect(await service.exited, service.output()).to.equal(0);
}

describe('embedded start-up', function () {
  this.timeout(120_000);
  let dataDir: string;
  beforeEach(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-startup-')); });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a new data directory is a copy of the PGlite template; the demo credentials printed work at once and on the next start', async () => {
    const first = startService({ DATA_DIR: dataDir, PORT: '0', LOG_FORMAT: 'json' });
    let credentials: { clientId: string; clientSecret: string; apiKey: string };
    try {
      const port = await listeningPort(first);
      await until(() => /apiKey:\s+\S+/.test(first.output()), { what: 'the demo credentials are printed' });
      const field = (name: string) => new RegExp(`${name}:\\s+(\\S+)`).exec(first.output())![1]!;
      credentials = { clientId: field('clientId'), clientSecret: field('clientSecret'), apiKey: field('apiKey') };
      expect((await authenticate(port, credentials)).status).to.equal(200);
    } finally {
      await stop(first);
    }
    // A first start is not an incident: nothing at error level (50) or above.
    expect(first.output().split('\n').filter((line) => /"level":(5|6)\d/.test(line))).to.deep.equal([]);
    const cluster = join(dataDir, 'pglite');
    expect(systemIdentifier(cluster)).to.equal(systemIdentifier(pgliteTemplateDir()));
    expect(readdirSync(dataDir).filter((name) => name.includes('from-template'))).to.deep.equal([]);

    const second = startService({ DATA_DIR: dataDir, PORT: '0' });
    try {
      const port = await listeningPort(second);
      await until(() => /demo client \S+ exists/.test(second.output()), { what: 'the demo client is found' });
      expect(second.output()).not.to.match(/clientSecret/);
      expect((await authenticate(port, credentials)).status).to.equal(200);
    } finally {
      await stop(second);
    }
  });
});

async function authenticate(port: number, c: { clientId: string; clientSecret: string; apiKey: string }): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': c.apiKey, 'user-agent': 'startup-test' },
    body: JSON.stringify({ clientId: c.clientId, clientSecret: c.clientSecret }),
  });
}

describe('copying the PGlite template into a data directory', () => {
  let root: string;
  let template: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'ledger-template-'));
    template = join(root, 'template');
    mkdirSync(join(template, 'base'), { recursive: true });
    writeFileSync(join(template, 'PG_VERSION'), '17\n');
    writeFileSync(join(template, 'base', 'file'), 'template');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('fills a missing or empty directory, and removes what an interrupted copy left beside it', () => {
    const dataDir = join(root, 'data', 'pglite');
    mkdirSync(`${dataDir}.from-template-999999`, { recursive: true });
    expect(copyPgliteTemplate(template, dataDir)).to.equal(true);
    expect(readFileSync(join(dataDir, 'base', 'file'), 'utf8')).to.equal('template');
    expect(readdirSync(join(root, 'data'))).to.deep.equal(['pglite']);

    const empty = join(root, 'empty');
    mkdirSync(empty);
    expect(copyPgliteTemplate(template, empty)).to.equal(true);
    expect(isCluster(empty)).to.equal(true);
  });

  it('leaves alone a directory that has a cluster or any file, and does nothing without a template', () => {
    const existing = join(root, 'existing');
    mkdirSync(existing);
    writeFileSync(join(existing, 'PG_VERSION'), '17\n');
    expect(copyPgliteTemplate(template, existing)).to.equal(false);
    expect(existsSync(join(existing, 'base'))).to.equal(false);

    const other = join(root, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'notes.txt'), 'mine');
    expect(copyPgliteTemplate(template, other)).to.equal(false);
    expect(readdirSync(other)).to.deep.equal(['notes.txt']);

    expect(copyPgliteTemplate(join(root, 'no-template'), join(root, 'fresh'))).to.equal(false);
    expect(existsSync(join(root, 'fresh'))).to.equal(false);
  });
});
