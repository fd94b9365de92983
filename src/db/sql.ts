/** Quotes an SQL identifier (schema, table, view names built at run time). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

interface PgError {
  code?: string;
  constraint?: string;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as PgError | null;
  return !!e && e.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
