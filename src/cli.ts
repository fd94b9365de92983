/**
 * Operator, auditor and finance commands: `npm run cli -- <command>`; `--help` on any command says what it does.
 * Parsed by commander: every command and group has its own help, and a usage error (an unknown command or
 * option, a missing or malformed argument) exits 2 naming it.
 *
 * - stdout carries the result alone, so it can be piped: JSON where a script reads it (`--json` on every
 *   command; its shape per command is declared once in src/cli/shapes.ts), text tables otherwise. `--output <path>`
 *   sends it to that file instead; the CLI writes no other file (never a report into the working directory).
 * - stderr carries diagnostics and progress (src/cli/progress.ts): a bar with rate and time left on a terminal,
 *   a plain line at most once a second elsewhere; `--quiet` silences progress.
 * - Exit codes: 0 done, 1 failed, 2 usage error (or a state that refuses the command, named on stderr),
 *   3 a verification found a problem.
 *
 * In embedded mode a running service holds the data directory: `clients create` then calls the service's
 * operator route (it needs OPERATOR_API_KEY, the value the service has); the other commands say to stop it.
 * Otherwise the CLI opens the store itself, beside any running service on Postgres.
 */
import { createWriteStream, openSync, rmSync, type WriteStream } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { sql } from 'kysely';
import { loadConfig, type Config } from './config.ts';
import { lockHolder } from './db/dataDirLock.ts';
import { openStorage, type Storage } from './storage.ts';
import { registerClient } from './clients/handlers.ts';
import { storeOnly } from './eventstore/streams.ts';
import { systemRuntime } from './domain/runtime.ts';
import { ProjectionStateStore } from './projection/projectionState.ts';
import { formatPosition, positionReached, type Position } from './eventstore/position.ts';
import type { RecordedEvent } from './eventstore/port.ts';
import { MAX_READ_LIMIT } from './eventstore/port.ts';
import { recordFeedDigest, verifyStorageIntegrity } from './integrity/integrity.ts';
import { verifyReadModels } from './projection/verify.ts';
import { ReplayRefusedError, replayableProjectors, replayProjector } from './projection/replay.ts';
import { allProjectors, storedEvents } from './contexts.ts';
import type { Projector } from './projection/projector.ts';
import { readModelsOf } from '../projections/readModels.ts';
import { STATEMENT_CSV_COLUMNS, statementCsvRow, writeStatement } from '../projections/statements.ts';
import { paymentStream } from './payments/events.ts';
import { currencyScale, formatAmount, toDecimal } from './domain/money.ts';
import { progressOnStderr, type Progress } from './cli/progress.ts';
import type {
  BalancesJson, ClientsCreateJson, ExportedEventJson, IntegritySealJson, ProjectionsStatusJson, ReplayJson,
  StatementJson, TrialBalanceJson, VerifyIntegrityJson, VerifyReadModelsJson,
} from './cli/shapes.ts';

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
/** A verification ran and found the history or a read model not as it should be. */
const EXIT_PROBLEM_FOUND = 3;

const EXIT_CODES_HELP = `
Exit codes: 0 done, 1 failed, 2 usage error (or a state that refuses the command, named on stderr),
3 a verification found a problem (verify integrity, verify read-models).
stdout carries the result alone (--json: JSON, see each command), or the file --output names; progress and messages
go to stderr. The CLI writes no other file: nothing lands in the working directory unless --output names it.`;

/** The command cannot run as asked (bad input, or a state that refuses it): exit 2, nothing done. */
class UsageError extends Error {}

interface GlobalOptions { json?: boolean; quiet?: boolean; output?: string }

/** How long the CLI waits for the running service's operator route. */
const OPERATOR_ROUTE_TIMEOUT_MS = 30_000;
/** Longest client name (as the operator route's schema). */
const MAX_CLIENT_NAME_CHARS = 200;

async function withStorage<T>(config: Config, work: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(config, storedEvents.upcasters);
  try {
    return await work(storage);
  } finally {
    await storage.close();
  }
}

