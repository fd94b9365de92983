/**
 * The storage modes: where events live and where read models live.
 *   embedded      PGlite in DATA_DIR for both (the default; nothing to install)
 *   postgres      DATABASE_URL for both, in DATABASE_SCHEMA
 *   eventstoredb  EventStoreDB for events, Postgres (DATABASE_URL) or else embedded PGlite for read models
 */
import { join } from 'node:path';
import type { Config } from './config.ts';
import { acquireDataDirLock, type DataDirLock } from './db/dataDirLock.ts';
import { openDatabase, type Database } from './db/database.ts';
import { pgliteTemplateDir } from './db/pgliteTemplate.ts';
import type { EventStore } from './eventstore/port.ts';
import { comparePositions, type Position } from './eventstore/position.ts';
import { PostgresEventStore } from './eventstore/postgres/postgresEventStore.ts';
import type { UpcasterRegistry } from './eventstore/upcasting.ts';
import { ProjectionStateStore } from './projection/projectionState.ts';

export interface Storage {
  readonly mode: Config['storageMode'];
  readonly database: Database;
  readonly store: EventStore;
  /** Where the data is, for the start banner (never a password). */
  readonly describe: string;
  /** Embedded mode: tells local tools which port the service listens on. */
  announcePort?(port: number): void;
  close(): Promise<void>;
}

/** `upcasters`: every stored event type's versions (`storedEvents.upcasters`, src/contexts.ts). */
export async function openStorage(config: Config, upcasters: UpcasterRegistry): Promise<Storage> {
  let lock: DataDirLock | null = null;
  let database: Database;
  if (config.databaseUrl) {
    database = await openDatabase(
      { kind: 'postgres', connectionString: config.databaseUrl, poolSize: config.databasePoolSize },
      { schema: config.databaseSchema });
  } else {
    lock = acquireDataDirLock(config.dataDir);
    try {
      database = await openDatabase(
        { kind: 'pglite', dataDir: join(config.dataDir, 'pglite'), template: pgliteTemplateDir() },
        { schema: config.databaseSchema });
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  let store: EventStore;
  if (config.eventStoreConnectionString) {
    // Loaded only in this mode: the gRPC client is heavy and the other modes never need it.
    const { EventStoreDbEventStore } = await import('./eventstore/esdb/eventStoreDbEventStore.ts');
    const states = new ProjectionStateStore(database);
    store = new EventStoreDbEventStore({
      connectionString: config.eventStoreConnectionString,
      upcasters,
      checkpointSource: () => lowestCheckpoint(states),
    });
  } else {
    store = new PostgresEventStore(database, { upcasters });
  }

  const where = config.databaseUrl ? redact(config.databaseUrl) : config.dataDir;
  return {
    mode: config.storageMode,
    database,
    store,
    describe: config.eventStoreConnectionString
      ? `events in ${redact(config.eventStoreConnectionString)}, read models in ${where}`
      : `events and read models in ${where}`,
    ...(lock ? { announcePort: (port: number) => lock!.announcePort(port) } : {}),
    async close() {
      await store.close();
      await database.close();
      lock?.release();
    },
  };
}

/** Where a dropped EventStoreDB subscription resumes: the least advanced live projection's checkpoint. */
async function lowestCheckpoint(states: ProjectionStateStore): Promise<Position | null> {
  const live = (await states.list()).filter((s) => s.status !== 'retired');
  if (live.length === 0 || live.some((s) => s.checkpoint === null)) return null;
  return live.map((s) => s.checkpoint!).reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):([^@/]+)@/, '//$1:***@');
}
