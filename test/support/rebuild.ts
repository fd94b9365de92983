/**
 * Rebuild equals live: every read model, rebuilt from the log by a version bump of its projector, holds rows
 * identical to the ones the service built live. The services writing to `database` must be closed first (the
 * caller passes a function that closes them), so the log no longer moves.
 */
import { expect } from 'chai';
import type { Database } from '../../src/db/database.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres/postgresEventStore.ts';
import { comparePositions } from '../../src/eventstore/position.ts';
import { ProjectionDaemon } from '../../src/projection/daemon.ts';
import type { Projector } from '../../src/projection/projector.ts';
import { ProjectionStateStore } from '../../src/projection/projectionState.ts';
import { allProjectors, registered } from '../../src/contexts.ts';
import { createLedgerProjector, LEDGER_PROJECTOR_NAME } from '../../projections/ledger.ts';
import { until } from './until.ts';

/** The next version of a projector: same tables and handlers, built from zero into a schema of its own. */
function bumped(projector: Projector): Projector {
  return projector.name === LEDGER_PROJECTOR_NAME ? createLedgerProjector(projector.version + 1, registered.postings) : { ...projector, version: projector.version + 1 };
}

/** Dumps every read model, closes the writers (`stopWriters`), rebuilds them all from the log and compares. */
export async function expectRebuildEqualsLive(database: Database, stopWriters: () => Promise<void>): Promise<void> {
  const tables = allProjectors().flatMap((p) => p.tables);
  const dump = async () => Object.fromEntries(await Promise.all(tables.map(async (table) =>
    [table, (await database.query(`SELECT to_jsonb(t) AS row FROM ${table} t`)).rows.map((r) => JSON.stringify(r.row)).sort()] as const)));
  const live = await dump();
  const states = new ProjectionStateStore(database);
  const before = new Map((await states.list()).map((s) => [`${s.name}/${s.version}`, s]));
  await stopWriters();
  const store = new PostgresEventStore(database);
  const rebuild = new ProjectionDaemon(database, store, { owner: 'rebuild', idlePollMs: 20, initialBackoffMs: 10, maxBackoffMs: 200 });
  const projectors = allProjectors().map(bumped);
  for (const projector of projectors) rebuild.addProjector(projector);
  rebuild.start();
  try {
    await until(async () => {
      const rows = await states.list();
      return projectors.every((p) => {
        const fresh = rows.find((r) => r.name === p.name && r.version === p.version);
        const old = before.get(`${p.name}/${p.version - 1}`)!;
        return fresh?.status === 'active' && fresh.checkpoint !== null && comparePositions(fresh.checkpoint, old.checkpoint!) >= 0;
      });
    }, { what: 'every bumped projector active and caught up', timeoutMs: 120_000 });
    const rebuilt = await dump();
    for (const table of tables) expect(rebuilt[table], `${table} rebuilt`).to.deep.equal(live[table]);
  } finally {
    await rebuild.stop();
    await store.close();
  }
}
