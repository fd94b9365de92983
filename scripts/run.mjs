/**
 * `npm start` (`node scripts/run.mjs main`) and `npm run cli` (`node scripts/run.mjs cli …`): runs the compiled
 * entry point dist/src/<entry>.js in this process, with plain node and no TypeScript loader.
 *
 * First it makes sure dist/ was built from the sources in the tree (a fingerprint of their content, about
 * 5 ms) and that the PGlite template exists; if not, it runs scripts/build.mjs and waits for it. An edited
 * source is therefore never served by stale compiled code. The build's output goes to stderr, so the CLI's
 * stdout stays its JSON alone.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildIsCurrent, DIST, ROOT } from './build.mjs';

const ENTRIES = new Set(['main', 'cli']);
const entry = process.argv[2] ?? '';
if (!ENTRIES.has(entry)) {
  process.stderr.write(`usage: node scripts/run.mjs ${[...ENTRIES].join('|')} [arguments]\n`);
  process.exit(2);
}

function runBuild() {
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  return run.status === 0;
}

let built = false;
if (!buildIsCurrent()) {
  runBuild();
  built = true;
  if (!buildIsCurrent()) {
    process.stderr.write('payments-ledger: dist/ could not be built from the sources (see above); `npm run build` retries\n');
    process.exit(1);
  }
}
const { isCluster, pgliteTemplateDir } = await import(pathToFileURL(join(DIST, 'src/db/pgliteTemplate.js')).href);
// Without a template a new data directory is still initialised, by PGlite itself and more slowly.
if (!built && !isCluster(pgliteTemplateDir())) runBuild();

// The entry point reads its own arguments from process.argv.slice(2), as if it had been started directly.
process.argv.splice(2, 1);
await import(pathToFileURL(join(DIST, `src/${entry}.js`)).href);
