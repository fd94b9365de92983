/**
 * Every event store adapter the contract suite runs against: the Postgres adapter on PGlite (always) and
 * on real Postgres (DATABASE_URL), and EventStoreDB when EVENTSTORE_CONNECTION_STRING is set.
 */
import type { EventStore } from '../../src/eventstore/port.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres/postgresEventStore.ts';
import type { UpcasterRegistry } from '../../src/eventstore/upcasting.ts';
import { databaseTargets } from './targets.ts';

export interface OpenedEventStore {
  store: EventStore;
  /** Another store over the same data, reading with these upcasters. */
  withUpcasters(upcasters: UpcasterRegistry): EventStore;
  close(): Promise<void>;
}

export interface EventStoreTarget {
  name: string;
  open(): Promise<OpenedEventStore>;
}

export function eventStoreTargets(): EventStoreTarget[] {
  const targets: EventStoreTarget[] = databaseTargets().map((target) => ({
    name: target.name,
    async open() {
      const database = await target.open();
      const extra: EventStore[] = [];
      const store = new PostgresEventStore(database);
      return {
        store,
        withUpcasters(upcasters) {
          const other = new PostgresEventStore(database, { upcasters });
          extra.push(other);
          return other;
        },
        async close() {
          await Promise.all([store, ...extra].map((s) => s.close()));
          await database.close();
        },
      };
    },
  }));
  const esdb = process.env.EVENTSTORE_CONNECTION_STRING;
  if (esdb) {
    targets.push({
      name: 'eventstoredb',
      async open() {
        const { EventStoreDbEventStore } = await import('../../src/eventstore/esdb/eventStoreDbEventStore.ts');
        const store = new EventStoreDbEventStore({ connectionString: esdb });
        const extra: EventStore[] = [];
        return {
          store,
          withUpcasters(upcasters) {
            const other = new EventStoreDbEventStore({ connectionString: esdb, upcasters });
            extra.push(other);
            return other;
          },
          async close() {
            await Promise.all([store, ...extra].map((s) => s.close()));
          },
        };
      },
    });
  }
  return targets;
}
