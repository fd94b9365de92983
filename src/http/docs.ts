/**
 * A human-readable reference page for an OpenAPI 3.1 document, as one self-contained HTML page.
 *
 * Everything the page needs is inline: the CSS, a few lines of script for the operation filter, no
 * fonts, images or CDN assets, so the page works offline and leaks nothing to third parties. The page
 * also carries a Content-Security-Policy that only allows its own inline style and script (by hash) and
 * forbids loading anything else.
 *
 * Every piece of text taken from the document is HTML-escaped. The document is ours and trusted, but
 * descriptions are free text, and one stray `<` must not be able to turn into markup. Descriptions are
 * shown as plain text with their line breaks kept (no Markdown rendering). URLs in the document (servers,
 * contact, license, external docs) are shown as text, never as links: the only links are in-page anchors.
 */
import { createHash } from 'node:crypto';

/** A JSON Schema as OpenAPI 3.1 embeds it (loosely typed: only the keywords the page shows). */
export interface SchemaObject {
  $ref?: string;
  title?: string;
  description?: string;
  type?: string | string[];
  format?: string;
  enum?: readonly unknown[];
  const?: unknown;
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  /** The bounds of a free-form object (src/http/validation.ts). */
  'x-bounds'?: { maxDepth: number; maxKeys: number };
  properties?: Readonly<Record<string, Schema>>;
  required?: readonly string[];
  additionalProperties?: Schema;
  items?: Schema;
  oneOf?: readonly Schema[];
  anyOf?: readonly Schema[];
  allOf?: readonly Schema[];
  not?: Schema;
  nullable?: boolean;
  readOnly?: boolean;
  writeOnly?: boolean;
  deprecated?: boolean;
  [keyword: string]: unknown;
}

/** JSON Schema 2020-12 also allows `true` (anything) and `false` (nothing) as schemas. */
export type Schema = SchemaObject | boolean;

export interface ReferenceObject {
  $ref: string;
  [key: string]: unknown;
}

export interface ParameterObject {
  name: string;
  in: string;
  required?: boolean;
  deprecated?: boolean;
  description?: string;
  schema?: Schema;
  content?: Readonly<Record<string, MediaTypeObject>>;
  [key: string]: unknown;
}

export interface MediaTypeObject {
  schema?: Schema;
  [key: string]: unknown;
}

export interface RequestBodyObject {
  description?: string;
  required?: boolean;
  content?: Readonly<Record<string, MediaTypeObject>>;
  [key: string]: unknown;
}

export interface HeaderObject {
  description?: string;
  required?: boolean;
  schema?: Schema;
  [key: string]: unknown;
}

export interface ResponseObject {
  description?: string;
  headers?: Readonly<Record<string, HeaderObject | ReferenceObject>>;
  content?: Readonly<Record<string, MediaTypeObject>>;
  [key: string]: unknown;
}

export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

export interface OperationObject {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: readonly string[];
  deprecated?: boolean;
  security?: readonly SecurityRequirement[];
  parameters?: ReadonlyArray<ParameterObject | ReferenceObject>;
  requestBody?: RequestBodyObject | ReferenceObject;
  responses?: Readonly<Record<string, ResponseObject | ReferenceObject>>;
  [key: string]: unknown;
}

export interface PathItemObject {
  summary?: string;
  description?: string;
  parameters?: ReadonlyArray<ParameterObject | ReferenceObject>;
  get?: OperationObject;
  put?: OperationObject;
  post?: OperationObject;
  delete?: OperationObject;
  options?: OperationObject;
  head?: OperationObject;
  patch?: OperationObject;
  trace?: OperationObject;
  [key: string]: unknown;
}

export interface SecuritySchemeObject {
  type?: string;
  description?: string;
  name?: string;
  in?: string;
  scheme?: string;
  bearerFormat?: string;
  [key: string]: unknown;
}

