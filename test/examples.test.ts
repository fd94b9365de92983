/**
 * Every example under examples/ (the files README.md and docs/ show: test/docs.markdown.test.ts holds them equal),
 * run against a live service: `npm start`'s own process on a new embedded data directory, with the operator routes
 * on. Each example runs twice in a row and must exit 0 both times: it starts from nothing (a client of its own,
 * made through the operator route, and its own ids), so a second run, or a run after any other, works as the first.
 *
 * - examples/*.sh: bash with -e and pipefail (a failing command fails the example), curl, jq and openssl;
 * - examples/*.ts: TypeScript through tsx (`npx tsx examples/….ts`), with the typed client;
 * - examples/offline/*.sh and *.sql: with the service stopped, on the data directory the others filled: the CLI
 *   (`npm run cli -- …`), and SQL run in PGlite on that directory.
 * Each gets BASE_URL, OPERATOR_API_KEY and a free RECEIVER_PORT (for its webhook receiver); DATA_DIR for the CLI.
 */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { listeningPort, repoRoot, startService, type ServiceProcess } from './support/serviceProcess.ts';

const OPERATOR_API_KEY = 'examples-operator-key-0123456789';
/** A run longer than this is stopped and fails: the longest example waits about a minute for its effects. */
const RUN_TIMEOUT_MS = 240_000;
const RUNS = 2;
/** A server the other examples start (examples/walkthrough.sh), not an example that ends by itself. */
const NOT_RUN_ALONE = new Set(['webhook-receiver.ts']);
const TOOLS = ['bash', 'curl', 'jq', 'openssl'];

const examplesDir = join(repoRoot, 'examples');
const list = (dir: string, extension: string) => readdirSync(join(examplesDir, dir))
  .filter((name) => name.endsWith(extension) && !NOT_RUN_ALONE.has(name)).sort().map((name) => join(dir, name));
const online = [...list('.', '.sh'), ...list('.', '.ts')].map((path) => path.replace(/^\.\//, ''));
const offline = [...list('offline', '.sh'), ...list('offline', '.sql')];

interface Run { code: number | null; signal: NodeJS.Signals | null; output: string }

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Runs `command` in a process group of its own, then ends whatever it left running (a receiver in the background). */
function run(command: string, args: string[], env: Record<string, string>): Promise<Run> {
  const { DATABASE_URL: _db, EVENTSTORE_CONNECTION_STRING: _es, ...inherited } = process.env;
  const child = spawn(command, args, { cwd: repoRoot, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const endGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // ESRCH: nothing of the group is left, which is what this makes sure of.
    }
  };
  const timer = setTimeout(() => endGroup('SIGKILL'), RUN_TIMEOUT_MS);
  // Once the example has exited, what it left in the background (holding its output open) is ended, and then its
  // output closes.
  return new Promise((resolve) => child.once('exit', (code, signal) => {
    clearTimeout(timer);
    endGroup('SIGTERM');
    child.once('close', () => resolve({ code, signal, output }));
  }));
}

describe('examples/ (shown in README.md and docs/) against a live service', function () {
  this.timeout(RUNS * RUN_TIMEOUT_MS + 60_000);
  let dataDir: string;
  let service: ServiceProcess | null = null;
  let baseUrl: string;

  async function stopService() {
    if (!service) return;
    service.child.kill('SIGTERM');
    await service.exited;
    service = null;
  }

  before(async function () {
    this.timeout(120_000);
    const missing = TOOLS.filter((tool) => {
      try {
        execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
        return false;
      } catch {
        return true;
      }
    });
    expect(missing, `the examples need ${missing.join(', ')} on the PATH (Debian: apt-get install ${missing.join(' ')})`).to.deep.equal([]);
    dataDir = mkdtempSync(join(tmpdir(), 'ledger-examples-'));
    // Settlement batches and expiries every second instead of every minute, so a card settles within the run.
    service = startService({
      DATA_DIR: dataDir, PORT: '0', OPERATOR_API_KEY,
      SETTLEMENT_CRON: '* * * * * *', EXPIRY_CRON: '* * * * * *',
    });
    baseUrl = `http://127.0.0.1:${await listeningPort(service)}`;
  });
  after(async () => {
    await stopService();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const runTwice = async (command: (path: string) => [string, string[]], path: string) => {
    for (let round = 1; round <= RUNS; round++) {
      const [program, args] = command(path);
      const result = await run(program, args, {
        BASE_URL: baseUrl, OPERATOR_API_KEY, RECEIVER_PORT: String(await freePort()), DATA_DIR: dataDir,
      });
      expect(result.code, `${path}, run ${round} of ${RUNS}, ended with ${result.code ?? result.signal}:\n${result.output}`).to.equal(0);
    }
  };
  const shell = (path: string): [string, string[]] => ['bash', ['-e', '-o', 'pipefail', join('examples', path)]];

  it('finds examples to run', () => {
    expect(online.length).to.be.greaterThan(3);
    expect(offline.length).to.be.greaterThan(0);
  });

  for (const path of online) {
    it(`${path} runs twice in a row, each time from nothing`, () =>
      runTwice(path.endsWith('.ts') ? (p) => ['npx', ['tsx', join('examples', p)]] : shell, path));
  }

  describe('with the service stopped (the CLI, SQL on its data directory)', () => {
    before(stopService);

    for (const path of offline) {
      if (path.endsWith('.sh')) {
        it(`${path} runs twice in a row`, () => runTwice(shell, path));
      } else {
        it(`${path} runs twice in a row in PGlite on the data directory`, async () => {
          const sql = readFileSync(join(examplesDir, path), 'utf8');
          for (let round = 1; round <= RUNS; round++) {
            const database = new PGlite(join(dataDir, 'pglite'));
            try {
              const results = await database.exec(sql);
              expect(results.length, `${path}: one result per statement`).to.be.greaterThan(0);
            } finally {
              await database.close();
            }
          }
        });
      }
    }
  });
});
