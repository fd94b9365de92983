/**
 * A PGlite cluster initialised once, then copied into every new data directory. Left to itself, PGlite
 * initialises a new directory by running initdb in a second WebAssembly instance: several seconds, and about
 * twice the memory of a running service while it lasts. Copying a cluster that initdb already produced
 * takes a fraction of a second.
 *
 * The template depends only on the installed PGlite release (its Postgres version and catalog), so it is
 * kept beside the installed package, one per release, in node_modules/.cache/payments-ledger/. `npm run
 * build` makes it (and `npm ci` runs the build through `prepare`); without one, a new data directory is
 * initialised by PGlite as before, only slower.
 */
import { constants, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';

const PGLITE_PACKAGE = '@electric-sql/pglite';
/** The file initdb writes first and a complete cluster always has: PGlite's own "is there a cluster" test. */
const CLUSTER_MARKER = 'PG_VERSION';

/** The installed PGlite package: its directory and version. */
export function installedPglite(): { dir: string; version: string } {
  let dir = dirname(createRequire(import.meta.url).resolve(PGLITE_PACKAGE));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (name === PGLITE_PACKAGE && version) return { dir, version };
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package.json of ${PGLITE_PACKAGE}`);
    dir = parent;
  }
}

/** Where the template of the installed PGlite release is kept (it may not exist yet). */
export function pgliteTemplateDir(): string {
  const { dir, version } = installedPglite();
  // dir is <node_modules>/@electric-sql/pglite
  return join(dirname(dirname(dir)), '.cache', 'payments-ledger', `pglite-${version}-cluster`);
}

export function isCluster(dir: string): boolean {
  return existsSync(join(dir, CLUSTER_MARKER));
}

/**
 * Makes the template unless it exists. It is initialised aside and renamed into place, so a template that
 * exists is complete, and of two builds racing, the second finds the first's and discards its own.
 * @public Called by scripts/build.mjs from the compiled dist/, where no import of it can be seen.
 */
export async function ensurePgliteTemplate(dir: string = pgliteTemplateDir()): Promise<'made' | 'exists'> {
  if (isCluster(dir)) return 'exists';
  mkdirSync(dirname(dir), { recursive: true });
  const staging = `${dir}.staging-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const pglite = new PGlite({ dataDir: staging });
  await pglite.waitReady;
  await pglite.close();
  try {
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!isCluster(dir)) throw error;
    return 'exists';
  }
  return 'made';
}

/**
 * Gives a data directory that has no cluster a copy of the template. Copied aside and renamed into place,
 * so a process stopped mid-copy leaves no half cluster that PGlite would try to resume (the leftover copy is
 * removed by the next start, which holds the data-directory lock as this one did). Returns false, leaving
 * the directory to PGlite, when there is no template or the directory already has files.
 */
export function copyPgliteTemplate(template: string, dataDir: string): boolean {
  if (isCluster(dataDir) || !isCluster(template)) return false;
  const parent = dirname(dataDir);
  const staging = `${basename(dataDir)}.from-template-`;
  mkdirSync(parent, { recursive: true });
  for (const leftover of readdirSync(parent)) {
    if (leftover.startsWith(staging)) rmSync(join(parent, leftover), { recursive: true, force: true });
  }
  if (existsSync(dataDir)) {
    if (readdirSync(dataDir).length > 0) return false;
    rmSync(dataDir, { recursive: true });
  }
  const copy = join(parent, `${staging}${process.pid}`);
  // A copy-on-write clone where the file system offers one (btrfs, xfs), a plain copy elsewhere.
  cpSync(template, copy, { recursive: true, mode: constants.COPYFILE_FICLONE });
  renameSync(copy, dataDir);
  return true;
}
