/**
 * The layering of the service, checked by `npm run lint:layers` (part of `npm test`):
 * - no module imports itself back, through any chain of imports (types included);
 * - the platform (event store, projection runner, database, domain primitives) knows no context and no HTTP;
 * - a context (src/<context>/) knows no HTTP, except its routes and its manifest, which declare its endpoints;
 * - the read side (projections/) knows no HTTP, and of the contexts only their stored events (`events.ts`);
 * - the contracts (schemas/) know nothing of the code;
 * - data flows one way: of src/, only a context's routes and manifest (which declare its endpoints and read models)
 *   and the composition root import projections/; handlers, deciders, records, jobs, reactors and the HTTP edge
 *   ask the read models through the narrow port their context declares (src/<context>/ports.ts).
 * The composition root (src/assemble.ts, src/platform.ts, src/contexts.ts, src/module.ts, src/main.ts, the CLI
 * src/cli.ts and src/cli/, and the HTTP edge's src/http/services.ts) may see everything, and so may
 * src/storedEvents/, which gathers every context's stored event contracts.
 *
 * A context is a folder of src/ with a manifest (`module.ts`): the list is read from the folders, so a new
 * context is under these rules as soon as it exists. No rule names a context.
 */
const { existsSync, readdirSync } = require('node:fs');
const path = require('node:path');

const src = path.join(__dirname, 'src');
const contextNames = readdirSync(src, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(path.join(src, entry.name, 'module.ts')))
  .map((entry) => entry.name)
  .sort();
if (contextNames.length === 0) throw new Error('.dependency-cruiser.cjs: no context (a folder of src/ with a module.ts) found');
const contexts = `(${contextNames.join('|')})`;

/** The platform the read side builds on: the event store, the projection runner, the database, domain primitives. */
const platform = '(eventstore|projection|db|domain)';

/** The files that wire the service together: they may import any layer. */
const compositionRoot = ['^src/(assemble|platform|contexts|module|main|cli)\\.ts$', '^src/cli/', '^src/http/services\\.ts$'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A module never depends on itself through others (type-only imports included): each folder reads one way.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'commands-read-through-ports',
      comment: 'Data flows one way (routes → handlers → deciders → store → feed → projectors): of src/, only routes.ts and '
        + 'module.ts of a context, and the composition root, import projections/. Everything else asks the read models '
        + 'through its context\'s port (ports.ts), implemented in projections/ and wired in src/platform.ts.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['/routes\\.ts$', '/module\\.ts$', ...compositionRoot] },
      to: { path: '^projections/' },
    },
    {
      name: 'platform-knows-no-context',
      comment: 'The event store, projections runner, database and domain primitives serve every context; none may depend on one.',
      severity: 'error',
      from: { path: '^src/(eventstore|projection|db|domain|jobs)/' },
      to: { path: [`^src/${contexts}/`, '^src/storedEvents/', '^src/http/', '^projections/'] },
    },
    {
      name: 'context-knows-no-http',
      comment: 'Handlers, deciders and events are tested without HTTP: only routes.ts and module.ts of a context declare endpoints.',
      severity: 'error',
      from: { path: `^src/${contexts}/`, pathNot: ['/routes\\.ts$', '/module\\.ts$'] },
      to: { path: '^src/http/' },
    },
    {
      name: 'read-side-knows-no-http',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'read-side-reads-only-events',
      comment: 'A read model is a function of the feed: of src/ it imports the platform, the stored event contracts '
        + '(src/storedEvents/) and each context\'s events.ts, never its handlers, deciders, records, routes or jobs.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^src/', pathNot: [`^src/${platform}/`, '^src/storedEvents/', `^src/${contexts}/(events|[A-Za-z]+/events)\\.ts$`] },
    },
    {
      name: 'contracts-know-no-code',
      comment: 'schemas/ are the contracts: JSON Schemas and their types, importing nothing of src/ or projections/.',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { path: ['^src/', '^projections/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
