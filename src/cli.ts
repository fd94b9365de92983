/**
 * Operator and auditor commands: `npm run cli -- <command>`. Results go to stdout as JSON (alone, so they
 * can be piped); diagnostics go to stderr.
 *
 *   clients create --name <name>   provision a client; prints {clientId, clientSecret, apiKey, name} once
 *   projections status             every projector and reactor: version, status, checkpoint, lag, last error
 *   verify integrity               recompute every event's chain hash and every feed digest (tamper evidence);
 *                                  prints the report, progress on stderr; exit 0 intact, 3 a problem found
 *   integrity seal                 record a feed digest now (the service does it every INTEGRITY_DIGEST_CRON)
 *
 * In embedded mode the data directory is locked by a running service: the CLI then calls the service's
 * operator route (it needs OPERATOR_API_KEY, the same value the service has). Otherwise it opens the store
 * itself.
 */
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from './config.ts';
import { lockHolder } from './db/dataDirLock.ts';
import { openStorage, type Storage } from './storage.ts';
import { registerClient } from './clients/handlers.ts';
import { systemRuntime } from './domain/runtime.ts';
import { ProjectionStateStore } from './projection/projectionState.ts';
import { formatPosition } from './eventstore/position.ts';
import { recordFeedDigest, verifyIntegrity, type IntegrityReport } from './integrity/integrity.ts';

class UsageError extends Error {}

const USAGE = `usage:
  npm run cli -- clients create --name <name>
  npm run cli -- projections status
  npm run cli -- verify integrity
  npm run cli -- integrity seal

exit codes: 0 done, 1 failed, 2 usage error, 3 verify found a problem`;

/** Exit code of a verification that found the history broken. */
const EXIT_PROBLEM_FOUND = 3;

async function withStorage<T>(config: Config, work: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(config);
  try {
    return await work(storage);
  } finally {
    await storage.close();
  }
}

async function createClient(config: Config, name: string): Promise<unknown> {
  const running = config.storageMode === 'embedded' ? lockHolder(config.dataDir) : null;
  if (running) {
    if (!config.operatorApiKey) {
      throw new UsageError(`the service (pid ${running.pid}) holds ${config.dataDir}; set OPERATOR_API_KEY to the ` +
        'value the service runs with, so this command can call its operator route');
    }
    const port = running.port ?? config.port;
    const response = await fetch(`http://127.0.0.1:${port}/operator/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-operator-key': config.operatorApiKey, 'user-agent': 'payments-ledger-cli' },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = await response.json() as { message?: string };
    if (response.status !== 201) throw new Error(`the service answered ${response.status}: ${body.message ?? ''}`);
    return body;
  }
  return withStorage(config, async (storage) => {
    const { credentials } = await registerClient(storage.store, systemRuntime, name, { actor: 'cli' });
    return credentials;
  });
}

async function projectionsStatus(config: Config): Promise<unknown> {
  if (config.storageMode === 'embedded' && lockHolder(config.dataDir)) {
    throw new UsageError('the service holds the data directory; see GET /ready and GET /metrics instead');
  }
  return withStorage(config, async (storage) => {
    const head = await storage.store.headPosition();
    const states = await new ProjectionStateStore(storage.database).list();
    return {
      head: head ? formatPosition(head) : null,
      projections: states.map((s) => ({
        name: s.name, version: s.version, kind: s.kind, status: s.status,
        checkpoint: s.checkpoint ? formatPosition(s.checkpoint) : null,
        eventsHandled: Number(s.eventsHandled), lastError: s.lastError, updatedAt: s.updatedAt.toISOString(),
      })),
    };
  });
}

function refuseWhileServiceRuns(config: Config): void {
  const running = config.storageMode === 'embedded' ? lockHolder(config.dataDir) : null;
  if (running) {
    throw new UsageError(`the service (pid ${running.pid}) holds ${config.dataDir}; stop it first (embedded storage has one user at a time)`);
  }
  if (config.storageMode === 'eventstoredb') throw new UsageError('tamper evidence lives in the Postgres event stores; EventStoreDB has none here');
}

/** A progress line on stderr (only on a terminal): rows done, rate and time left. */
function progressLine(): (done: number, total: number, phase: string) => void {
  const started = Date.now();
  return (done, total, phase) => {
    if (!process.stderr.isTTY) return;
    const seconds = Math.max(0.001, (Date.now() - started) / 1000);
    const rate = done / seconds;
    const left = rate > 0 ? Math.max(0, (total - done) / rate) : 0;
    process.stderr.write(`\r${phase}: ${done.toLocaleString('en')} / ${total.toLocaleString('en')} events, ` +
      `${Math.round(rate).toLocaleString('en')}/s, ${Math.ceil(left)} s left   `);
  };
}

async function verifyHistory(config: Config): Promise<IntegrityReport> {
  refuseWhileServiceRuns(config);
  return withStorage(config, async (storage) => {
    const report = await verifyIntegrity(storage.database, { onProgress: progressLine() });
    if (process.stderr.isTTY) process.stderr.write('\n');
    return report;
  });
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv, allowPositionals: true, options: { name: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const [group, command] = positionals;
  let result: unknown;
  if (group === 'clients' && command === 'create') {
    const name = values.name?.trim();
    if (!name || name.length > 200) throw new UsageError('--name is required (1 to 200 characters)');
    result = await createClient(config, name);
  } else if (group === 'projections' && command === 'status') {
    result = await projectionsStatus(config);
  } else if (group === 'verify' && command === 'integrity') {
    const report = await verifyHistory(config);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (!report.ok) {
      for (const problem of report.problems) process.stderr.write(`${problem.message}\n`);
      process.exitCode = EXIT_PROBLEM_FOUND;
    }
    return;
  } else if (group === 'integrity' && command === 'seal') {
    refuseWhileServiceRuns(config);
    result = await withStorage(config, (storage) => recordFeedDigest(storage.database, storage.store, new Date()));
  } else {
    throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`);
  }
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`payments-ledger cli: ${message}\n`);
  if (error instanceof UsageError) process.stderr.write(`${USAGE}\n`);
  process.exit(error instanceof UsageError ? 2 : 1);
});
