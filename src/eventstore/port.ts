/**
 * The event store port. Every adapter (Postgres/PGlite, EventStoreDB) implements it and passes the same
 * contract suite (test/eventstore.contract.test.ts).
 */
import type { Position } from './position.ts';

export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;

export interface EventMetadata {
  clientId?: string;
  correlationId?: string;
  causationId?: string;
  actor?: string;
  [key: string]: unknown;
}

/** An event as a command produces it, before the store records it. */
export interface NewEvent<Type extends string = string, Data = unknown> {
  /** Deterministic ids make re-appends harmless: the same id appended again to the same stream is a no-op. */
  id?: string;
  type: Type;
  data: Data;
  metadata?: EventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  stream: string;
  revision: bigint;
  position: Position;
  type: Type;
  /** The schema version the event has after upcasting (always the current one for its type). */
  schemaVersion: number;
  data: Data;
  metadata: EventMetadata;
  recordedAt: Date;
}

export interface AppendResult {
  /** Revision of the last event appended (the stream's revision after the append). */
  nextRevision: bigint;
  /** Global position of the last event appended. */
  position: Position;
  /**
   * True when these events (by their ids) were on the stream already and nothing was written: the answer is the
   * first append's. Absent when the adapter cannot tell (EventStoreDB's own idempotent answer at an exact revision).
   */
  repeated?: boolean;
}

export interface ReadStreamOptions {
  fromRevision?: bigint;
  direction?: 'forwards' | 'backwards';
  /** Bounded: at most MAX_READ_LIMIT. */
  limit?: number;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Omitted = from the beginning. */
  after?: Position | null;
  /** Bounded: at most MAX_READ_LIMIT. */
  limit: number;
}

export const MAX_READ_LIMIT = 10_000;
/** How far back from a stream's end an adapter without an index of event ids looks for them (findEvents). */
export const FIND_EVENTS_WINDOW = 1_000;

export type AppendedListener = (eventTypes?: readonly string[], position?: Position) => void;

export interface EventStore {
  readonly kind: 'postgres' | 'pglite' | 'eventstoredb';
  append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /** Events of one stream in revision order; an absent stream reads as an empty list. */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * The events of `stream` that have one of `ids`, in revision order (those not on it are left out). EventStoreDB
   * looks among the stream's last FIND_EVENTS_WINDOW events only.
   */
  findEvents(stream: string, ids: readonly string[]): Promise<RecordedEvent[]>;
  /** The global feed: one total order across all streams, never skipping an event that commits late. */
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * The feed as `readAll` answers it, and whether events already recorded are held back from it for a moment (on
   * Postgres: committed after a transaction that is still running began), and when they are, the server process
   * running the transaction they wait for (`holder`, null when unknown or already ended). Stores without such a
   * horizon do not implement it.
   */
  readTail?(options: ReadAllOptions): Promise<{ events: RecordedEvent[]; held: boolean; holder?: number | null }>;
  /** Position of the newest event a consumer may read now, or null on an empty store. */
  headPosition(): Promise<Position | null>;
  /**
   * Calls the listener when new events may be readable: with their types and the position the append reached
   * when this process appended them, without when anything may have been (another process, a subscription).
   * Returns an unsubscribe.
   */
  onAppended(listener: AppendedListener): () => void;
  close(): Promise<void>;
}
