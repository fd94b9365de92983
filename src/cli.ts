/**
 * Operator and auditor commands: `npm run cli -- <command>`. Results go to stdout as JSON (alone, so they
 * can be piped); diagnostics go to stderr.
 *
 *   clients create --name <name>   provision a client; prints {clientId, clientSecret, apiKey, name} once
 *   projections status             every projector and reactor: version, status, checkpoint, lag, last error
 *   verify integrity               recompute every event's chain hash and every feed digest (tamper evidence);
 *                                  prints the report, progress on stderr; exit 0 intact, 3 a problem found
 *   verify read-models [name…]     rebuild each read model into a scratch schema (the service may keep running on
 *                                  Postgres) and compare it with the live one; exit 3 and the first differences
 *                                  when they differ
 *   integrity seal                 record a feed digest now (the service does it every INTEGRITY_DIGEST_CRON)
 *   ledger trial-balance           per currency: the sum of every balance (zero when the books balance)
 *   ledger balances --as-of <t>    every account's balance at an instant
 *   ledger statement <accountId> --from <t> --to <t> [--format json|csv]
 *                                  the account's statement over [from, to), streamed
 *   export payment <paymentId>     the payment's stored events, one JSON object per line
 *   export events --from <t> --to <t> [--stream-prefix <p>]
 *                                  stored events recorded in [from, to), in feed order, one JSON object per line
 *
 * `--json` prints machine-readable output where the default is a table (ledger trial-balance, ledger balances).
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
import { formatPosition, type Position } from './eventstore/position.ts';
import { recordFeedDigest, verifyIntegrity, type IntegrityReport } from './integrity/integrity.ts';
import { verifyReadModels } from './projection/verify.ts';
import { allProjectors } from './contexts.ts';
import { sql } from 'kysely';
import { readModelsOf } from '../projections/readModels.ts';
import { STATEMENT_CSV_COLUMNS, statementCsvRow, writeStatement } from './ledger/statements.ts';
import { paymentStream } from './payments/events.ts';
import { MAX_READ_LIMIT } from './eventstore/port.ts';

class UsageError extends Error {}

const USAGE = `usage:
  npm run cli -- clients create --name <name>
  npm run cli -- projections status
  npm run cli -- verify integrity
  npm run cli -- verify read-models [projector…] [--json]
  npm run cli -- integrity seal
  npm run cli -- ledger trial-balance [--json]
  npm run cli -- ledger balances --as-of <instant> [--json]
  npm run cli -- ledger statement <accountId> --from <instant> --to <instant> [--format json|csv]
  npm run cli -- export payment <paymentId>
  npm run cli -- export events --from <instant> --to <instant> [--stream-prefix <prefix>]

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

function instantOption(name: string, value: string | undefined): Date {
  const date = value === undefined ? null : new Date(value);
  if (!value || !/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(date!.getTime())) {
    throw new UsageError(`--${name} must be an ISO 8601 instant, such as 2026-01-31T00:00:00Z`);
  }
  return date!;
}

/** Rows as aligned text columns (the default for people), or one JSON document (`--json`, for scripts). */
function printRows(rows: Array<Record<string, unknown>>, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const columns = Object.keys(rows[0]!);
  const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => text(r[c]).length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${[line(columns), ...rows.map((r) => line(columns.map((c) => text(r[c]))))].join('\n')}\n`);
}

async function write(chunk: string): Promise<void> {
  if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}

async function ledgerCommand(config: Config, command: string | undefined, args: string[], values: CliValues): Promise<void> {
  refuseWhileServiceRuns(config);
  await withStorage(config, async (storage) => {
    const db = readModelsOf(storage.database);
    if (command === 'trial-balance') {
      const { rows } = await sql<Record<string, unknown>>`
        SELECT currency, balance_sum::text AS "balanceSum", accounts, balanced FROM trial_balance ORDER BY currency`.execute(db);
      printRows(rows, !!values.json);
    } else if (command === 'balances') {
      const asOf = instantOption('as-of', values['as-of']);
      const { rows } = await sql<Record<string, unknown>>`
        SELECT account_id AS "accountId", currency, balance::text AS balance, is_system AS "isSystem"
          FROM ledger_balances_at(${asOf}) ORDER BY account_id, currency`.execute(db);
      printRows(rows, !!values.json);
    } else if (command === 'statement') {
      const accountId = args[0];
      if (!accountId) throw new UsageError('ledger statement needs the account id');
      const from = instantOption('from', values.from);
      const to = instantOption('to', values.to);
      if (!(from < to)) throw new UsageError('--from must be before --to');
      const format = values.format ?? 'json';
      if (format !== 'json' && format !== 'csv') throw new UsageError('--format is json or csv');
      const account = await db.selectFrom('accounts').select(['account_id', 'currency']).where('account_id', '=', accountId).executeTakeFirst();
      if (!account) throw new Error(`account ${accountId} not found`);
      let first = true;
      const closing = await writeStatement(db, account.account_id, account.currency, from, to, {
        header: (header) => write(format === 'csv'
          ? `${STATEMENT_CSV_COLUMNS.join(',')}\r\n${statementCsvRow({ entryId: '', lineNo: 0, occurredAt: header.from, description: 'opening balance', amount: '', balanceAfter: header.openingBalance, paymentId: null, eventId: '' })}`
          : `${JSON.stringify(header).slice(0, -1)},"lines":[`),
        line: (line) => {
          const text = format === 'csv' ? statementCsvRow(line) : `${first ? '' : ','}\n${JSON.stringify(line)}`;
          first = false;
          return write(text);
        },
      });
      await write(format === 'csv'
        ? statementCsvRow({ entryId: '', lineNo: 0, occurredAt: to.toISOString(), description: 'closing balance', amount: '', balanceAfter: closing, paymentId: null, eventId: '' })
        : `],"closingBalance":${JSON.stringify(closing)}}\n`);
    } else {
      throw new UsageError(`unknown command: ledger ${command ?? ''}`);
    }
  });
}

/** Events as export lines: the stored event, positions as text, one JSON object per line. */
function exportLine(event: { id: string; stream: string; revision: bigint; position: { commit: bigint; prepare: bigint }; type: string; schemaVersion: number; data: unknown; metadata: unknown; recordedAt: Date }): string {
  return `${JSON.stringify({ id: event.id, stream: event.stream, revision: String(event.revision),
    position: formatPosition(event.position), type: event.type, schemaVersion: event.schemaVersion,
    data: event.data, metadata: event.metadata, recordedAt: event.recordedAt.toISOString() })}\n`;
}

async function exportCommand(config: Config, command: string | undefined, args: string[], values: CliValues): Promise<void> {
  refuseWhileServiceRuns(config);
  await withStorage(config, async (storage) => {
    if (command === 'payment') {
      const paymentId = args[0];
      if (!paymentId) throw new UsageError('export payment needs the payment id');
      let fromRevision = 0n;
      let count = 0;
      for (;;) {
        const page = await storage.store.readStream(paymentStream(paymentId), { fromRevision, limit: MAX_READ_LIMIT });
        for (const event of page) await write(exportLine(event));
        count += page.length;
        if (page.length < MAX_READ_LIMIT) break;
        fromRevision = page[page.length - 1]!.revision + 1n;
      }
      if (count === 0) throw new Error(`payment ${paymentId} has no events`);
    } else if (command === 'events') {
      const from = instantOption('from', values.from);
      const to = instantOption('to', values.to);
      if (!(from < to)) throw new UsageError('--from must be before --to');
      const prefix = values['stream-prefix'] ?? '';
      let after: Position | null = null;
      let done = 0;
      for (;;) {
        const page = await storage.store.readAll({ after, limit: MAX_READ_LIMIT });
        for (const event of page) {
          if (event.recordedAt >= from && event.recordedAt < to && event.stream.startsWith(prefix)) await write(exportLine(event));
        }
        done += page.length;
        if (process.stderr.isTTY) process.stderr.write(`\rread ${done.toLocaleString('en')} events`);
        if (page.length < MAX_READ_LIMIT) break;
        after = page[page.length - 1]!.position;
      }
      if (process.stderr.isTTY) process.stderr.write('\n');
    } else {
      throw new UsageError(`unknown command: export ${command ?? ''}`);
    }
  });
}

type CliValues = { name?: string; help?: boolean; json?: boolean; from?: string; to?: string; 'as-of'?: string; format?: string; 'stream-prefix'?: string };

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv, allowPositionals: true,
    options: {
      name: { type: 'string' }, help: { type: 'boolean' }, json: { type: 'boolean' }, from: { type: 'string' }, to: { type: 'string' },
      'as-of': { type: 'string' }, format: { type: 'string' }, 'stream-prefix': { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const [group, command, ...rest] = positionals;
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
  } else if (group === 'verify' && command === 'read-models') {
    refuseWhileServiceRuns(config);
    const known = allProjectors();
    const unknown = rest.filter((name) => !known.some((p) => p.name === name));
    if (unknown.length > 0) throw new UsageError(`no such projector: ${unknown.join(', ')} (known: ${known.map((p) => p.name).join(', ')})`);
    const chosen = rest.length > 0 ? known.filter((p) => rest.includes(p.name)) : known;
    const results = await withStorage(config, (storage) =>
      verifyReadModels(storage.database, storage.store, chosen, {
        started: (name, scratch) => process.stderr.write(`${name}: rebuilding into ${scratch}\n`),
        checked: (check) => process.stderr.write(`${check.projector}: ${check.status}\n`),
      }));
    if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    else {
      for (const r of results) {
        process.stdout.write(`${r.projector} v${r.version}: ${r.status}${r.position ? ` at ${r.position}` : ''}${r.note ? ` (${r.note})` : ''}\n`);
        for (const d of r.differences) {
          for (const row of d.onlyInLive) process.stdout.write(`  ${d.table}: live has    ${JSON.stringify(row)}\n`);
          for (const row of d.onlyInRebuild) process.stdout.write(`  ${d.table}: rebuild has ${JSON.stringify(row)}\n`);
        }
      }
    }
    if (results.some((r) => r.status === 'different' || r.status === 'unsettled')) process.exitCode = EXIT_PROBLEM_FOUND;
    return;
  } else if (group === 'ledger') {
    await ledgerCommand(config, command, rest, values);
    return;
  } else if (group === 'export') {
    await exportCommand(config, command, rest, values);
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
