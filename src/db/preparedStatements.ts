/**
 * Statements that go to the database on every write and whose text never changes (their values are parameters),
 * parsed and planned once per connection instead of at every call. Postgres spends about as long planning such a
 * statement as running it (0.1–0.2 ms for a lookup joining three read models, measured under `POST /payments`), and
 * the database shares the machine's cores with the service.
 *
 * A statement asks for it by starting its text with `PREPARED` (an SQL comment, so the text runs the same without
 * it). Kysely hands every statement to the pool's client as a text and its values; the pool given to kysely here
 * turns a marked text into a named statement, whose name node-postgres parses once per connection. Postgres
 * replans a prepared statement by itself when what it reads changes: a table or view altered or replaced (a
 * replay's swap), another search_path. It refuses one whose result's columns would change, so a marked statement
 * names the columns it answers (never `SELECT *` over a read model, whose next version may have others).
 *
 * Unmarked statements go as before: a text built at run time (an IN list of any length, a batch of VALUES) would
 * leave a prepared statement per shape on every connection.
 */
import type pg from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';

export const PREPARED = '/* prepared */';

/** Distinct marked texts named in a process; beyond it a text goes unnamed (a bound on each connection's statements). */
const MAX_NAMED = 256;
const names = new Map<string, string>();

function nameOf(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_NAMED) return known;
  const name = `prepared_${names.size + 1}`;
  names.set(text, name);
  return name;
}

/**
 * The query node-postgres is given for `text`: named when the text is marked and has parameters. A marked statement
 * written into a simple query with its values (a projectors' held writes, src/projection/sharedTransactions.ts) has
 * none: its text is new at every call, and may hold several statements, which a prepared statement cannot.
 */
export function statementFor(text: string, values: unknown[]): pg.QueryConfig {
  const name = values.length > 0 && text.startsWith(PREPARED) ? nameOf(text) : undefined;
  return name === undefined ? { text, values } : { name, text, values };
}

/** `pool` as kysely's dialect sees it, marked statements named. One wrapper per client: kysely keys its connections by it. */
export function preparingPool(pool: pg.Pool): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    // A text and its values (an array of kysely's own, passed on as it is), or a cursor (a streamed read).
    const query = (textOrCursor: string | pg.Submittable, values?: unknown[]) => typeof textOrCursor === 'string'
      ? client.query(statementFor(textOrCursor, values ?? []))
      : client.query(textOrCursor);
    return { query: query as unknown as PostgresPoolClient['query'], release: () => client.release() };
  };
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) wrappers.set(client, wrapper = wrap(client));
      return wrapper;
    },
    end: () => pool.end(),
  };
}
