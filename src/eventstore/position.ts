/**
 * A global position: a pair of unsigned 64-bit integers, ordered by `commit` then `prepare`.
 * On Postgres `commit` is the writing transaction's id (xid8) and `prepare` the global sequence;
 * on EventStoreDB they are its commit and prepare positions. Consumers treat it as opaque.
 */
export interface Position {
  readonly commit: bigint;
  readonly prepare: bigint;
}

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

export function positionReached(checkpoint: Position | null, target: Position): boolean {
  return checkpoint !== null && comparePositions(checkpoint, target) >= 0;
}

/** Text form for cursors and logs: `<commit>-<prepare>`. */
export function formatPosition(p: Position): string {
  return `${p.commit}-${p.prepare}`;
}

/** Drivers hand back 64-bit integers as bigint, number or string; normalise at the boundary. */
export function toBigInt(value: bigint | number | string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`position ${value} lost precision`);
    return BigInt(value);
  }
  return BigInt(value);
}