/** The parts of an OpenAPI 3.1 document the page renders; anything else is allowed and ignored. */
export interface OpenApiDocument {
  openapi: string;
  info: {
    title: string;
    version: string;
    summary?: string;
    description?: string;
    contact?: { name?: string; url?: string; email?: string };
    license?: { name?: string; identifier?: string; url?: string };
    [key: string]: unknown;
  };
  paths: Readonly<Record<string, PathItemObject | undefined>>;
  components?: {
    schemas?: Readonly<Record<string, Schema>>;
    parameters?: Readonly<Record<string, ParameterObject | ReferenceObject>>;
    requestBodies?: Readonly<Record<string, RequestBodyObject | ReferenceObject>>;
    responses?: Readonly<Record<string, ResponseObject | ReferenceObject>>;
    headers?: Readonly<Record<string, HeaderObject | ReferenceObject>>;
    securitySchemes?: Readonly<Record<string, SecuritySchemeObject | ReferenceObject>>;
    [key: string]: unknown;
  };
  tags?: ReadonlyArray<{ name: string; description?: string; [key: string]: unknown }>;
  servers?: ReadonlyArray<{ url: string; description?: string; [key: string]: unknown }>;
  security?: readonly SecurityRequirement[];
  [key: string]: unknown;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
type HttpMethod = (typeof HTTP_METHODS)[number];

/** Nested schemas deeper than this are cut off (inline schemas only; `$ref`s are links, not expanded). */
const MAX_SCHEMA_DEPTH = 12;
/** How many `$ref` hops are followed when resolving parameters, bodies, responses and headers. */
const MAX_REF_HOPS = 10;

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
};

/** Escapes text for use in HTML content and in quoted attribute values. */
export function escapeHtml(value: unknown): string {
  const text = typeof value === 'string' ? value : jsonText(value);
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

interface Context {
  doc: OpenApiDocument;
  /** Component schema name → its anchor id. */
  schemaIds: Map<string, string>;
}

/** Hands out HTML ids made of safe characters, unique within the page. */
class IdAllocator {
  private readonly used = new Set<string>();

  allocate(prefix: string, name: string): string {
    const slug = name.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '') || 'x';
    let id = `${prefix}-${slug}`;
    for (let n = 2; this.used.has(id); n++) id = `${prefix}-${slug}-${n}`;
    this.used.add(id);
    return id;
  }
}

interface OperationEntry {
  method: HttpMethod;
  path: string;
  operation: OperationObject;
  pathItem: PathItemObject;
}

/** Renders the whole page. */
export function renderDocsPage(openapi: OpenApiDocument): string {
  const ids = new IdAllocator();
  const schemaIds = new Map<string, string>();
  for (const name of Object.keys(openapi.components?.schemas ?? {})) schemaIds.set(name, ids.allocate('schema', name));
  const ctx: Context = { doc: openapi, schemaIds };

  // Group operations by tag: declared tags first, in their declared order, then the others as they appear.
  const groups = new Map<string, OperationEntry[]>();
  for (const tag of openapi.tags ?? []) groups.set(tag.name, []);
  for (const [path, pathItem] of Object.entries(openapi.paths ?? {})) {
    if (!isObject(pathItem)) continue;
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method];
      if (!isObject(operation)) continue;
      const tags = operation.tags !== undefined && operation.tags.length > 0 ? operation.tags : [fallbackTag(path)];
      for (const tag of new Set(tags)) {
        if (!groups.has(tag)) groups.set(tag, []);
        groups.get(tag)!.push({ method, path, operation, pathItem });
      }
    }
  }
  const tagDescriptions = new Map((openapi.tags ?? []).map((t) => [t.name, t.description]));

  const nav: string[] = [];
  const sections: string[] = [];
  for (const [tag, entries] of groups) {
    if (entries.length === 0) continue;
    const tagId = ids.allocate('tag', tag);
    const navOps: string[] = [];
    const ops: string[] = [];
    for (const entry of entries) {
      const opId = ids.allocate('op', entry.operation.operationId ?? `${entry.method}-${entry.path}`);
      navOps.push(`<li data-op="${opId}"><a href="#${opId}">${methodBadge(entry.method)} <span class="nav-path">${escapeHtml(entry.path)}</span></a></li>`);
      ops.push(renderOperation(entry, opId, ctx));
    }
    nav.push(`<li class="nav-tag" data-tag="${tagId}"><a href="#${tagId}">${escapeHtml(tag)}</a> <span class="count">${entries.length}</span><ul>${navOps.join('')}</ul></li>`);
    const tagDescription = tagDescriptions.get(tag);
    sections.push(`<section class="tag" id="${tagId}"><h2>${escapeHtml(tag)}</h2>${description(tagDescription)}${ops.join('\n')}</section>`);
  }

  const components = renderComponents(ctx);
  if (schemaIds.size > 0) nav.push('<li class="nav-tag nav-fixed"><a href="#schemas">Schemas</a></li>');
  if (Object.keys(openapi.components?.securitySchemes ?? {}).length > 0) {
    nav.push('<li class="nav-tag nav-fixed"><a href="#security-schemes">Security schemes</a></li>');
  }

  const { info } = openapi;
  const title = escapeHtml(info?.title ?? 'API');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">
