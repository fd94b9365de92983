/**
 * Checks an answer against the OpenAPI document: the documented schema of its status (JSON answers), and
 * the error schema for every 4xx/5xx. Every endpoint test goes through it (see testService.request).
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
const compiled = new WeakMap<object, ReturnType<Ajv['compile']>>();

interface Document {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
  components: { schemas: Record<string, object> };
}

function templateMatches(template: string, path: string): boolean {
  const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+').replace(/\{[^}]+\}/g, '[^/]+')}$`);
  return pattern.test(path);
}


export function checkResponse(doc: unknown, method: string, path: string, response: { status: number; body: unknown; text: string }): void {
  const document = doc as Document;
  const errorSchema = document.components.schemas.Error!;
  const validateAgainst = (schema: object, what: string) => {
    let validate = compiled.get(schema);
    if (!validate) {
      // The document's named schemas beside it, so that its `#/components/schemas/…` references resolve.
      validate = ajv.compile({ ...schema, components: { schemas: document.components.schemas } });
      compiled.set(schema, validate);
    }
    if (!validate(response.body)) {
      throw new Error(`${method} ${path} answered ${response.status} with a body that breaks ${what}: ` +
        `${ajv.errorsText(validate.errors)}\n${response.text.slice(0, 500)}`);
    }
  };
  if (response.status >= 400) {
    validateAgainst(errorSchema, 'the error schema');
    if ((response.body as { statusCode?: number }).statusCode !== response.status) {
      throw new Error(`${method} ${path}: error payload statusCode differs from the HTTP status ${response.status}`);
    }
    return;
  }
  const template = Object.keys(document.paths).find((t) => templateMatches(t, path));
  const operation = template ? document.paths[template]![method.toLowerCase()] : undefined;
  if (!operation) throw new Error(`${method} ${path} answered ${response.status} but is not in the OpenAPI document`);
  const documented = operation.responses[String(response.status)];
  if (!documented) throw new Error(`${method} ${path} answered ${response.status}, which is not documented`);
  const schema = documented.content?.['application/json']?.schema;
  if (schema && response.text) validateAgainst(schema, `the documented ${response.status} schema`);
}