/** Embedded storage has one user at a time: a running service holds the data directory. */
function refuseWhileServiceRuns(config: Config, what = 'stop it first (embedded storage has one user at a time)'): void {
  const running = config.storageMode === 'embedded' ? lockHolder(config.dataDir) : null;
  if (running) throw new UsageError(`the service (pid ${running.pid}) holds ${config.dataDir}; ${what}`);
}

function refuseWithoutDigests(config: Config): void {
  if (config.storageMode === 'eventstoredb') {
    throw new UsageError('feed digests are kept by the Postgres event stores; with EventStoreDB, verify integrity checks the chains in its metadata');
  }
}

/** Most events `projections status` counts behind one projection (a range scan of the feed's key). */
const MAX_COUNTED_BEHIND = 1_000_000;

/**
 * Events in the feed after `checkpoint` up to `head` (both as the feed orders them), counted up to
 * MAX_COUNTED_BEHIND; null where the events are not in this database (EventStoreDB).
 */
async function eventsBehind(config: Config, storage: Storage, checkpoint: Position | null, head: Position): Promise<number | null> {
  if (config.storageMode === 'eventstoredb') return null;
  const after = checkpoint ?? { commit: 0n, prepare: 0n };
  const { rows } = await storage.database.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM (
       SELECT 1 FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
          AND (transaction_id, global_position) <= ($3::text::xid8, $4::bigint)
        LIMIT ${MAX_COUNTED_BEHIND}) behind`,
    [after.commit.toString(), after.prepare.toString(), head.commit.toString(), head.prepare.toString()]);
  return Number(rows[0]!.n);
}

/** Events in the feed, for a progress bar's total; null where the events are not in this database (EventStoreDB). */
async function feedSize(config: Config, storage: Storage): Promise<number | null> {
  if (config.storageMode === 'eventstoredb') return null;
  const { rows } = await storage.database.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
  return Number(rows[0]!.n);
}

/**
 * Where a command's result goes: stdout, or the file named by `--output` (the only file the CLI ever writes; nothing
 * lands in the working directory unless that is the path given).
 */
let out: NodeJS.WritableStream = process.stdout;

async function write(chunk: string): Promise<void> {
  if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve));
}

function printJson(value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

interface OutputFile { path: string; stream: WriteStream; failure: Error | null }

/** Sends the result to `path` from now on: created, or emptied if it exists, as a shell's `>` would. */
function outputTo(path: string): OutputFile {
  let fd: number;
  try {
    fd = openSync(path, 'w');
  } catch (error) {
    throw new UsageError(`--output ${path} cannot be written: ${(error as Error).message}`);
  }
  const file: OutputFile = { path, stream: createWriteStream('', { fd }), failure: null };
  file.stream.on('error', (error) => { file.failure = error; });
  out = file.stream;
  return file;
}

/** Ends the output file; a command that failed leaves none behind, so a partial report is never taken for one. */
async function closeOutput(file: OutputFile, failed: boolean): Promise<void> {
  await new Promise<void>((resolve) => file.stream.end(() => resolve()));
  if (file.failure) throw new Error(`--output ${file.path}: ${file.failure.message}`);
  if (failed) rmSync(file.path, { force: true });
}

/** Rows as aligned text columns (the default, for people), or one JSON document (`--json`, for scripts). */
function printRows(rows: ReadonlyArray<Record<string, unknown>>, json: boolean): void {
  if (json) return printJson(rows);
  if (rows.length === 0) {
    out.write('(none)\n');
    return;
  }
  const columns = Object.keys(rows[0]!);
  const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => text(r[c]).length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  out.write(`${[line(columns), ...rows.map((r) => line(columns.map((c) => text(r[c]))))].join('\n')}\n`);
}

/** An option's value as an instant: ISO 8601 with a date and a time. */
function instant(option: string): (value: string) => Date {
  return (value) => {
    const date = new Date(value);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(date.getTime())) {
      throw new InvalidArgumentError(`--${option} must be an ISO 8601 instant, such as 2026-01-31T00:00:00Z`);
    }
    return date;
  };
}

function range(from: Date, to: Date): void {
  if (!(from < to)) throw new UsageError('--from must be before --to');
}

// ---- clients and projections ----

async function createClient(config: Config, rawName: string | undefined): Promise<ClientsCreateJson> {
  const name = rawName?.trim();
  if (!name || name.length > MAX_CLIENT_NAME_CHARS) throw new UsageError(`--name is required (1 to ${MAX_CLIENT_NAME_CHARS} characters)`);
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
      signal: AbortSignal.timeout(OPERATOR_ROUTE_TIMEOUT_MS),
    });
    const body = await response.json() as ClientsCreateJson & { message?: string };
    if (response.status !== 201) throw new Error(`the service answered ${response.status}: ${body.message ?? ''}`);
    return body;
  }
  return withStorage(config, async (storage) => {
    const credentials = await registerClient(storeOnly(storage.store), systemRuntime, name, { actor: 'cli' });
    return credentials;
  });
}

async function projectionsStatus(config: Config): Promise<ProjectionsStatusJson> {
  refuseWhileServiceRuns(config, 'see GET /ready and GET /metrics instead');
  return withStorage(config, async (storage) => {
    const head = await storage.store.headPosition();
    const states = await new ProjectionStateStore(storage.database).list();
    return {
      head: head ? formatPosition(head) : null,
      projections: await Promise.all(states.map(async (s) => {
        const caughtUp = head === null || positionReached(s.checkpoint, head);
        return {
          name: s.name, version: s.version, kind: s.kind, status: s.status, schema: s.schemaName,
          checkpoint: s.checkpoint ? formatPosition(s.checkpoint) : null,
          caughtUp, eventsBehind: caughtUp ? 0 : await eventsBehind(config, storage, s.checkpoint, head),
          eventsHandled: Number(s.eventsHandled), lastError: s.lastError, updatedAt: s.updatedAt.toISOString(),
        };
      })),
    };
  });
}

// ---- auditors: integrity, read models, replay ----

async function verifyHistory(config: Config, progress: Progress): Promise<void> {
  refuseWhileServiceRuns(config);
  const report: VerifyIntegrityJson = await withStorage(config, async (storage) => {
    let phase = '';
    let reported = 0;
    try {
      const checked = await verifyStorageIntegrity(storage, {
        onProgress: (done, total, name) => {
          if (name !== phase) {
            progress.complete();
            phase = name;
            reported = 0;
            progress.start(name === 'streams' ? 'verify integrity: chains' : 'verify integrity: digests', total);
          }
          progress.advance(done - reported);
          reported = done;
        },
      });
      progress.complete();
      return checked;
    } finally {
      progress.stop();
    }
  });
  printJson(report);
  if (!report.ok) {
    for (const problem of report.problems) process.stderr.write(`${problem.message}\n`);
    process.exitCode = EXIT_PROBLEM_FOUND;
  }
}

const NOT_REPLAYED = 'is not replayed: it also writes outside its own tables (the webhook outbox), which a rebuild would write to again';
const REACTORS_NOT_REPLAYED = 'reactors (process managers) are never replayed: they would act (issue commands, send) again';

/**
 * The named projectors (all when none named) among `allowed`; a name not among them is a usage error naming the
 * valid ones, and why the others (`leftOut`) are not.
 */
function chooseProjectors(names: readonly string[], allowed: Projector[], verb: string, leftOut = ''): Projector[] {
  const unknown = names.filter((name) => !allowed.some((p) => p.name === name));
  if (unknown.length > 0) {
    throw new UsageError(`cannot ${verb} ${unknown.join(', ')}: the projectors are ${allowed.map((p) => p.name).join(', ')}${leftOut}`);
  }
  return names.length > 0 ? allowed.filter((p) => names.includes(p.name)) : allowed;
}

async function verifyReadModelsCommand(config: Config, names: string[], options: GlobalOptions, progress: Progress): Promise<void> {
  const chosen = chooseProjectors(names, allProjectors(), 'verify');
  refuseWhileServiceRuns(config);
  const results: VerifyReadModelsJson = await withStorage(config, async (storage) => {
    const total = await feedSize(config, storage);
    try {
      return await verifyReadModels(storage.database, storage.store, chosen, {
        started: (name) => progress.start(`verify read-models: ${name}`, total),
        read: (n) => progress.advance(n),
        checked: () => progress.complete(),
      });
    } finally {
      progress.stop();
    }
  });
  if (options.json) printJson(results);
  else {
    for (const r of results) {
      out.write(`${r.projector} v${r.version}: ${r.status}${r.position ? ` at ${r.position}` : ''}${r.note ? ` (${r.note})` : ''}\n`);
      for (const d of r.differences) {
        for (const row of d.onlyInLive) out.write(`  ${d.table}: live has    ${JSON.stringify(row)}\n`);
        for (const row of d.onlyInRebuild) out.write(`  ${d.table}: rebuild has ${JSON.stringify(row)}\n`);
      }
    }
  }
  if (results.some((r) => r.status === 'different' || r.status === 'unsettled')) process.exitCode = EXIT_PROBLEM_FOUND;
}

async function replayCommand(config: Config, names: string[], options: GlobalOptions, progress: Progress): Promise<void> {
  // One list: each call of allProjectors() builds the projectors afresh, and they are told apart by identity below.
  const projectors = allProjectors();
  const replayable = replayableProjectors(projectors);
  const leftOut = projectors.filter((p) => !replayable.includes(p)).map((p) => `; ${p.name} ${NOT_REPLAYED}`).join('');
  const chosen = chooseProjectors(names, replayable, 'replay', `${leftOut}; ${REACTORS_NOT_REPLAYED}`);
  refuseWhileServiceRuns(config, 'stop it, replay, and start it again (embedded storage has one user at a time); ' +
    'or bump the projector\'s version, which the service rebuilds beside the serving one by itself');
  const output: ReplayJson = {
    replayed: [],
    notReplayed: names.length > 0 ? [] : projectors.filter((p) => !chosen.includes(p)).map((p) => ({ projector: p.name, reason: NOT_REPLAYED })),
  };
  await withStorage(config, async (storage) => {
    const total = await feedSize(config, storage);
    for (const projector of chosen) {
      progress.start(`replay ${projector.name}`, total);
      try {
        output.replayed.push(await replayProjector(storage.database, storage.store, projector, { read: (n) => progress.advance(n) }));
        progress.complete();
      } catch (error) {
        const done = output.replayed.map((r) => r.projector);
        if (done.length > 0) process.stderr.write(`replayed before the failure: ${done.join(', ')}\n`);
        throw error;
      } finally {
        progress.stop();
      }
    }
  });
  if (options.json) return printJson(output);
  for (const r of output.replayed) {
    out.write(`${r.projector} v${r.version}: rebuilt from ${r.eventsRead.toLocaleString('en')} events ` +
      `(${r.eventsApplied.toLocaleString('en')} applied) in ${r.seconds} s, ${r.eventsPerSecond.toLocaleString('en')} events/s; ` +
      `now serving ${r.schema}${r.position ? ` at ${r.position}` : ''}\n`);
  }
  for (const n of output.notReplayed) out.write(`${n.projector} ${n.reason}\n`);
}

async function sealCommand(config: Config): Promise<void> {
  refuseWhileServiceRuns(config);
  refuseWithoutDigests(config);
  const digest: IntegritySealJson = await withStorage(config, (storage) => recordFeedDigest(storage.database, storage.store, new Date()));
  printJson(digest);
}

// ---- finance: the ledger ----

/** An amount as the API writes it: at its currency's scale (a sum of numerics comes back with more digits). */
function atScale(amount: string, currency: string): string {
  return formatAmount(toDecimal(amount).toDecimalPlaces(currencyScale(currency)), currency);
}

async function trialBalance(config: Config, options: GlobalOptions): Promise<void> {
  refuseWhileServiceRuns(config);
  const rows = await withStorage(config, async (storage) => (await sql<TrialBalanceJson[number]>`
    SELECT currency, balance_sum::text AS "balanceSum", accounts, balanced FROM trial_balance ORDER BY currency`
    .execute(readModelsOf(storage.database))).rows);
  printRows(rows.map((row) => ({ ...row, balanceSum: atScale(row.balanceSum, row.currency) })), !!options.json);
}

async function balancesAsOf(config: Config, asOf: Date, options: GlobalOptions): Promise<void> {
  refuseWhileServiceRuns(config);
  // One statement over the postings: nothing to show progress of.
  const rows = await withStorage(config, async (storage) => (await sql<BalancesJson[number]>`
    SELECT account_id AS "accountId", currency, balance::text AS balance, is_system AS "isSystem"
      FROM ledger_balances_at(${asOf}) ORDER BY account_id, currency`.execute(readModelsOf(storage.database))).rows);
  printRows(rows.map((row) => ({ ...row, balance: atScale(row.balance, row.currency) })), !!options.json);
}

interface StatementOptions extends GlobalOptions { from: Date; to: Date; format: 'json' | 'csv' }

async function statement(config: Config, accountId: string, options: StatementOptions, progress: Progress): Promise<void> {
  range(options.from, options.to);
  if (options.json && options.format === 'csv') throw new UsageError('--json prints the statement as JSON: leave out --format csv');
  const csv = options.format === 'csv';
  refuseWhileServiceRuns(config);
  await withStorage(config, async (storage) => {
    const db = readModelsOf(storage.database);
    const account = await db.selectFrom('accounts').select(['account_id', 'currency']).where('account_id', '=', accountId).executeTakeFirst();
    if (!account) throw new Error(`account ${accountId} not found`);
    const { lines } = await db.selectFrom('ledger_postings as p').innerJoin('ledger_entries as e', 'e.entry_id', 'p.entry_id')
      .select(sql<number>`count(*)::int`.as('lines'))
      .where('p.account_id', '=', account.account_id).where('p.currency', '=', account.currency)
      .where('e.occurred_at', '>=', options.from).where('e.occurred_at', '<', options.to)
      .executeTakeFirstOrThrow();
    const edge = (description: string, occurredAt: string, balance: string) => statementCsvRow(
      { entryId: '', lineNo: 0, occurredAt, description, amount: '', balanceAfter: balance, paymentId: null, eventId: '' });
    let first = true;
    progress.start(`ledger statement ${accountId}`, lines, 'lines');
    try {
      // The JSON document (StatementJson) is written as it is read: the header's fields, the lines, the closing balance.
      const closing = await writeStatement(db, account.account_id, account.currency, options.from, options.to, {
        header: (header: Omit<StatementJson, 'lines' | 'closingBalance'>) => write(csv
          ? `${STATEMENT_CSV_COLUMNS.join(',')}\r\n${edge('opening balance', header.from, header.openingBalance)}`
          : `${JSON.stringify(header).slice(0, -1)},"lines":[`),
        line: (line) => {
          const text = csv ? statementCsvRow(line) : `${first ? '' : ','}\n${JSON.stringify(line)}`;
          first = false;
          progress.advance(1);
          return write(text);
        },
      });
      const end: Pick<StatementJson, 'closingBalance'> = { closingBalance: closing };
      await write(csv ? edge('closing balance', options.to.toISOString(), closing) : `],${JSON.stringify(end).slice(1)}\n`);
      progress.complete();
    } finally {
      progress.stop();
    }
  });
}

// ---- auditors: exports ----

function exportLine(event: RecordedEvent): string {
  const line: ExportedEventJson = {
    id: event.id, stream: event.stream, revision: String(event.revision), position: formatPosition(event.position),
    type: event.type, schemaVersion: event.schemaVersion, data: event.data, metadata: event.metadata,
    recordedAt: event.recordedAt.toISOString(),
  };
  return `${JSON.stringify(line)}\n`;
}

async function exportPayment(config: Config, paymentId: string): Promise<void> {
  refuseWhileServiceRuns(config);
  await withStorage(config, async (storage) => {
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
  });
}

async function exportEvents(config: Config, options: { from: Date; to: Date; streamPrefix: string }, progress: Progress): Promise<void> {
  range(options.from, options.to);
  refuseWhileServiceRuns(config);
  await withStorage(config, async (storage) => {
    progress.start('export events', await feedSize(config, storage));
    try {
      let after: Position | null = null;
      for (;;) {
        const page = await storage.store.readAll({ after, limit: MAX_READ_LIMIT });
        for (const event of page) {
          if (event.recordedAt >= options.from && event.recordedAt < options.to && event.stream.startsWith(options.streamPrefix)) {
            await write(exportLine(event));
          }
        }
        progress.advance(page.length);
        if (page.length < MAX_READ_LIMIT) break;
        after = page[page.length - 1]!.position;
      }
      progress.complete();
    } finally {
      progress.stop();
    }
  });
}

// ---- the command tree ----

// Long as the whole command tree, declared in the order `--help` lists it: each command is a few lines that name its handler.
function buildProgram(): Command {
  const config = () => loadConfig();
  const program = new Command('npm run cli --')
    .description('Operator, auditor and finance commands of payments-ledger.')
    .option('--json', 'print the result as JSON on stdout for scripts (JSON lines where a command streams)')
    .option('-q, --quiet', 'print no progress on stderr')
    .option('-o, --output <path>', 'write the result to this file instead of stdout (created, or replaced); the CLI ' +
      'writes no other file, and none when the command fails')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('afterAll', EXIT_CODES_HELP)
    .exitOverride();
  const globals = (command: Command) => command.optsWithGlobals<GlobalOptions>();
  program.hook('preAction', (_program, action) => {
    const { output } = globals(action);
    if (output !== undefined) outputFile = outputTo(output);
  });
  const progressOf = (command: Command) => progressOnStderr({ quiet: !!globals(command).quiet });

  const clients = program.command('clients').description('provision clients (merchants)');
  clients.command('create')
    .description('register a client; prints {clientId, clientSecret, apiKey, name} once, as JSON (with or without --json)')
    .option('--name <name>', `the client's name (1 to ${MAX_CLIENT_NAME_CHARS} characters; required)`)
    .action(async (options: { name?: string }) => printJson(await createClient(config(), options.name)));

  const projections = program.command('projections').description('the projectors and reactors');
  projections.command('status')
    .description('every projector and reactor: version, status, schema, checkpoint, whether it is caught up with the ' +
      'head of the feed and how many events behind it is, events handled, last error (JSON)')
    .action(async () => printJson(await projectionsStatus(config())));

  program.command('replay')
    .summary('rebuild projectors beside the serving tables, then swap them in')
    .description('rebuild the named projectors (all when none named) from the log beside the serving tables, then swap ' +
      'them in; safe while the service runs on Postgres. Reactors and the webhook emitter are not replayed (they would ' +
      'act again). --json: one document {replayed: [...], notReplayed: [...]}')
    .argument('[projector...]', 'projector names (default: every projector that only writes its own tables)')
    .action(async (names: string[], _options: unknown, command: Command) =>
      replayCommand(config(), names, globals(command), progressOf(command)));

  const verify = program.command('verify').description('auditors\' checks (exit 3 when one finds a problem)');
  verify.command('integrity')
    .summary('recompute every chain hash and feed digest (exit 3: broken)')
    .description('recompute every event\'s chain hash and every feed digest; prints the report as JSON (with or without ' +
      '--json) and names each broken event on stderr; exit 3 when one is')
    .action(async (_options: unknown, command: Command) => verifyHistory(config(), progressOf(command)));
  verify.command('read-models')
    .summary('compare each read model with a rebuild from the log (exit 3: different)')
    .description('rebuild each read model into a scratch schema (the service may keep running on Postgres) and compare ' +
      'it with the live one; exit 3 and the first differences when they differ. --json: an array, one check per projector')
    .argument('[projector...]', 'projector names (default: all)')
    .action(async (names: string[], _options: unknown, command: Command) =>
      verifyReadModelsCommand(config(), names, globals(command), progressOf(command)));

  const integrity = program.command('integrity').description('tamper evidence');
  integrity.command('seal')
    .description('record a feed digest now (the service does it every INTEGRITY_DIGEST_CRON); prints it as JSON, or null ' +
      'when nothing was appended since the latest')
    .action(async () => sealCommand(config()));

  const ledger = program.command('ledger').description('finance: the double-entry ledger');
  ledger.command('trial-balance')
    .description('per currency: the sum of every balance (zero when the books balance). --json: an array of rows')
    .action(async (_options: unknown, command: Command) => trialBalance(config(), globals(command)));
  ledger.command('balances')
    .description('every account\'s balance at an instant. --json: an array of rows')
    .addOption(new Option('--as-of <instant>', 'ISO 8601 instant').argParser(instant('as-of')).makeOptionMandatory())
    .action(async (options: { asOf: Date }, command: Command) => balancesAsOf(config(), options.asOf, globals(command)));
  ledger.command('statement')
    .description('the account\'s statement over [from, to): opening balance, every line, closing balance; streamed')
    .argument('<accountId>', 'the account')
    .addOption(new Option('--from <instant>', 'ISO 8601 instant, inclusive').argParser(instant('from')).makeOptionMandatory())
    .addOption(new Option('--to <instant>', 'ISO 8601 instant, exclusive').argParser(instant('to')).makeOptionMandatory())
    .addOption(new Option('--format <format>', 'json: one document; csv: RFC 4180 rows').choices(['json', 'csv']).default('json'))
    .action(async (accountId: string, options: Omit<StatementOptions, keyof GlobalOptions>, command: Command) =>
      statement(config(), accountId, { ...globals(command), ...options }, progressOf(command)));

  const exports = program.command('export').description('auditors: stored events as JSON lines (with or without --json)');
  exports.command('payment')
    .description('the payment\'s stored events, in order, one JSON object per line')
    .argument('<paymentId>', 'the payment')
    .action(async (paymentId: string) => exportPayment(config(), paymentId));
  exports.command('events')
    .description('stored events recorded in [from, to), in feed order, one JSON object per line')
    .addOption(new Option('--from <instant>', 'ISO 8601 instant, inclusive').argParser(instant('from')).makeOptionMandatory())
    .addOption(new Option('--to <instant>', 'ISO 8601 instant, exclusive').argParser(instant('to')).makeOptionMandatory())
    .option('--stream-prefix <prefix>', 'only streams whose name starts so (payment-, account-, …)', '')
    .action(async (options: { from: Date; to: Date; streamPrefix: string }, command: Command) =>
      exportEvents(config(), options, progressOf(command)));

  return program;
}

/** The file `--output` names, once the command's action starts. */
let outputFile: OutputFile | null = null;

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    let failed = true;
    try {
      await program.parseAsync(argv, { from: 'user' });
      // A verification that found a problem has written its report: that is the result.
      failed = process.exitCode !== undefined && process.exitCode !== 0 && process.exitCode !== EXIT_PROBLEM_FOUND;
    } finally {
      if (outputFile) await closeOutput(outputFile, failed);
    }
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander wrote its message (or the help) already.
      process.exitCode = error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? 0 : EXIT_USAGE;
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`payments-ledger cli: ${message}\n`);
    if (error instanceof UsageError) process.stderr.write('(add --help for usage)\n');
    process.exitCode = error instanceof UsageError || error instanceof ReplayRefusedError ? EXIT_USAGE : EXIT_FAILED;
  }
}

await main(process.argv.slice(2));
