/**
 * What a piece of work costs the database, counted in this process: every statement sent by a `pg` client (the
 * service's pool, its LISTEN/NOTIFY connections, PGlite's bridged connection) is a round trip, and every
 * transaction that commits a write is a commit: an explicit COMMIT, or a single statement outside a transaction
 * that writes (an append, an idempotency claim, a lease renewal). Installed once, on pg.Client's prototype, so
 * that it sees the clients the service creates itself; counting costs a regular expression per statement.
 */
import pg from 'pg';

export interface DatabaseCounts {
  /** Statements sent (round trips). */
  queries: number;
  /** Transactions that committed a write. */
  commits: number;
}

const counts: DatabaseCounts = { queries: 0, commits: 0 };
/**
 * BENCH_STATEMENTS=1 also tallies the statements by their first words (what a route's round trips are spent on);
 * `statementTally` answers it, most frequent first.
 */
const TALLY = !!process.env.BENCH_STATEMENTS;
const tally = new Map<string, number>();
const inTransaction = new WeakSet<object>();
let installed = false;

const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const END = /^\s*(commit|end|rollback)\b/i;
const COMMIT = /^\s*(commit|end)\b/i;
const ENDS_WITH_END = /;\s*(commit|end|rollback)\s*;?\s*$/i;
const ENDS_WITH_COMMIT = /;\s*(commit|end)\s*;?\s*$/i;
/** A statement that writes (rows, a row lock, a notification); a SELECT ... FOR UPDATE counts, as it takes an xid. */
const WRITES = /\b(insert\s+into|update\s|delete\s+from|pg_notify|notify\s)/i;

function textOf(first: unknown): string | null {
  if (typeof first === 'string') return first;
  if (first && typeof first === 'object' && typeof (first as { text?: unknown }).text === 'string') return (first as { text: string }).text;
  return null;
}

export function installDatabaseCounters(): void {
  if (installed) return;
  installed = true;
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function (this: object, ...args: unknown[]) {
    const text = textOf(args[0]);
    if (text !== null) {
      counts.queries++;
      if (TALLY) {
        let shape = text.replace(/\s+/g, ' ').replace(/\$\d+(, \$\d+)*/g, '$n').slice(0, 400);
        const values = Array.isArray(args[1]) ? args[1] : (args[0] as { values?: unknown[] })?.values;
        const first = Array.isArray(values) ? values[0] : undefined;
        if (/^ ?(SELECT transaction_id::text AS commit_position, global_position::text AS prepare_position, id|WITH RECURSIVE last)/.test(shape) && typeof first === 'string') shape = `${first.replace(/[-_][0-9a-f-]{8,}.*$/, '')}: ${shape.slice(0, 60)}`;
        tally.set(shape, (tally.get(shape) ?? 0) + 1);
      }
      // A simple-protocol string may hold several statements (BEGIN; …; COMMIT): count its transaction once.
      if (BEGIN.test(text) && /;\s*commit\s*;?\s*$/i.test(text)) counts.commits++;
      else if (BEGIN.test(text)) inTransaction.add(this);
      else if (END.test(text) || (inTransaction.has(this) && ENDS_WITH_END.test(text))) {
        // An explicit end, alone or after the transaction's last writes in the same string (…; COMMIT).
        if ((COMMIT.test(text) || ENDS_WITH_COMMIT.test(text)) && inTransaction.has(this)) counts.commits++;
        inTransaction.delete(this);
      } else if (!inTransaction.has(this) && WRITES.test(text)) counts.commits++;
    }
    return original.apply(this, args);
  };
}

export function databaseCounts(): DatabaseCounts {
  return { ...counts };
}

export function countsSince(before: DatabaseCounts): DatabaseCounts {
  return { queries: counts.queries - before.queries, commits: counts.commits - before.commits };
}

/** The statements counted since the last call, by shape, most frequent first (empty unless BENCH_STATEMENTS=1). */
export function statementTally(): Array<[string, number]> {
  const rows = [...tally.entries()].sort((a, b) => b[1] - a[1]);
  tally.clear();
  return rows;
}
