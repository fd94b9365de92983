import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, repoRoot } from './support/serviceProcess.ts';
import { until } from './support/until.ts';

interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Runs `command` from the project's root in embedded mode on `dataDir` (the suite's DATABASE_URL is not inherited). */
function run(command: string, args: string[], dataDir: string, env: Record<string, string> = {}): Started {
  const { DATABASE_URL: _db, EVENTSTORE_CONNECTION_STRING: _es, ...inherited } = process.env;
  ensureBuilt();
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...inherited, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** The port the service listens on, and the pid of the node process that serves (from its own log lines). */
async function serving(started: Started): Promise<{ port: number; pid: number }> {
  await until(() => /listening on http:\/\/[^:]+:\d+/.test(started.output()) || started.child.exitCode !== null, {
    what: 'the service listens', timeoutMs: 90_000,
  });
  const line = started.output().split('\n').find((l) => /listening on http/.test(l));
  if (!line) throw new Error(`the service did not start:\n${started.output()}`);
  const { port, pid } = JSON.parse(line) as { port: number; pid: number };
  return { port, pid };
}

/** The exit code, once the process has exited; fails when it is still running after `timeoutMs`. */
async function exitCode(started: Started, timeoutMs = 60_000): Promise<number | null> {
  await until(() => started.child.exitCode !== null || started.child.signalCode !== null, {
    what: `${started.child.spawnargs.join(' ')} exits`, timeoutMs,
  });
  return started.exited;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A request held in flight: one write carries a whole `GET /health` and, behind it on the same connection, the
 * headers and first half of a `POST /auth`; the rest of that body is sent only when `finish` is called. The
 * server parses both in the same pass, so once the answer to the first has come back the second is in progress
 * (it cannot be answered before its whole body is there). `answer` is everything the connection received.
 */
async function heldRequest(port: number, body: string): Promise<{ finish(): void; answer: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  const half = Math.floor(body.length / 2);
  let received = '';
  socket.on('data', (chunk: Buffer) => { received += chunk.toString(); });
  const answer = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(received));
    socket.on('error', () => undefined); // a cut connection shows in what was received, which the tests read
  });
  socket.write(
    `GET /health HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`
    + `POST /auth HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n`
    + `x-api-key: pl_0000000000000000_held\r\nuser-agent: shutdown-test\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`
    + body.slice(0, half),
  );
  await until(() => /^HTTP\/1\.1 200 /.test(received), { what: 'the first request on the connection is answered' });
  return { finish: () => socket.write(body.slice(half)), answer };
}

const credentials = JSON.stringify({ clientId: '00000000-0000-0000-0000-000000000000', clientSecret: 'cs_not-a-secret-of-any-client' });

describe('stopping the service (signals)', function () {
  this.timeout(180_000);
  let dataDir: string;
  beforeEach(() => { dataDir = mkdtempSync(join(tmpdir(), 'ledger-signals-')); });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('SIGTERM to `npm start` (as the README runs it) drains the request in flight, and the whole tree exits 0', async () => {
    const npm = run('npm', ['start'], dataDir);
    let servicePid: number | undefined;
    try {
      const { port, pid } = await serving(npm);
      servicePid = pid;
      expect(pid).not.to.equal(npm.child.pid);
      const held = await heldRequest(port, credentials);
      npm.child.kill('SIGTERM');
      await until(() => /shutting down: draining requests/.test(npm.output()), { what: 'the service is told to stop' });
      held.finish();
      const answer = await held.answer;
      expect(answer, npm.output()).to.match(/HTTP\/1\.1 401 /);
      expect(await exitCode(npm), npm.output()).to.equal(0);
      await until(() => !alive(pid), { what: 'the node process serving exits' });
      expect(npm.output()).to.match(/"msg":"stopped"/);
    } finally {
      if (servicePid !== undefined && alive(servicePid)) process.kill(servicePid, 'SIGKILL');
      if (npm.child.exitCode === null) npm.child.kill('SIGKILL');
    }
  });

  it('SIGINT to `npm start` stops the service too', async () => {
    const npm = run('npm', ['start'], dataDir);
    let servicePid: number | undefined;
    try {
      const { pid } = await serving(npm);
      servicePid = pid;
      npm.child.kill('SIGINT');
      expect(await exitCode(npm), npm.output()).to.equal(0);
      await until(() => !alive(pid), { what: 'the node process serving exits' });
      expect(npm.output()).to.match(/"signal":"SIGINT"/);
      expect(npm.output()).to.match(/"msg":"stopped"/);
    } finally {
      if (servicePid !== undefined && alive(servicePid)) process.kill(servicePid, 'SIGKILL');
      if (npm.child.exitCode === null) npm.child.kill('SIGKILL');
    }
  });

  it('exits non-zero when the grace period runs out with a request still in flight', async () => {
    const service = run(process.execPath, ['scripts/run.mjs', 'main'], dataDir, { SHUTDOWN_GRACE_MS: '300' });
    try {
      const { port } = await serving(service);
      const held = await heldRequest(port, credentials);
      service.child.kill('SIGTERM');
      // The rest of the body never comes: the service cuts the connection when its grace period is over.
      // Only the health check's answer came back: one status line, and it is the 200. (Matching the text for "401"
      // would also hit a request id or a date that happens to contain those digits.)
      const answer = await held.answer;
      expect(answer.match(/^HTTP\/1\.1 \d{3} /gm), answer).to.deep.equal(['HTTP/1.1 200 ']);
      expect(await exitCode(service), service.output()).to.equal(1);
      expect(service.output()).to.match(/requests still in flight/);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
  });

  it("the Docker image runs node directly, and the command it runs drains and exits 0 on SIGTERM", async () => {
    const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const instructions = dockerfile.split('\n').filter((line) => /^(CMD|ENTRYPOINT)\b/.test(line));
    expect(instructions.filter((line) => line.startsWith('ENTRYPOINT')), 'no ENTRYPOINT wraps the command').to.deep.equal([]);
    const cmd = instructions.filter((line) => line.startsWith('CMD')).at(-1);
    expect(cmd, 'the Dockerfile has a CMD').to.be.a('string');
    // The exec form (a JSON array): no shell between the container's init and node, so `docker stop` reaches it.
    const argv = JSON.parse(cmd!.slice('CMD'.length).trim()) as string[];
    expect(argv[0]).to.equal('node');

    const service = run(process.execPath, argv.slice(1), dataDir);
    try {
      const { port } = await serving(service);
      const held = await heldRequest(port, credentials);
      service.child.kill('SIGTERM');
      await until(() => /shutting down: draining requests/.test(service.output()), { what: 'the service is told to stop' });
      held.finish();
      expect(await held.answer).to.match(/HTTP\/1\.1 401 /);
      expect(await exitCode(service), service.output()).to.equal(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
  });
});

