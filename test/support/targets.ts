/**
 * The storage targets every storage-dependent suite runs against: embedded PGlite always, real Postgres
 * when DATABASE_URL is set (each suite in a schema of its own, dropped afterwards).
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { dropSchemaAndProjections } from '../../src/db/dropSchema.ts';
import { isCluster, pgliteTemplateDir } from '../../src/db/pgliteTemplate.ts';

export interface DatabaseTarget {
  name: 'pglite' | 'postgres';
  open(): Promise<Database>;
}

let pgliteTemplate: Promise<Blob> | null = null;

/**
 * Initialising a PGlite cluster takes seconds; copying a dumped one takes a fraction of that. The dump is made
 * once per test process, from a copy of the cluster the build keeps as the template of new data directories
 * (src/db/pgliteTemplate.ts: opening it takes about a fifth of an initdb), or by an initdb in memory when there
 * is no template yet.
 */
function pgliteTemplateDump(): Promise<Blob> {
  pgliteTemplate ??= (async () => {
    const template = pgliteTemplateDir();
    const copy = isCluster(template) ? mkdtempSync(join(tmpdir(), 'ledger-pglite-template-')) : null;
    try {
      // A copy: opening a cluster writes to it, and the template is shared by every process of this checkout.
      if (copy) cpSync(template, join(copy, 'cluster'), { recursive: true });
      const lite = new PGlite(copy ? { dataDir: join(copy, 'cluster') } : {});
      await lite.waitReady;
      const dump = await lite.dumpDataDir('none');
      await lite.close();
      return dump;
    } finally {
      if (copy) rmSync(copy, { recursive: true, force: true });
    }
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
