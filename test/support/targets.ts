/**
 * The storage targets every storage-dependent suite runs against: embedded PGlite always, real Postgres
 * when DATABASE_URL is set (each suite in a schema of its own, dropped afterwards).
 */
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { dropSchemaAndProjections } from '../../src/db/dropSchema.ts';

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
        return { ...database, close: async () => { await close(); await dropSchemaAndProjections(url, schema); } };
      },
    });
  }
  return targets;
}
