/**
 * The committed record of every stored event type's schema at each of its versions (snapshot.json), and the
 * comparison of the registry with it. A stored event is never rewritten, so once a version's schema is recorded
 * it is fixed: a different shape needs a new version, which exists only with an upcaster from the old one.
 */
import { readFileSync } from 'node:fs';
import type { EventContracts, JsonSchema } from '../eventstore/upcasting.ts';

export const SNAPSHOT_FILE = new URL('../../schemas/events/snapshot.json', import.meta.url);

/** Event type → version (as a string key) → canonical schema. */
export type EventSchemaSnapshot = Record<string, Record<string, unknown>>;

/** Keywords that document a schema without constraining the data: changing them changes no stored shape. */
const ANNOTATIONS = new Set(['title', 'description', '$comment', 'examples', 'deprecated']);
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is a set of strings: their order means nothing. */
const STRING_SETS = new Set(['required', 'enum', 'type']);

/** The schema with its keys sorted, annotations left out and sets ordered: equal constraints, equal JSON. */
export function canonicalSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(canonicalSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema).sort()) {
    if (ANNOTATIONS.has(key)) continue;
    const value = (schema as Record<string, unknown>)[key];
    if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null) {
      out[key] = Object.fromEntries(Object.keys(value).sort().map((name) => [name, canonicalSchema((value as Record<string, unknown>)[name])]));
    } else if (STRING_SETS.has(key) && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      out[key] = [...value].sort();
    } else {
      out[key] = canonicalSchema(value);
    }
  }
  return out;
}

export function readSnapshot(file: URL = SNAPSHOT_FILE): EventSchemaSnapshot {
  return JSON.parse(readFileSync(file, 'utf8')) as EventSchemaSnapshot;
}

export function formatSnapshot(snapshot: EventSchemaSnapshot): string {
  const sorted = Object.fromEntries(Object.keys(snapshot).sort().map((type) => [type,
    Object.fromEntries(Object.keys(snapshot[type]!).sort((a, b) => Number(a) - Number(b)).map((v) => [v, snapshot[type]![v]]))]));
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

export interface SnapshotComparison {
  /** Changes the snapshot must never take: each names its event type and says what to do instead. */
  refused: string[];
  /** Types or versions the snapshot does not have yet (`npm run events:snapshot` records them). */
  unrecorded: string[];
  /** The snapshot with every unrecorded version added. */
  next: EventSchemaSnapshot;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export function compareWithSnapshot(contracts: EventContracts, snapshot: EventSchemaSnapshot): SnapshotComparison {
  const refused: string[] = [];
  const unrecorded: string[] = [];
  const next: EventSchemaSnapshot = structuredClone(snapshot);
  for (const type of contracts.types()) {
    const version = contracts.currentVersion(type);
    const schema = canonicalSchema(contracts.schemaOf(type) as JsonSchema);
    const recorded = snapshot[type] ?? {};
    const newest = Math.max(0, ...Object.keys(recorded).map(Number));
    if (newest > version) {
      refused.push(`${type}: the snapshot records v${newest} but the registry is at v${version} (an upcaster was removed?)`);
    } else if (recorded[version] === undefined) {
      unrecorded.push(`${type} v${version}`);
      next[type] = { ...recorded, [version]: schema };
    } else if (!same(recorded[version], schema)) {
      refused.push(`${type}: its schema changed but its version did not (still v${version}); stored events keep their ` +
        `shape, so register an upcaster from v${version} (the new shape is v${version + 1}) and run npm run events:snapshot`);
    }
  }
  for (const type of Object.keys(snapshot)) {
    if (!contracts.has(type)) refused.push(`${type}: recorded in the snapshot but no longer registered; its stored events still need a contract`);
  }
  return { refused, unrecorded, next };
}
