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

/** A table or view that does not exist (yet: a read model's view appears when its projector first activates). */
export function isUndefinedTable(error: unknown): boolean {
  return (error as PgError | null)?.code === '42P01';
}