<meta name="referrer" content="no-referrer">
<title>${title} ${escapeHtml(info?.version ?? '')} · API reference</title>
<style>${STYLE}</style>
</head>
<body>
<nav class="sidebar" aria-label="Operations">
<a class="brand" href="#top">${title}</a>
<input type="search" id="filter" placeholder="Filter by path or summary" aria-label="Filter operations by path or summary" autocomplete="off">
<ul class="nav">${nav.join('\n')}</ul>
</nav>
<main id="top">
${renderHeader(openapi)}
<p id="no-match" hidden>No operation matches the filter.</p>
${sections.join('\n')}
${components}
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** An operation without tags is listed under the first segment of its path. */
function fallbackTag(path: string): string {
  return path.split('/').find((segment) => segment !== '') ?? '/';
}

function renderHeader(doc: OpenApiDocument): string {
  const info = doc.info ?? { title: 'API', version: '' };
  const parts = [
    `<header class="intro"><h1>${escapeHtml(info.title)}</h1>`,
    `<p class="badges"><span class="badge">version ${escapeHtml(info.version)}</span>`,
    ` <span class="badge">OpenAPI ${escapeHtml(doc.openapi)}</span></p>`,
  ];
  if (info.summary) parts.push(`<p class="lead">${escapeHtml(info.summary)}</p>`);
  parts.push(description(info.description));
  const facts: string[] = [];
  for (const server of doc.servers ?? []) {
    facts.push(`<li>Server: <code>${escapeHtml(server.url)}</code>${server.description ? ` — ${escapeHtml(server.description)}` : ''}</li>`);
  }
  const contact = info.contact;
  if (contact && (contact.name || contact.email || contact.url)) {
    const bits = [contact.name, contact.email, contact.url].filter((b): b is string => typeof b === 'string' && b !== '');
    facts.push(`<li>Contact: ${bits.map(escapeHtml).join(' · ')}</li>`);
  }
  const license = info.license;
  if (license?.name) {
    const extra = license.identifier ?? license.url;
    facts.push(`<li>License: ${escapeHtml(license.name)}${extra ? ` (${escapeHtml(extra)})` : ''}</li>`);
  }
  if (facts.length > 0) parts.push(`<ul class="facts">${facts.join('')}</ul>`);
  parts.push('</header>');
  return parts.join('');
}

function renderOperation(entry: OperationEntry, id: string, ctx: Context): string {
  const { method, path, operation, pathItem } = entry;
  const search = [method, path, operation.summary ?? '', operation.operationId ?? ''].join(' ').toLowerCase();
  const out: string[] = [
    `<article class="op${operation.deprecated ? ' deprecated' : ''}" id="${id}" data-search="${escapeHtml(search)}">`,
    `<h3 class="op-head">${methodBadge(method)} <code class="path">${escapeHtml(path)}</code>`,
  ];
  if (operation.summary) out.push(` <span class="summary">${escapeHtml(operation.summary)}</span>`);
  if (operation.deprecated) out.push(' <span class="badge warn">deprecated</span>');
  out.push('</h3>');
  if (operation.operationId) out.push(`<p class="opid">operationId <code>${escapeHtml(operation.operationId)}</code></p>`);
  out.push(description(operation.description ?? pathItem.description));
  out.push(renderSecurity(operation.security ?? ctx.doc.security));
  out.push(renderParameters(mergedParameters(pathItem.parameters, operation.parameters, ctx), ctx));
  if (operation.requestBody !== undefined) out.push(renderRequestBody(operation.requestBody, ctx));
  out.push(renderResponses(operation.responses ?? {}, ctx));
  out.push('</article>');
  return out.join('\n');
}

function renderSecurity(security: readonly SecurityRequirement[] | undefined): string {
  if (security === undefined) return '';
  if (security.length === 0 || security.some((req) => Object.keys(req).length === 0)) {
    return '<p class="security">Authentication: <span class="badge">none</span></p>';
  }
  const alternatives = security.map((req) => Object.entries(req).map(([name, scopes]) => {
    const scopeText = scopes.length > 0 ? ` (${scopes.map(escapeHtml).join(', ')})` : '';
    return `<code>${escapeHtml(name)}</code>${scopeText}`;
  }).join(' and '));
  return `<p class="security">Authentication: ${alternatives.join(' <em>or</em> ')}</p>`;
}

