/**
 * `npm run build`: compiles src/, projections/ and schemas/ to dist/ with tsc (emit only: `npm run
 * typecheck` checks types), copies the other files of those folders (the catalog's JSON data), records the
 * fingerprint of what it was built from in dist/build.json, and makes the PGlite template that new data
 * directories are copied from (src/db/pgliteTemplate.ts).
 *
 * `npm ci` runs it through `prepare`; `npm start` and `npm run cli` (scripts/run.mjs) run it when dist/ was
 * built from other sources than the ones in the tree, so an edit is never served by old compiled code.
 *
 * Plain JavaScript: it has to run before anything is compiled.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = join(ROOT, 'dist');
const SOURCE_DIRS = ['src', 'projections', 'schemas'];
/** Files outside SOURCE_DIRS that change what the build produces. */
const BUILD_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/build.mjs'];
const STAMP = 'build.json';

function filesUnder(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...filesUnder(path));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

/** The installed PGlite release: the template is made by it, so another release needs another build. */
function pgliteVersion() {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json')) || JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== '@electric-sql/pglite') {
    if (dirname(dir) === dir) return 'unknown';
    dir = dirname(dir);
  }
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
}

/**
 * A hash of every input of the build: the path and content of each source file (so an added, removed or
 * edited file changes it, whatever its modification time), the build's own configuration and PGlite's
 * version. About 5 ms for this tree.
 */
export function sourceFingerprint() {
  const hash = createHash('sha256');
  const files = [...SOURCE_DIRS.flatMap((dir) => filesUnder(join(ROOT, dir))), ...BUILD_FILES.map((f) => join(ROOT, f))]
    .map((path) => relative(ROOT, path)).sort();
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(ROOT, file)));
    hash.update('\0');
  }
  hash.update(`pglite ${pgliteVersion()}`);
  return hash.digest('hex');
}

/** Whether dist/ was built from exactly the sources in the tree. */
export function buildIsCurrent(fingerprint = sourceFingerprint()) {
  try {
    return JSON.parse(readFileSync(join(DIST, STAMP), 'utf8')).fingerprint === fingerprint;
  } catch {
    return false;
  }
}

/**
 * Compiles into a staging directory and renames it into place, so dist/ is always one whole build. Two
 * builds racing (two starts after an edit) both succeed: the one that finds the other's build in place
 * keeps it when it was made from the same sources.
 */
function compile(fingerprint) {
  const staging = `${DIST}.staging-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', staging], {
    cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (run.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`tsc failed (exit ${run.status ?? run.signal})`);
  }
  for (const dir of SOURCE_DIRS) {
    for (const file of filesUnder(join(ROOT, dir)).filter((f) => !f.endsWith('.ts'))) {
      cpSync(file, join(staging, relative(ROOT, file)));
    }
  }
  writeFileSync(join(staging, STAMP), `${JSON.stringify({ fingerprint, builtAt: new Date().toISOString() }, null, 2)}\n`);

  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(staging, DIST);
      return;
    } catch (error) {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    }
    if (buildIsCurrent(fingerprint) || attempt >= 3) {
      rmSync(staging, { recursive: true, force: true });
      if (buildIsCurrent(fingerprint)) return;
      throw new Error(`could not put the build in place at ${DIST}`);
    }
    const old = `${DIST}.old-${process.pid}`;
    try {
      renameSync(DIST, old);
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
    rmSync(old, { recursive: true, force: true });
  }
}

export async function build() {
  const fingerprint = sourceFingerprint();
  if (!buildIsCurrent(fingerprint)) {
    process.stderr.write('payments-ledger: compiling to dist/\n');
    compile(fingerprint);
  }
  const { ensurePgliteTemplate, pgliteTemplateDir } = await import(pathToFileURL(join(DIST, 'src/db/pgliteTemplate.js')).href);
  const template = pgliteTemplateDir();
  if (await ensurePgliteTemplate(template) === 'made') {
    process.stderr.write(`payments-ledger: made the PGlite template ${relative(ROOT, template)}\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  build().catch((error) => {
    process.stderr.write(`payments-ledger: build failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
