/**
 * A read-model table declared once, as its columns' SQL definitions in table order, and the statements derived from
 * them: its CREATE TABLE, and an INSERT of any number of rows given as one JSON array (one parameter).
 *
 * Why one JSON array: a multi-row VALUES list takes a parameter per value, and its text changes with the number of
 * rows. Catching up, a projector's batch inserts thousands of rows; as parameters, tens of them a row, the service
 * built and sent millions of values in megabytes of text, which Postgres then parsed and planned anew each time.
 * One JSON array is one string to build and one to send, and the statement's text never changes.
 *
 * A row holds each column's value as the query builder would take it: a jsonb column as its JSON text (read as
 * text, then cast), a timestamptz as a Date or an ISO string, a numeric as a decimal string. A column the row
 * leaves out is NULL, or its DEFAULT when the definition has one.
 */
export type ColumnDefinitions = Readonly<Record<string, string>>;

/** The SQL type of a column: the first word of its definition. */
export const sqlTypeOf = (definition: string): string => definition.split(' ')[0]!;

export function createTableSql(table: string, columns: ColumnDefinitions): string {
  return `CREATE TABLE ${table} (${Object.entries(columns).map(([column, definition]) => `${column} ${definition}`).join(', ')})`;
}

/**
 * `INSERT INTO table (…) SELECT … FROM json_to_recordset($1::json) AS x …`, then `tail` (ON CONFLICT, RETURNING).
 * `expressions`: what a column takes instead of its value as the row gives it, `x.<column>` (another table's, say).
 */
export function insertJsonRowsSql(table: string, columns: ColumnDefinitions, tail = '', expressions: Readonly<Record<string, string>> = {}): string {
  const names = Object.keys(columns);
  const record = names.map((column) => {
    const type = sqlTypeOf(columns[column]!);
    return `${column} ${type === 'jsonb' ? 'text' : type}`;
  });
  const values = names.map((column) => {
    const definition = columns[column]!;
    const value = expressions[column] ?? (sqlTypeOf(definition) === 'jsonb' ? `x.${column}::jsonb` : `x.${column}`);
    const fallback = /\bDEFAULT (\S+)/.exec(definition)?.[1];
    return fallback === undefined ? value : `coalesce(${value}, ${fallback})`;
  });
  return `INSERT INTO ${table} (${names.join(', ')}) SELECT ${values.join(', ')} FROM json_to_recordset($1::json) AS x(${record.join(', ')})` +
    (tail ? ` ${tail}` : '');
}
