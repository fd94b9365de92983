/** A small projector for runner tests: per-stream totals, plus one row per application to catch repeats. */
import { sql, type ColumnType, type Kysely } from 'kysely';
import { defineProjector, type Projector } from '../../src/projection/projector.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';

export interface TotalsOptions {
  /** Throws while applying an event for which this returns true. */
  failOn?: (event: RecordedEvent) => boolean;
}

/** Its tables are named after the projector, so that several can run side by side. */
/** The events it handles: an amount added to (or taken from) the stream's balance. */
type TotalsEvents = { Deposited: { amount: number }; Withdrawn: { amount: number } };

type TotalsTables =
  & { [totals: `${string}_totals`]: { stream: string; events: number; balance: ColumnType<string, number, number>; last_revision: string } }
  & { [applied: `${string}_applied`]: { event_id: string; stream: string } };

export function totalsProjector(name: string, version: number, options: TotalsOptions = {}): Projector {
  const totals = `${name}_totals` as const;
  const applied = `${name}_applied` as const;
  const apply = async (trx: Kysely<TotalsTables>, event: RecordedEvent<string, { amount: number }>, sign: 1 | -1) => {
    if (options.failOn?.(event)) throw new Error(`projector ${name} refused event ${event.id}`);
    const amount = event.data.amount * sign;
    await trx.insertInto(applied).values({ event_id: event.id, stream: event.stream }).execute();
    await trx.insertInto(totals)
      .values({ stream: event.stream, events: 1, balance: amount, last_revision: event.revision.toString() })
      .onConflict((oc) => oc.column('stream').doUpdateSet({
        events: sql`${sql.ref(`${totals}.events`)} + 1`,
        balance: sql`${sql.ref(`${totals}.balance`)} + ${amount}`,
        last_revision: event.revision.toString(),
      }))
      .execute();
  };
  return defineProjector<TotalsTables, TotalsEvents>({
    name,
    version,
    tables: [totals, applied],
    async setup(trx) {
      await trx.schema.createTable(totals)
        .addColumn('stream', 'text', (c) => c.primaryKey())
        .addColumn('events', 'integer', (c) => c.notNull())
        .addColumn('balance', 'bigint', (c) => c.notNull())
        .addColumn('last_revision', 'bigint', (c) => c.notNull())
        .execute();
      await trx.schema.createTable(applied)
        .addColumn('event_id', 'uuid', (c) => c.notNull())
        .addColumn('stream', 'text', (c) => c.notNull())
        .execute();
    },
    handlers: {
      Deposited: (trx, event) => apply(trx, event, 1),
      Withdrawn: (trx, event) => apply(trx, event, -1),
    },
  });
}
