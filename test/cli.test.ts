import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchemaAndProjections } from '../src/db/dropSchema.ts';
import { listeningPort, repoRoot, startService, type ServiceProcess } from './support/serviceProcess.ts';
import { testSchemaName } from './support/targets.ts';
import { until } from './support/until.ts';

interface Run { code: number | null; stdout: string; stderr: string }

/**
 * The CLI as `npm run cli -- …` runs it (`node scripts/run.mjs cli …`), without npm's own start-up (about 0.4 s of
 * CPU a call); test/examples.test.ts runs the documented `npm run cli` commands through npm. `cwd` is the
 * project's root unless given, as under npm.
 */
function cli(args: string[], env: Record<string, string>, cwd = repoRoot): Promise<Run> {
  const { DATABASE_URL: _db, EVENTSTORE_CONNECTION_STRING: _es, ...inherited } = process.env;
  const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'run.mjs'), 'cli', ...args],
    { cwd, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

  it('seals the history and verifies it: the report alone on stdout or in the file --output names, never in the working directory; refused while the service holds the data', async () => {
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

    // The report goes where the user says, and nowhere else: never a file in the working directory, an empty one
    // of its own here (the project's root may get files from suites running alongside).
    const workingDirectory = join(dataDir, 'cwd');
    mkdirSync(workingDirectory);
    const named = join(dataDir, 'reports', 'integrity.json');
    mkdirSync(join(dataDir, 'reports'));
    const toFile = await cli(['verify', 'integrity', '--output', named], { DATA_DIR: dataDir }, workingDirectory);
    expect(toFile.code, toFile.stderr).to.equal(0);
    expect(toFile.stdout).to.equal('');
    expect(JSON.parse(readFileSync(named, 'utf8'))).to.deep.include({ ok: true, digests: 1 });
    const nowhere = await cli(['verify', 'integrity', '--output', join(dataDir, 'missing-folder', 'r.json')], { DATA_DIR: dataDir }, workingDirectory);
    expect(nowhere.code).to.equal(2);
    expect(nowhere.stderr).to.match(/--output .*missing-folder.* cannot be written/);
    expect(readdirSync(workingDirectory), 'files in the working directory').to.deep.equal([]);

    const service = startService({ DATA_DIR: dataDir, PORT: '0' });
    try {
      await listeningPort(service);
      const refusedToFile = await cli(['verify', 'integrity', '-o', named], { DATA_DIR: dataDir });
      expect(refusedToFile.code).to.equal(2);
      expect(existsSync(named), 'a command that failed leaves no report').to.equal(false);
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

const OPERATOR_KEY = 'cli-test-operator-key';

/** The API of a service process, as a merchant and its operator call it. */
function api(port: number) {
  const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method, headers: { 'content-type': 'application/json', 'user-agent': 'cli-tests', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = await response.json() as any;
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  return {
    operator: (method: string, path: string, body?: unknown) => call(method, path, { 'x-operator-key': OPERATOR_KEY }, body),
    /** A new client with an identity and a USD account of its own. */
    async merchant(name: string) {
      const client = await call('POST', '/operator/clients', { 'x-operator-key': OPERATOR_KEY }, { name });
      const { accessToken } = await call('POST', '/auth', { 'x-api-key': client.apiKey }, { clientId: client.clientId, clientSecret: client.clientSecret });
      const headers = { 'x-api-key': client.apiKey, authorization: `Bearer ${accessToken}` };
      const identity = await call('POST', '/identities', headers, { type: 'ORGANIZATION', name, country: 'CHL' });
      const account = await call('POST', '/accounts', headers, { identityId: identity.id, type: 'CHECKING', currency: 'USD', name: 'Main' });
      return { client, identity, account, as: (method: string, path: string, body?: unknown) => call(method, path, headers, body) };
    },
  };
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  await service.exited;
}

const keys = (value: object) => Object.keys(value).sort();

/**
 * A plain progress line of `label` (stderr is not a terminal here): done/total, rate, time. Counts have thousands
 * separators ("2,200 events/s": a few events read in a few milliseconds).
 */
const progressLine = (label: string, unit = 'events') => new RegExp(`^${label}: [\\d,]+/[\\d,]+ ${unit} \\(\\d+%\\), [\\d,]+ ${unit}/s, `, 'm');

describe('cli: usage', function () {
  this.timeout(120_000);

  it('says what is wrong and exits 2: unknown command or option, missing or malformed argument, a group without its command', async () => {
    const env = { DATA_DIR: join(tmpdir(), `ledger-cli-unused-${randomUUID()}`) };
    const cases: Array<[string[], RegExp]> = [
      [['nope'], /unknown command 'nope'/],
      [['ledger', 'trial-balance', '--bogus'], /unknown option '--bogus'/],
      [['ledger', 'statement', '--from', '2026-01-01T00:00:00Z', '--to', '2026-02-01T00:00:00Z'], /missing required argument 'accountId'/],
      [['ledger', 'statement', 'acc-1', '--from', '2026-01-01T00:00:00Z'], /required option '--to <instant>' not specified/],
      [['ledger', 'statement', 'acc-1', '--from', '2026-01-01T00:00:00Z', '--to', '2026-02-01T00:00:00Z', '--format', 'xml'], /Allowed choices are json, csv/],
      [['ledger', 'statement', 'acc-1', '--from', '2026-02-01T00:00:00Z', '--to', '2026-01-01T00:00:00Z'], /--from must be before --to/],
      [['export', 'events', '--from', 'monday', '--to', '2026-01-01T00:00:00Z'], /--from must be an ISO 8601 instant/],
      [['ledger'], /Usage: npm run cli -- ledger/],
      [['replay', 'ledger', 'bogus'], /cannot replay bogus: the projectors are .*\bledger\b.*webhooks is not replayed.*reactors .* never replayed/],
      [['verify', 'read-models', 'bogus'], /cannot verify bogus: the projectors are .*\bledger\b/],
    ];
    for (const [args, message] of cases) {
      const run = await cli(args, env);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).to.equal(2);
      expect(run.stderr, args.join(' ')).to.match(message);
      expect(run.stdout, args.join(' ')).to.equal('');
    }
  });

  it('--help on the program and on a command prints its usage, the options shared by all and the exit codes, and exits 0', async () => {
    const env = { DATA_DIR: join(tmpdir(), `ledger-cli-unused-${randomUUID()}`) };
    const top = await cli(['--help'], env);
    expect(top.code).to.equal(0);
    for (const command of ['clients', 'projections', 'replay', 'verify', 'integrity', 'ledger', 'export']) expect(top.stdout).to.match(new RegExp(`^  ${command}\\b`, 'm'));
    expect(top.stdout).to.match(/Exit codes: 0 done, 1 failed, 2 usage error/);
    const replay = await cli(['replay', '--help'], env);
    expect(replay.code).to.equal(0);
    expect(replay.stdout).to.match(/Usage: npm run cli -- replay \[options\] \[projector\.\.\.\]/);
    expect(replay.stdout).to.match(/Global Options:[\s\S]*--json[\s\S]*--quiet/);
    expect(replay.stdout).to.match(/3 a verification found a problem/);
  });
});

describe('cli: --json and progress, embedded', function () {
  this.timeout(300_000);
  let dataDir: string;
  before(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-cli-')); });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('every command prints one JSON document (or JSON lines) of its shape on stdout, progress only on stderr', async () => {
    const env = { DATA_DIR: dataDir, OPERATOR_API_KEY: OPERATOR_KEY };
    // The service seals the feed itself every five minutes of the wall clock: one falling between its last append and
    // the seal command below would leave that command nothing to seal. Here it seals only on 29 February.
    const service = startService({ ...env, PORT: '0', INTEGRITY_DIGEST_CRON: '0 0 29 2 *' });
    let accountId: string;
    let paymentId: string;
    try {
      const port = await listeningPort(service);
      const shop = await api(port).merchant('Json Shop');
      accountId = shop.account.id;
      await api(port).operator('POST', `/operator/accounts/${accountId}/adjustments`, { amount: '150.00', reason: 'first' });
      await api(port).operator('POST', `/operator/accounts/${accountId}/adjustments`, { amount: '150.00', reason: 'second' });
      paymentId = (await shop.as('POST', '/payments', { externalId: `order-${randomUUID()}`, identityId: shop.identity.id,
        accountNumber: shop.account.accountNumber, totalAmount: '10.00', currency: 'USD', type: 'PURCHASE' })).id;

      const created = await cli(['clients', 'create', '--name', 'Json Client', '--json'], env);
      expect(created.code, created.stderr).to.equal(0);
      expect(keys(JSON.parse(created.stdout))).to.deep.equal(['apiKey', 'clientId', 'clientSecret', 'name']);

      const refused = await cli(['replay', 'ledger'], env);
      expect(refused.code).to.equal(2);
      expect(refused.stdout).to.equal('');
      expect(refused.stderr).to.match(/holds .*; stop it, replay, and start it again/);
    } finally {
      await stop(service);
    }

    const status = await cli(['projections', 'status', '--json'], env);
    expect(status.code, status.stderr).to.equal(0);
    const projections = JSON.parse(status.stdout);
    expect(keys(projections)).to.deep.equal(['head', 'projections']);
    expect(keys(projections.projections[0])).to.deep.equal(
      ['caughtUp', 'checkpoint', 'eventsBehind', 'eventsHandled', 'kind', 'lastError', 'name', 'schema', 'status', 'updatedAt', 'version']);

    const sealed = await cli(['integrity', 'seal', '--json'], env);
    expect(sealed.code, sealed.stderr).to.equal(0);
    expect(keys(JSON.parse(sealed.stdout))).to.deep.equal(['digest', 'events', 'fromPosition', 'previousDigest', 'recordedAt', 'sequence', 'toPosition']);

    const integrity = await cli(['verify', 'integrity', '--json'], env);
    expect(integrity.code, integrity.stderr).to.equal(0);
    expect(JSON.parse(integrity.stdout)).to.include({ ok: true });
    expect(integrity.stderr).to.match(progressLine('verify integrity: chains'));

    const replayed = await cli(['replay', '--json'], env);
    expect(replayed.code, replayed.stderr).to.equal(0);
    const replay = JSON.parse(replayed.stdout);
    expect(keys(replay)).to.deep.equal(['notReplayed', 'replayed']);
    expect(replay.notReplayed).to.deep.equal([{ projector: 'webhooks', reason: replay.notReplayed[0].reason }]);
    const ledger = replay.replayed.find((r: { projector: string }) => r.projector === 'ledger');
    expect(keys(ledger)).to.deep.equal(['eventsApplied', 'eventsPerSecond', 'eventsRead', 'position', 'previousSchema', 'projector', 'replays',
      'schema', 'seconds', 'version']);
    expect(ledger).to.include({ replays: 1, schema: `payments_ledger__ledger_v${ledger.version}_r1` });
    expect(ledger.eventsApplied).to.be.greaterThan(1);
    expect(replayed.stderr).to.match(progressLine('replay ledger'));
    expect(replayed.stdout).not.to.match(/events\/s/);

    const quiet = await cli(['replay', 'ledger', '--json', '--quiet'], env);
    expect(quiet.code, quiet.stderr).to.equal(0);
    expect(JSON.parse(quiet.stdout).replayed[0]).to.include({ projector: 'ledger', replays: 2 });
    expect(quiet.stderr).to.equal('');

    const readModels = await cli(['verify', 'read-models', '--json'], env);
    expect(readModels.code, readModels.stdout).to.equal(0);
    const checks = JSON.parse(readModels.stdout);
    for (const check of checks) {
      expect(keys(check)).to.include.members(['differences', 'position', 'projector', 'status', 'tables', 'version']);
      expect(['equal', 'skipped'], JSON.stringify(check)).to.include(check.status);
    }
    expect(readModels.stderr).to.match(progressLine('verify read-models: ledger'));

    const trial = await cli(['ledger', 'trial-balance', '--json'], env);
    expect(trial.code, trial.stderr).to.equal(0);
    const usd = JSON.parse(trial.stdout).find((row: { currency: string }) => row.currency === 'USD');
    expect(usd).to.deep.equal({ currency: 'USD', balanceSum: '0.00', accounts: usd.accounts, balanced: true });

    const balances = await cli(['ledger', 'balances', '--as-of', new Date().toISOString(), '--json'], env);
    expect(balances.code, balances.stderr).to.equal(0);
    expect(JSON.parse(balances.stdout), balances.stdout).to.deep.include({ accountId, currency: 'USD', balance: '300.00', isSystem: false });

    const range = ['--from', '2000-01-01T00:00:00Z', '--to', '2100-01-01T00:00:00Z'];
    const statement = await cli(['ledger', 'statement', accountId, ...range, '--json'], env);
    expect(statement.code, statement.stderr).to.equal(0);
    const document = JSON.parse(statement.stdout);
    expect(keys(document)).to.deep.equal(['accountId', 'closingBalance', 'currency', 'from', 'lines', 'openingBalance', 'to']);
    expect(document).to.include({ accountId, openingBalance: '0.00', closingBalance: '300.00' });
    expect(document.lines.map((l: { balanceAfter: string }) => l.balanceAfter)).to.deep.equal(['150.00', '300.00']);
    expect(keys(document.lines[0])).to.deep.equal(['amount', 'balanceAfter', 'description', 'entryId', 'eventId', 'lineNo', 'occurredAt', 'paymentId']);
    expect(statement.stderr).to.match(progressLine(`ledger statement ${accountId}`, 'lines'));
    const csv = await cli(['ledger', 'statement', accountId, ...range, '--format', 'csv'], env);
    expect(csv.code, csv.stderr).to.equal(0);
    expect(csv.stdout.trimEnd().split('\r\n')).to.have.length(5);
    const both = await cli(['ledger', 'statement', accountId, ...range, '--format', 'csv', '--json'], env);
    expect(both.code).to.equal(2);
    expect(both.stderr).to.match(/--json prints the statement as JSON/);

    const exportLine = ['data', 'id', 'metadata', 'position', 'recordedAt', 'revision', 'schemaVersion', 'stream', 'type'];
    const payment = await cli(['export', 'payment', paymentId, '--json'], env);
    expect(payment.code, payment.stderr).to.equal(0);
    const paymentLines = payment.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(paymentLines[0].stream).to.equal(`payment-${paymentId}`);
    for (const line of paymentLines) expect(keys(line)).to.deep.equal(exportLine);
    const events = await cli(['export', 'events', ...range, '--stream-prefix', 'account-', '--json'], env);
    expect(events.code, events.stderr).to.equal(0);
    const eventLines = events.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(eventLines.map((l) => l.type)).to.include.members(['AccountOpened', 'AccountAdjusted']);
    for (const line of eventLines) expect(keys(line)).to.deep.equal(exportLine);
    expect(events.stderr).to.match(progressLine('export events'));
  });
});

describe('cli: projections status tells a projection at the head from one behind', function () {
  this.timeout(300_000);
  const url = process.env.DATABASE_URL;
  let schema: string;
  before(function () {
    if (!url) this.skip();
    schema = testSchemaName();
  });
  after(async () => {
    if (url && schema) await dropSchemaAndProjections(url, schema);
  });

  interface Status { head: string; projections: Array<{ name: string; kind: string; status: string; caughtUp: boolean; eventsBehind: number }> }
  const status = async (env: Record<string, string>): Promise<Status> => {
    const run = await cli(['projections', 'status'], env);
    expect(run.code, run.stderr).to.equal(0);
    return JSON.parse(run.stdout) as Status;
  };

  it('every projector and reactor at the head is active and caught up (0 events behind); after new events, each says how many it has not read', async () => {
    const env = { DATABASE_URL: url!, DATABASE_SCHEMA: schema, OPERATOR_API_KEY: OPERATOR_KEY };
    const service = startService({ ...env, PORT: '0' });
    let atHead: Status;
    try {
      const port = await listeningPort(service);
      await api(port).merchant('Status Shop');
      // Status is read while the service runs (Postgres): every runner reaches the head once the writes stop.
      await until(async () => (atHead = await status(env)).projections.every((p) => p.caughtUp), {
        what: 'every projection caught up', timeoutMs: 120_000, intervalMs: 500,
      });
    } finally {
      await stop(service);
    }
    const reactors = atHead!.projections.filter((p) => p.kind === 'reactor');
    expect(reactors.map((p) => p.name)).to.include.members(['checkout_sessions', 'settlement', 'customer_document_numbers']);
    for (const p of atHead!.projections) {
      expect(p, JSON.stringify(p)).to.include({ status: 'active', caughtUp: true, eventsBehind: 0 });
    }

    // Three events recorded while no runner reads the feed (the service is stopped): every projection is behind by them.
    for (const name of ['Later 1', 'Later 2', 'Later 3']) {
      const created = await cli(['clients', 'create', '--name', name], env);
      expect(created.code, created.stderr).to.equal(0);
    }
    const behind = await status(env);
    expect(behind.head).not.to.equal(atHead!.head);
    for (const p of behind.projections) {
      expect(p, JSON.stringify(p)).to.include({ status: 'active', caughtUp: false, eventsBehind: 3 });
    }
  });
});

describe('cli: replay on Postgres while the service takes writes', function () {
  this.timeout(300_000);
  const url = process.env.DATABASE_URL;
  let schema: string;
  before(function () {
    if (!url) this.skip();
    schema = testSchemaName();
  });
  after(async () => {
    if (url && schema) await dropSchemaAndProjections(url, schema);
  });

  it('rebuilds every projector beside the serving tables and swaps them in; the read models then equal a fresh rebuild', async () => {
    const env = { DATABASE_URL: url!, DATABASE_SCHEMA: schema, OPERATOR_API_KEY: OPERATOR_KEY };
    const service = startService({ ...env, PORT: '0' });
    try {
      const port = await listeningPort(service);
      const shop = await api(port).merchant('Busy Shop');
      const adjust = () => api(port).operator('POST', `/operator/accounts/${shop.account.id}/adjustments`, { amount: '1.00', reason: 'busy' });
      let adjusted = 0;
      let writing = true;
      const writes = (async () => {
        while (writing) {
          await adjust();
          adjusted++;
        }
      })();
      let replay;
      try {
        replay = await cli(['replay', '--json'], env);
      } finally {
        writing = false;
        await writes;
      }
      expect(replay.code, replay.stderr).to.equal(0);
      const { replayed } = JSON.parse(replay.stdout);
      expect(replayed.map((r: { projector: string }) => r.projector)).to.include.members(['accounts', 'ledger', 'payments', 'clients']);
      for (const r of replayed) expect(r, JSON.stringify(r)).to.include({ replays: 1, schema: `${schema}__${r.projector}_v${r.version}_r1` });
      expect(adjusted, 'writes during the replay').to.be.greaterThan(0);

      // The live runners write to the swapped-in tables: a write after the replay is read back from them.
      await adjust();
      adjusted++;
      expect((await shop.as('GET', `/accounts/${shop.account.id}`)).balance).to.equal(`${adjusted}.00`);
      const verified = await cli(['verify', 'read-models', '--json'], env);
      expect(verified.code, verified.stdout + verified.stderr).to.equal(0);
      for (const check of JSON.parse(verified.stdout)) expect(['equal', 'skipped'], JSON.stringify(check)).to.include(check.status);
      const status = JSON.parse((await cli(['projections', 'status', '--json'], env)).stdout);
      const ledger = status.projections.find((p: { name: string; status: string }) => p.name === 'ledger' && p.status === 'active');
      expect(ledger.schema).to.equal(`${schema}__ledger_v${ledger.version}_r1`);
    } finally {
      await stop(service);
    }
  });
});