/** Path-level parameters apply to every operation, unless the operation redefines the same name and location. */
function mergedParameters(
  pathLevel: ReadonlyArray<ParameterObject | ReferenceObject> | undefined,
  operationLevel: ReadonlyArray<ParameterObject | ReferenceObject> | undefined,
  ctx: Context,
): Array<ParameterObject | ReferenceObject> {
  const merged = new Map<string, ParameterObject | ReferenceObject>();
  [...(pathLevel ?? []), ...(operationLevel ?? [])].forEach((raw, index) => {
    const resolved = resolve<ParameterObject>(raw, ctx);
    const key = isRef(resolved) ? `unresolved ${index}` : `${resolved.in} ${resolved.name}`;
    merged.set(key, resolved);
  });
  return [...merged.values()];
}

function renderParameters(parameters: Array<ParameterObject | ReferenceObject>, ctx: Context): string {
  if (parameters.length === 0) return '';
  const rows = parameters.map((p) => {
    if (isRef(p)) return `<tr><td colspan="5">${unresolved(p.$ref)}</td></tr>`;
    const schema = p.schema ?? firstMediaSchema(p.content);
    const schemaCell = schema === undefined ? '' : `${typeLabel(schema, ctx)}${constraints(schema)}${details(schema, ctx, 1, [])}`;
    return `<tr><td><code class="name">${escapeHtml(p.name)}</code>${p.deprecated ? ' <span class="badge warn">deprecated</span>' : ''}</td>`
      + `<td>${escapeHtml(p.in)}</td><td>${p.required ? '<span class="req">required</span>' : 'optional'}</td>`
      + `<td>${schemaCell}</td><td>${description(p.description)}</td></tr>`;
  });
  return '<h4>Parameters</h4><table class="params"><thead><tr><th>Name</th><th>In</th><th>Required</th><th>Schema</th>'
    + `<th>Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function renderRequestBody(raw: RequestBodyObject | ReferenceObject, ctx: Context): string {
  const body = resolve<RequestBodyObject>(raw, ctx);
  if (isRef(body)) return `<h4>Request body</h4><p>${unresolved(body.$ref)}</p>`;
  return `<h4>Request body ${body.required ? '<span class="req">required</span>' : '<span class="badge">optional</span>'}</h4>`
    + description(body.description) + renderContent(body.content, ctx);
}

function renderResponses(responses: Readonly<Record<string, ResponseObject | ReferenceObject>>, ctx: Context): string {
  const entries = Object.entries(responses);
  if (entries.length === 0) return '';
  const items = entries.map(([status, raw]) => {
    const response = resolve<ResponseObject>(raw, ctx);
    const statusClass = /^[1-5]/.test(status) ? `s${status[0]}` : 'sd';
    const head = `<div class="response"><p class="response-head"><span class="status ${statusClass}">${escapeHtml(status)}</span>`;
    if (isRef(response)) return `${head} ${unresolved(response.$ref)}</p></div>`;
    const descriptionText = response.description ? ` <span class="response-desc">${escapeHtml(response.description)}</span>` : '';
    return `${head}${descriptionText}</p>${renderHeaders(response.headers, ctx)}${renderContent(response.content, ctx)}</div>`;
  });
  return `<h4>Responses</h4>${items.join('')}`;
}

function renderHeaders(headers: ResponseObject['headers'], ctx: Context): string {
  const entries = Object.entries(headers ?? {});
  if (entries.length === 0) return '';
  const rows = entries.map(([name, raw]) => {
    const header = resolve<HeaderObject>(raw, ctx);
    if (isRef(header)) return `<tr><td><code class="name">${escapeHtml(name)}</code></td><td colspan="2">${unresolved(header.$ref)}</td></tr>`;
    const schema = header.schema === undefined ? '' : `${typeLabel(header.schema, ctx)}${constraints(header.schema)}`;
    return `<tr><td><code class="name">${escapeHtml(name)}</code></td><td>${schema}</td><td>${description(header.description)}</td></tr>`;
  });
  return `<table class="headers"><thead><tr><th>Header</th><th>Schema</th><th>Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function renderContent(content: Readonly<Record<string, MediaTypeObject>> | undefined, ctx: Context): string {
  return Object.entries(content ?? {}).map(([mediaType, media]) => (
    `<div class="media"><span class="media-type">${escapeHtml(mediaType)}</span>`
    + `${isObject(media) && media.schema !== undefined ? schemaBlock(media.schema, ctx, 0, []) : ''}</div>`
  )).join('');
}

function renderComponents(ctx: Context): string {
  const out: string[] = [];
  const schemas = Object.entries(ctx.doc.components?.schemas ?? {});
  if (schemas.length > 0) {
    out.push('<section class="components" id="schemas"><h2>Schemas</h2>');
    for (const [name, schema] of schemas) {
      out.push(`<section class="component" id="${ctx.schemaIds.get(name)!}"><h3>${escapeHtml(name)}</h3>${schemaBlock(schema, ctx, 0, [])}</section>`);
    }
    out.push('</section>');
  }
  const schemes = Object.entries(ctx.doc.components?.securitySchemes ?? {});
  if (schemes.length > 0) {
    const rows = schemes.map(([name, raw]) => {
      const scheme = resolve<SecuritySchemeObject>(raw, ctx);
      if (isRef(scheme)) return `<tr><td><code class="name">${escapeHtml(name)}</code></td><td colspan="2">${unresolved(scheme.$ref)}</td></tr>`;
      const how = [scheme.type, scheme.scheme, scheme.bearerFormat, scheme.in && scheme.name ? `${scheme.in} ${scheme.name}` : undefined]
        .filter((b): b is string => typeof b === 'string' && b !== '');
      return `<tr><td><code class="name">${escapeHtml(name)}</code></td><td>${how.map(escapeHtml).join(' · ')}</td><td>${description(scheme.description)}</td></tr>`;
    });
    out.push('<section class="components" id="security-schemes"><h2>Security schemes</h2><table class="params"><thead><tr>'
      + `<th>Name</th><th>Kind</th><th>Description</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`);
  }
  return out.join('\n');
}

// ---- Schemas -------------------------------------------------------------------------------------------

/** A schema in full: its type line, constraints, description, then nested fields, items or alternatives. */
function schemaBlock(schema: Schema, ctx: Context, depth: number, ancestors: readonly object[]): string {
  const title = typeof schema === 'object' && schema.title && schema.$ref === undefined
    ? `<span class="schema-title">${escapeHtml(schema.title)}</span> ` : '';
  const text = typeof schema === 'object' ? description(schema.description) : '';
  return `<div class="schema"><div class="schema-line">${title}${typeLabel(schema, ctx)}${constraints(schema)}</div>`
    + `${text}${details(schema, ctx, depth, ancestors)}</div>`;
}

/** A short, one-line type: `string (uuid)`, `array of Money`, `integer | null`, a link for a `$ref`. */
function typeLabel(schema: Schema, ctx: Context, depth = 0): string {
  if (schema === true) return '<span class="type">any</span>';
  if (schema === false) return '<span class="type">nothing (no value allowed)</span>';
  if (!isObject(schema)) return '<span class="type">?</span>';
  if (typeof schema.$ref === 'string') return refLink(schema.$ref, ctx);
  if (depth > MAX_SCHEMA_DEPTH) return '<span class="type">…</span>';

  const types = Array.isArray(schema.type) ? [...schema.type] : typeof schema.type === 'string' ? [schema.type] : [];
  if (schema.nullable === true && !types.includes('null')) types.push('null');
  const format = typeof schema.format === 'string' ? ` <span class="format">(${escapeHtml(schema.format)})</span>` : '';
  const labels = types.map((type) => {
    if (type === 'array') return `array of ${schema.items === undefined ? '<span class="type">any</span>' : typeLabel(schema.items, ctx, depth + 1)}`;
    return `<span class="type">${escapeHtml(type)}</span>${type === 'null' ? '' : format}`;
  });
  if (labels.length > 0) return labels.join(' | ');

  if (schema.const !== undefined) return '<span class="type">constant</span>';
  if (schema.enum !== undefined) return '<span class="type">enum</span>';
  if (schema.properties !== undefined) return '<span class="type">object</span>';
  if (schema.items !== undefined) return `array of ${typeLabel(schema.items, ctx, depth + 1)}`;
  for (const [keyword, label] of COMBINATORS) {
    const variants = schema[keyword];
    if (Array.isArray(variants) && variants.length > 0) {
      return `${label.toLowerCase()}: ${variants.map((v: Schema) => typeLabel(v, ctx, depth + 1)).join(', ')}`;
    }
  }
  return `<span class="type">any</span>${format}`;
}

const COMBINATORS = [['oneOf', 'One of'], ['anyOf', 'Any of'], ['allOf', 'All of']] as const;

/** The validation keywords of one schema, as small chips. */
function constraints(schema: Schema): string {
  if (!isObject(schema)) return '';
  const chips: string[] = [];
  const code = (value: unknown) => `<code>${escapeHtml(jsonText(value))}</code>`;
  if (Array.isArray(schema.enum)) chips.push(`enum: ${schema.enum.map(code).join(', ')}`);
  if (schema.const !== undefined) chips.push(`exactly ${code(schema.const)}`);
  if (typeof schema.pattern === 'string') chips.push(`pattern <code>${escapeHtml(schema.pattern)}</code>`);
  if (typeof schema.minLength === 'number') chips.push(`min length ${schema.minLength}`);
  if (typeof schema.maxLength === 'number') chips.push(`max length ${schema.maxLength}`);
  if (typeof schema.minimum === 'number') chips.push(`${schema.exclusiveMinimum === true ? '&gt;' : '≥'} ${schema.minimum}`);
  if (typeof schema.exclusiveMinimum === 'number') chips.push(`&gt; ${schema.exclusiveMinimum}`);
  if (typeof schema.maximum === 'number') chips.push(`${schema.exclusiveMaximum === true ? '&lt;' : '≤'} ${schema.maximum}`);
  if (typeof schema.exclusiveMaximum === 'number') chips.push(`&lt; ${schema.exclusiveMaximum}`);
  if (typeof schema.multipleOf === 'number') chips.push(`multiple of ${schema.multipleOf}`);
  if (typeof schema.minItems === 'number') chips.push(`min items ${schema.minItems}`);
  if (typeof schema.maxItems === 'number') chips.push(`max items ${schema.maxItems}`);
  if (schema.uniqueItems === true) chips.push('unique items');
  if (typeof schema.minProperties === 'number') chips.push(`min fields ${schema.minProperties}`);
  if (typeof schema.maxProperties === 'number') chips.push(`max fields ${schema.maxProperties}`);
  const bounds = schema['x-bounds'];
  if (bounds) chips.push(`nests at most ${bounds.maxDepth} levels`, `at most ${bounds.maxKeys} keys in all`);
  if (schema.default !== undefined) chips.push(`default ${code(schema.default)}`);
  if (schema.readOnly === true) chips.push('read-only');
  if (schema.writeOnly === true) chips.push('write-only');
  if (schema.deprecated === true) chips.push('deprecated');
  return chips.map((chip) => ` <span class="chip">${chip}</span>`).join('');
}

/** What a type line cannot show: nested fields, complex array items, alternatives, extra-field rules. */
function details(schema: Schema, ctx: Context, depth: number, ancestors: readonly object[]): string {
  if (!isObject(schema) || typeof schema.$ref === 'string') return '';
  if (ancestors.includes(schema)) return '<p class="note">(recursive schema)</p>';
  if (depth > MAX_SCHEMA_DEPTH) return '<p class="note">(nested too deeply to show)</p>';
  const inner = [...ancestors, schema];
  const out: string[] = [];

  if (isObject(schema.properties) && Object.keys(schema.properties).length > 0) {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const rows = Object.entries(schema.properties).map(([name, property]) => {
      const text = isObject(property) ? description(property.description) : '';
      return `<tr><td><code class="name">${escapeHtml(name)}</code></td><td>${typeLabel(property, ctx)}</td>`
        + `<td>${required.has(name) ? '<span class="req">required</span>' : 'optional'}</td>`
        + `<td>${constraints(property).trim()}${text}${details(property, ctx, depth + 1, inner)}</td></tr>`;
    });
    out.push('<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Details</th></tr></thead>'
      + `<tbody>${rows.join('')}</tbody></table>`);
    const missing = [...required].filter((name) => !(name in schema.properties!));
    if (missing.length > 0) out.push(`<p class="note">Also required: ${missing.map((n) => `<code>${escapeHtml(n)}</code>`).join(', ')}</p>`);
  } else if (Array.isArray(schema.required) && schema.required.length > 0) {
    out.push(`<p class="note">Required fields: ${schema.required.map((n) => `<code>${escapeHtml(n)}</code>`).join(', ')}</p>`);
  }

  const extra = schema.additionalProperties;
  if (extra === false) {
    out.push('<p class="note">No other fields.</p>');
  } else if (isObject(extra)) {
    out.push(`<div class="nested"><span class="label">Other fields</span>${schemaBlock(extra, ctx, depth + 1, inner)}</div>`);
  }

  if (schema.items !== undefined && needsDetails(schema.items)) {
    out.push(`<div class="nested"><span class="label">Items</span>${schemaBlock(schema.items, ctx, depth + 1, inner)}</div>`);
  }

  for (const [keyword, label] of COMBINATORS) {
    const variants = schema[keyword];
    if (!Array.isArray(variants) || variants.length === 0) continue;
    const items = variants.map((variant: Schema) => `<li>${schemaBlock(variant, ctx, depth + 1, inner)}</li>`);
    out.push(`<div class="nested"><span class="label">${label}</span><ol class="variants">${items.join('')}</ol></div>`);
  }
  if (schema.not !== undefined) {
    out.push(`<div class="nested"><span class="label">Must not match</span>${schemaBlock(schema.not, ctx, depth + 1, inner)}</div>`);
  }
  return out.join('');
}

/** Whether a schema has more to show than its type line (a `$ref` is a link: nothing more here). */
function needsDetails(schema: Schema): boolean {
  if (!isObject(schema) || typeof schema.$ref === 'string') return false;
  return (isObject(schema.properties) && Object.keys(schema.properties).length > 0)
    || schema.additionalProperties === false || isObject(schema.additionalProperties)
    || COMBINATORS.some(([keyword]) => Array.isArray(schema[keyword]))
    || schema.not !== undefined
    || typeof schema.description === 'string'
    || constraints(schema) !== ''
    || (schema.items !== undefined && needsDetails(schema.items));
}

// ---- References ----------------------------------------------------------------------------------------

const SCHEMA_REF_PREFIX = '#/components/schemas/';

/** A link to the components section for `#/components/schemas/X`; any other reference is shown as text. */
function refLink(ref: string, ctx: Context): string {
  if (ref.startsWith(SCHEMA_REF_PREFIX)) {
    const name = decodePointerSegment(ref.slice(SCHEMA_REF_PREFIX.length));
    const id = name === null ? undefined : ctx.schemaIds.get(name);
    if (id !== undefined) return `<a class="ref" href="#${id}">${escapeHtml(name)}</a>`;
  }
  return unresolved(ref);
}

function unresolved(ref: string): string {
  return `<span class="ref unresolved" title="reference not found in this document">${escapeHtml(ref)}</span>`;
}

/** One JSON Pointer segment inside a URI fragment: percent-decoded, then `~1` → `/` and `~0` → `~`. */
function decodePointerSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~');
  } catch {
    return null;
  }
}

