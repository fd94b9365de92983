/**
 * The interactive API reference at /docs: Swagger UI (swagger-ui-dist), with every asset it needs served by
 * this service from node_modules, so the page works offline and loads nothing from third parties.
 *
 * The page is a shell: a stylesheet, Swagger UI's bundle and a small start script, all from /docs/assets/,
 * which render /openapi.json in the browser (operations, schemas, the example requests the document carries,
 * and "Try it out" against this same service). Its Content-Security-Policy allows scripts, styles, images and
 * requests from this origin only, with no inline script; a list of the operations in <noscript> stands in for
 * a browser without JavaScript.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** Where the page's assets are served: GET /docs/assets/{file}. */
export const DOCS_ASSETS_PATH = '/docs/assets';

/**
 * The start script: renders /openapi.json into #swagger-ui once the bundle has loaded.
 *
 * Its plugin answers one request of Swagger UI from the document as written: as soon as a document loads, Swagger
 * UI asks for \`components/securitySchemes\` with their $refs resolved, and for OpenAPI 3.1 its resolver first
 * converts the whole document (about 1 to 2.5 s of the page's main thread on a 2-core machine, before the
 * operations are listed). This document's security schemes hold no $ref, so as written they are resolved.
 * Every other part (an operation being opened, a model) is still resolved by Swagger UI.
 */
const START_SCRIPT = `function securitySchemesAsWritten() {
  return { statePlugins: { spec: { wrapActions: {
    requestResolvedSubtree: function (original, system) {
      return function (path) {
        if (path.length === 2 && path[0] === 'components' && path[1] === 'securitySchemes') {
          var written = system.specSelectors.specJson().getIn(path);
          return system.specActions.updateResolvedSubtree(path, written ? written.toJS() : {});
        }
        return original(path);
      };
    },
  } } } };
}
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    plugins: [securitySchemesAsWritten],
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    filter: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
    // No badge from swagger.io's online validator: the page calls nothing but this service.
    validatorUrl: null,
  });
});
`;

interface Asset {
  contentType: string;
  /** A file of swagger-ui-dist, or the text of the start script. */
  file?: string;
  text?: string;
}

/** Every file the page may load; nothing else is served under /docs/assets. */
export const DOCS_ASSETS: Readonly<Record<string, Asset>> = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', file: path.join(SWAGGER_UI_DIR, 'swagger-ui.css') },
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', file: path.join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js') },
  'favicon-32x32.png': { contentType: 'image/png', file: path.join(SWAGGER_UI_DIR, 'favicon-32x32.png') },
  'start.js': { contentType: 'text/javascript; charset=utf-8', text: START_SCRIPT },
};

/**
 * Only this origin, and no inline script. Swagger UI sets element styles from script (allowed: CSSOM, not
 * markup), draws icons as data: images, and calls this service for the document and "Try it out".
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

export interface DocumentedOperation {
  method: string;
  path: string;
  summary?: string;
}

/** The page's HTML. `operations` are listed for browsers without JavaScript. */
export function renderDocsPage(title: string, operations: readonly DocumentedOperation[]): string {
  const items = operations.map((op) =>
    `<li><code>${op.method.toUpperCase()} ${escapeHtml(op.path)}</code>${op.summary ? ` ${escapeHtml(op.summary)}` : ''}</li>`);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · API reference</title>
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
<link rel="preload" href="/openapi.json" as="fetch" crossorigin="anonymous">
<link rel="icon" type="image/png" href="${DOCS_ASSETS_PATH}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<noscript><p>This reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</p>
<ul>${items.join('\n')}</ul></noscript>
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSETS_PATH}/start.js"></script>
</body>
</html>
`;
}

/** The operations of an OpenAPI document, in its order. */
export function operationsOf(document: Record<string, unknown>): DocumentedOperation[] {
  const paths = (document.paths ?? {}) as Record<string, Record<string, { summary?: string }>>;
  return Object.entries(paths).flatMap(([opPath, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method, path: opPath, summary: operation.summary })));
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
