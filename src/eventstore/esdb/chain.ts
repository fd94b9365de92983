/**
 * The hash chain of EventStoreDB streams: the same tamper evidence as the Postgres stores' `chain_hash` column,
 * kept in each event's metadata (key `chainHash`, hex) because EventStoreDB has no column to put it in.
 *
 *   chainHash = sha256(previous event's chainHash in the stream (nothing for the first) || content digest)
 *   content digest = sha256(id, stream, revision, type, schemaVersion, data as JSON, our metadata as JSON),
 *                    the fields joined by U+001F
 *
 * Unlike the Postgres stores, the adapter computes it before the append, so it cannot cover the server's
 * timestamp (`created`); the chain orders the events instead. The JSON is what JSON.stringify prints: the
 * server stores exactly those bytes, and printing the parsed bytes again gives them back (the key order of a
 * parsed object is that of the text, and a number prints as the shortest text that reads back as itself).
 */
import { createHash } from 'node:crypto';

/** Metadata key of the chain hash; reserved, like `schemaVersion`. */
export const CHAIN_METADATA_KEY = 'chainHash';
const SEPARATOR = '\u001f';

export interface ChainedContent {
  id: string;
  stream: string;
  revision: bigint;
  type: string;
  schemaVersion: number;
  data: unknown;
  /** Our metadata: without `schemaVersion` and without the chain hash itself. */
  metadata: Record<string, unknown>;
}

export function esdbContentDigest(event: ChainedContent): Buffer {
  return createHash('sha256').update([
    event.id, event.stream, event.revision.toString(), event.type, String(event.schemaVersion),
    JSON.stringify(event.data ?? null), JSON.stringify(event.metadata),
  ].join(SEPARATOR), 'utf8').digest();
}

/** The chain hash (hex) of an event whose predecessor in the stream has `previous` (null: none, or unchained). */
export function esdbChainHash(previous: string | null, event: ChainedContent): string {
  const hash = createHash('sha256');
  if (previous) hash.update(Buffer.from(previous, 'hex'));
  return hash.update(esdbContentDigest(event)).digest('hex');
}

/** A stored chain hash, if the metadata holds a well-formed one. */
export function chainHashIn(metadata: unknown): string | null {
  if (typeof metadata !== 'object' || metadata === null) return null;
  const value = (metadata as Record<string, unknown>)[CHAIN_METADATA_KEY];
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value) ? value : null;
}

export interface ChainProblem {
  kind: 'altered' | 'missing' | 'unchained';
  stream: string;
  revision: string;
  eventId: string | null;
  message: string;
}

/** The last event seen of a stream while checking the feed. */
interface StreamTip { revision: bigint; chain: string | null }

/**
 * Checks events as they come in feed order (each stream's events in revision order, streams interleaved).
 * Keeps one tip per stream seen: memory grows with the number of streams (about 150 bytes each).
 */
export class ChainChecker {
  private readonly tips = new Map<string, StreamTip>();
  events = 0;
  unchained = 0;

  constructor(private readonly report: (problem: ChainProblem) => void) {}

  get streams(): number {
    return this.tips.size;
  }

  check(event: ChainedContent, stored: string | null): void {
    this.events++;
    const tip = this.tips.get(event.stream) ?? null;
    const expected = tip ? tip.revision + 1n : 0n;
    if (event.revision !== expected) {
      this.report({ kind: 'missing', stream: event.stream, revision: expected.toString(), eventId: event.id,
        message: `stream ${event.stream}: ${event.revision - expected === 1n ? `revision ${expected} is` : `revisions ${expected} to ${event.revision - 1n} are`} missing, before event ${event.id}` });
    } else if (stored === null) {
      this.unchained++;
      if (tip?.chain) {
        this.report({ kind: 'unchained', stream: event.stream, revision: event.revision.toString(), eventId: event.id,
          message: `event ${event.id} (${event.stream} revision ${event.revision}) has no chain hash although the event before it has one` });
      }
    } else if (esdbChainHash(tip?.chain ?? null, event) !== stored) {
      this.report({ kind: 'altered', stream: event.stream, revision: event.revision.toString(), eventId: event.id,
        message: `event ${event.id} (${event.stream} revision ${event.revision}, ${event.type}) was altered: its content does not match its chain hash` });
    }
    this.tips.set(event.stream, { revision: event.revision, chain: stored });
  }
}