/** Follows local `$ref`s (`#/...`) through the document; an unresolvable reference comes back as is. */
function resolve<T extends object>(value: T | ReferenceObject, ctx: Context): T | ReferenceObject {
  let current: unknown = value;
  for (let hop = 0; hop < MAX_REF_HOPS && isRef(current); hop++) {
    const target = lookupPointer(ctx.doc, current.$ref);
    if (!isObject(target)) return current;
    current = target;
  }
  return current as T | ReferenceObject;
}

function lookupPointer(doc: OpenApiDocument, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodePointerSegment(raw);
    if (key === null || !isObject(node) || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function isRef(value: unknown): value is ReferenceObject {
  return isObject(value) && typeof (value as { $ref?: unknown }).$ref === 'string';
}

// ---- Small pieces --------------------------------------------------------------------------------------

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function firstMediaSchema(content: Readonly<Record<string, MediaTypeObject>> | undefined): Schema | undefined {
  const first = Object.values(content ?? {})[0];
  return isObject(first) ? first.schema : undefined;
}

function methodBadge(method: HttpMethod): string {
  return `<span class="method m-${method}">${method.toUpperCase()}</span>`;
}

function description(text: unknown): string {
  if (text === undefined || text === null || text === '') return '';
  return `<div class="desc">${escapeHtml(text)}</div>`;
}

const STYLE = `
:root{--bg:#fff;--fg:#1d2330;--muted:#5b6472;--line:#e1e5eb;--soft:#f5f7fa;--accent:#2357c6;--side:#f0f3f7}
*{box-sizing:border-box}
[hidden]{display:none!important}
html{scroll-behavior:smooth}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg);display:flex;min-height:100vh}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
a{color:var(--accent);text-decoration:none}
a:hover{text-decoration:underline}
.sidebar{position:sticky;top:0;align-self:flex-start;width:300px;flex:none;height:100vh;overflow:auto;background:var(--side);border-right:1px solid var(--line);padding:16px}
.brand{display:block;font-weight:700;font-size:1.1em;color:var(--fg);margin-bottom:12px}
#filter{width:100%;padding:7px 9px;border:1px solid var(--line);border-radius:6px;font:inherit;margin-bottom:12px}
.nav,.nav ul{list-style:none;margin:0;padding:0}
.nav-tag{margin:10px 0}
.nav-tag>a{font-weight:600}
.nav-tag ul{margin-top:4px}
.nav-tag li a{display:block;padding:2px 0;color:var(--fg);font-size:.88em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.count{color:var(--muted);font-size:.8em}
main{flex:1;min-width:0;padding:24px 40px 80px;max-width:1100px}
h1{margin:0 0 6px}
h2{border-bottom:2px solid var(--line);padding-bottom:4px;margin-top:40px}
h4{margin:18px 0 6px}
.badges{margin:0 0 10px}
.badge,.chip{display:inline-block;border:1px solid var(--line);background:var(--soft);border-radius:10px;padding:0 8px;font-size:.8em;color:var(--muted)}
.badge.warn{background:#fff4e0;border-color:#f0c36d;color:#8a5a00}
.lead{font-size:1.1em}
.desc{white-space:pre-wrap;margin:6px 0}
.facts{color:var(--muted);padding-left:18px}
.op{border:1px solid var(--line);border-radius:8px;padding:12px 16px;margin:16px 0;scroll-margin-top:12px}
.op.deprecated .path{text-decoration:line-through}
.op-head{margin:0;font-size:1.05em;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.summary{font-weight:400;color:var(--muted)}
.opid,.security{color:var(--muted);font-size:.85em;margin:4px 0}
.method{display:inline-block;min-width:58px;text-align:center;border-radius:4px;padding:1px 6px;font-size:.75em;font-weight:700;color:#fff;background:#6b7280;font-family:ui-monospace,Menlo,Consolas,monospace}
.m-get{background:#1f7a4d}.m-post{background:#2357c6}.m-put{background:#a15c00}.m-patch{background:#7a4bc2}.m-delete{background:#b42318}
table{border-collapse:collapse;width:100%;margin:6px 0;font-size:.9em}
th,td{border:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td .desc{margin:2px 0}
.req{color:#b42318;font-weight:600;font-size:.85em}
.type{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em}
.format{color:var(--muted);font-size:.85em}
.schema{margin:4px 0}
.schema-title{font-weight:600}
.nested{margin:6px 0 6px 10px;padding-left:10px;border-left:3px solid var(--line)}
.label{display:block;font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.variants{margin:4px 0;padding-left:22px}
.note{color:var(--muted);font-style:italic;margin:4px 0;font-size:.9em}
.ref.unresolved{font-family:ui-monospace,Menlo,Consolas,monospace;color:var(--muted)}
.media{margin:6px 0}
.media-type{display:inline-block;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.8em;color:var(--muted)}
.response{border-top:1px dashed var(--line);padding:6px 0}
.response-head{margin:0}
.status{display:inline-block;min-width:48px;text-align:center;border-radius:4px;font-weight:700;font-size:.85em;padding:0 6px;background:#e5e7eb}
.s2{background:#d3f0df;color:#14532d}.s3{background:#dbe7fb;color:#1e3a8a}.s4{background:#fde8c8;color:#7c2d12}.s5{background:#fbd5d5;color:#7f1d1d}
.components .component{border:1px solid var(--line);border-radius:8px;padding:10px 16px;margin:14px 0;scroll-margin-top:12px}
.components h3{margin:0 0 6px;font-family:ui-monospace,Menlo,Consolas,monospace}
#no-match{color:var(--muted)}
@media (max-width:800px){body{display:block}.sidebar{position:static;width:auto;height:auto}main{padding:16px}}
`;

/** Filters operations (and their sidebar entries and tag sections) by the words typed in the search box. */
const SCRIPT = `
(function () {
  var input = document.getElementById('filter');
  var ops = Array.prototype.slice.call(document.querySelectorAll('article.op'));
  var links = {};
  Array.prototype.forEach.call(document.querySelectorAll('[data-op]'), function (li) { links[li.getAttribute('data-op')] = li; });
  var sections = Array.prototype.slice.call(document.querySelectorAll('section.tag'));
  var navTags = {};
  Array.prototype.forEach.call(document.querySelectorAll('[data-tag]'), function (li) { navTags[li.getAttribute('data-tag')] = li; });
  var none = document.getElementById('no-match');
  function apply() {
    var words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    ops.forEach(function (op) {
      var text = op.getAttribute('data-search') || '';
      var match = words.every(function (w) { return text.indexOf(w) !== -1; });
      op.hidden = !match;
      if (links[op.id]) links[op.id].hidden = !match;
      if (match) shown++;
    });
    sections.forEach(function (section) {
      var visible = section.querySelector('article.op:not([hidden])') !== null;
      section.hidden = !visible;
      if (navTags[section.id]) navTags[section.id].hidden = !visible;
    });
    none.hidden = shown !== 0;
  }
  input.addEventListener('input', apply);
  input.addEventListener('keydown', function (e) { if (e.key === 'Escape') { input.value = ''; apply(); } });
})();
`;

function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** Only this page's own inline style and script may run; nothing may be fetched, framed or submitted. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src ${cspHash(STYLE)}`,
  `script-src ${cspHash(SCRIPT)}`,
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
