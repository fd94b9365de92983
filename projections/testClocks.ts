/**
 * Read model of test clocks: one row per clock, kept after it is deleted (`deleted`), because the objects bound to
 * a deleted clock are judged, from then on, at the time it had. Reads of bound objects take their clock's time
 * from here (`judgedAt`), never the wall clock, so what a read answers derives from events only.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { defineProjector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { Instant } from './columns.ts';
import { newestFirstPage, scopedTo, type PageWindow } from '../src/db/owned.ts';

export interface TestClocksTable {
  clock_id: string;
  client_id: string;
  name: string | null;
  frozen_time: Instant;
  status: 'ready' | 'advancing';
  /** Objects created under the clock. */
  objects: number;
  deleted: boolean;
  created_at: Instant;
  updated_at: Instant;
}

export type TestClockTables = { test_clocks: TestClocksTable };
export type TestClockRow = Selectable<TestClocksTable>;

export const TEST_CLOCKS_PROJECTOR = 'test_clocks';

export const testClocksProjector = defineProjector<TestClockTables, StoredEventData>({
  name: TEST_CLOCKS_PROJECTOR,
  version: 1,
  tables: ['test_clocks'],
  async setup(trx) {
    await trx.schema.createTable('test_clocks')
      .addColumn('clock_id', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('frozen_time', 'timestamptz', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('objects', 'integer', (c) => c.notNull())
      .addColumn('deleted', 'boolean', (c) => c.notNull())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
      .execute();
    await sql`CREATE INDEX test_clocks_client_created ON test_clocks (client_id, created_at DESC, clock_id DESC)`.execute(trx);
  },
  handlers: {
    async TestClockCreated(trx, event) {
      const d = event.data;
      await trx.insertInto('test_clocks').values({
        clock_id: d.clockId, client_id: d.clientId, name: d.name, frozen_time: d.frozenTime, status: 'ready', objects: 0, deleted: false,
        created_at: d.createdAt, updated_at: d.createdAt,
      }).execute();
    },
    async TestClockObjectBound(trx, event) {
      const d = event.data;
      await trx.updateTable('test_clocks').set((eb) => ({ objects: eb('objects', '+', 1) })).where('clock_id', '=', d.clockId).execute();
    },
    async TestClockAdvanced(trx, event) {
      const d = event.data;
      await trx.updateTable('test_clocks').set({ frozen_time: d.to, status: 'advancing', updated_at: d.at }).where('clock_id', '=', d.clockId).execute();
    },
    async TestClockReady(trx, event) {
      const d = event.data;
      await trx.updateTable('test_clocks').set({ status: 'ready', updated_at: d.at }).where('clock_id', '=', d.clockId).execute();
    },
    async TestClockDeleted(trx, event) {
      const d = event.data;
      await trx.updateTable('test_clocks').set({ deleted: true, updated_at: d.at }).where('clock_id', '=', d.clockId).execute();
    },
  },
});

/**
 * The instant a row of a bound object is judged at, in SQL: its clock's time when its `test_clock_id` names one,
 * else `now` (the wall clock's, for objects bound to no clock). `column` is the row's clock column, qualified
 * when the query joins.
 */
export function judgedAt(now: Date, column = 'test_clock_id'): RawBuilder<Date> {
  return sql<Date>`coalesce((SELECT c.frozen_time FROM test_clocks c WHERE c.clock_id = ${sql.ref(column)}), ${now})`;
}

/** Each clock's time, for the rows of bound objects read one by one (clocks not found are left out). */
export async function clockTimes<DB extends TestClockTables>(db: Kysely<DB>, clockIds: Iterable<string | null>): Promise<Map<string, Date>> {
  const ids = [...new Set([...clockIds].filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map();
  const rows = await (db as unknown as Kysely<TestClockTables>).selectFrom('test_clocks').select(['clock_id', 'frozen_time']).where('clock_id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.clock_id, row.frozen_time]));
}

/** A client's clocks that are not deleted. */
function liveClocks<DB extends TestClockTables>(db: Kysely<DB>, clientId: string) {
  return scopedTo(db as unknown as Kysely<TestClockTables>, 'test_clocks', clientId).where('deleted', '=', false);
}

/** A client's clock, unless it is deleted. */
export async function liveClock<DB extends TestClockTables>(db: Kysely<DB>, clientId: string, clockId: string): Promise<TestClockRow | undefined> {
  return liveClocks(db, clientId).where('clock_id', '=', clockId).executeTakeFirst();
}

/** One page of a client's clocks that are not deleted, newest first (ties broken by id), and how many there are. */
export async function liveClocksPage<DB extends TestClockTables>(
  db: Kysely<DB>, clientId: string, page: PageWindow,
): Promise<{ rows: TestClockRow[]; total: number }> {
  return newestFirstPage(liveClocks(db, clientId), 'clock_id', page);
}
