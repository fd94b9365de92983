/**
 * The storage targets every storage-dependent suite runs against: embedded PGlite always, real Postgres
 * when DATABASE_URL is set (each suite in a schema of its own, dropped afterwards).
 */
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.ts';

export interface DatabaseTarget {
  name: 'pglite' | 'postgres';
  open(): Promise<Database>;
}

let pgliteTemplate: Promise<Blob> | null = null;

/** Initialising a PGlite cluster takes seconds; copying a dumped one takes a fraction of that. */
function pgliteTemplateDump(): Promise<Blob> {
  pgliteTemplate ??= (async () => {
    const lite = new PGlite();
    await lite.waitReady;
    const dump = await lite.dumpDataDir('none');
    await lite.close();
    return dump;
  })();
  return pgliteTemplate;
}

export function testSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/** Drops a test schema and the projector schemas made beside it. */
export async function dropTestSchema(connectionString: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $2`, [schema, `${schema}\\_\\_%`]);
    for (const { nspname } of rows) await client.query(`DROP SCHEMA "${nspname}" CASCADE`);
  } finally {
    await client.end();
  }
}

export function databaseTargets(): DatabaseTarget[] {
  const targets: DatabaseTarget[] = [{
    name: 'pglite',
    async open() {
      return openDatabase({ kind: 'pglite', dataDir: 'memory://', loadDataDir: await pgliteTemplateDump() });
    },
  }];
  const url = process.env.DATABASE_URL;
  if (url) {
    targets.push({
      name: 'postgres',
      async open() {
        const schema = testSchemaName();
        const database = await openDatabase({ kind: 'postgres', connectionString: url, poolSize: 24 }, { schema });
        const close = database.close;
        return { ...database, close: async () => { await close(); await dropTestSchema(url, schema); } };
      },
    });
  }
  return targets;
}
