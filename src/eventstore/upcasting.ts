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
