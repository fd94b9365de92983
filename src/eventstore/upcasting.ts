/**
 * Old event versions stay readable forever: each stored event carries the schema version it was written
 * with, and on read every upcaster from that version up to the current one is applied in turn.
 */
import type { RecordedEvent } from './port.ts';

export type Upcaster = (data: any, event: RecordedEvent) => unknown;

export class UpcasterRegistry {
  /** type → (fromVersion → upcaster to fromVersion + 1) */
  private readonly steps = new Map<string, Map<number, Upcaster>>();

  /** Registers the step that turns version `fromVersion` of `type` into version `fromVersion + 1`. */
  register(type: string, fromVersion: number, upcaster: Upcaster): this {
    if (!Number.isInteger(fromVersion) || fromVersion < 1) throw new RangeError('fromVersion must be an integer ≥ 1');
    let byVersion = this.steps.get(type);
    if (!byVersion) this.steps.set(type, (byVersion = new Map()));
    if (byVersion.has(fromVersion)) throw new Error(`upcaster for ${type} v${fromVersion} registered twice`);
    byVersion.set(fromVersion, upcaster);
    return this;
  }

  /** The version new events of this type are written with. */
  currentVersion(type: string): number {
    const byVersion = this.steps.get(type);
    if (!byVersion) return 1;
    let version = 1;
    while (byVersion.has(version)) version++;
    return version;
  }

  upcast<E extends RecordedEvent>(event: E): E {
    const byVersion = this.steps.get(event.type);
    if (!byVersion) return event;
    let { data, schemaVersion } = event;
    for (let step = byVersion.get(schemaVersion); step; step = byVersion.get(schemaVersion)) {
      data = step(data, { ...event, data, schemaVersion });
      schemaVersion++;
    }
    return schemaVersion === event.schemaVersion ? event : { ...event, data, schemaVersion };
  }
}

export const noUpcasting = new UpcasterRegistry();

/** A JSON Schema, as a `const` object (the same object `FromSchema` derives the event's data type from). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** The stored contracts of one context: each event type's data schema, and the upcasters of its older versions. */
export interface ContextEvents {
  /** Event type → JSON Schema of its `data` at the current version. */
  readonly schemas: Readonly<Record<string, JsonSchema>>;
  /** Each step from `fromVersion` to `fromVersion + 1` of a type; its current version is the last step's + 1. */
  readonly upcasters?: ReadonlyArray<{ readonly type: string; readonly fromVersion: number; readonly upcaster: Upcaster }>;
}

/**
 * Every stored event type with its data schema and current version. The version is the upcaster chain's (a type
 * with upcasters from v1 and v2 is written as v3), so a new version cannot exist without the way up from the old
 * one; the committed snapshot (schemas/events/snapshot.json) records each version's schema, and a test fails when
 * a schema changes while its version stays.
 */
export class EventContracts {
  readonly upcasters = new UpcasterRegistry();
  private readonly schemas = new Map<string, JsonSchema>();

  constructor(contexts: readonly ContextEvents[]) {
    for (const context of contexts) {
      for (const [type, schema] of Object.entries(context.schemas)) {
        if (this.schemas.has(type)) throw new Error(`stored event type ${type} declared twice`);
        this.schemas.set(type, schema);
      }
    }
    const lastStep = new Map<string, number>();
    for (const context of contexts) {
      for (const { type, fromVersion, upcaster } of context.upcasters ?? []) {
        if (!this.schemas.has(type)) throw new Error(`upcaster for ${type}, which has no declared schema`);
        this.upcasters.register(type, fromVersion, upcaster);
        lastStep.set(type, Math.max(lastStep.get(type) ?? 0, fromVersion));
      }
    }
    for (const [type, last] of lastStep) {
      if (this.upcasters.currentVersion(type) !== last + 1) throw new Error(`${type}: the upcasters up to v${last} leave a gap`);
    }
  }

  /** Every stored event type, sorted. */
  types(): string[] {
    return [...this.schemas.keys()].sort();
  }

  has(type: string): boolean {
    return this.schemas.has(type);
  }

  schemaOf(type: string): JsonSchema {
    const schema = this.schemas.get(type);
    if (!schema) throw new Error(`no stored contract for event type ${type}`);
    return schema;
  }

  currentVersion(type: string): number {
    return this.upcasters.currentVersion(type);
  }
}
