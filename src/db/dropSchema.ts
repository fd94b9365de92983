import pg from 'pg';
import { quoteIdent } from './sql.ts';

/**
 * Drops a service schema and every projector schema made beside it (`<schema>__…`): scratch and test data. The
 * service's schema goes last, so that a drop cut short leaves the schema that names the others.
 */
export async function dropSchemaAndProjections(connectionString: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $2 ORDER BY nspname = $1, nspname`, [schema, `${schema}\\_\\_%`]);
    for (const { nspname } of rows) await client.query(`DROP SCHEMA ${quoteIdent(nspname)} CASCADE`);
  } finally {
    await client.end();
  }
}
