/**
 * Tamper evidence: every event's chain hash and the feed digests, recomputed by `verifyIntegrity`, name each
 * event an edit or a deletion broke; an untouched store passes, also after a replay into a new projector version.
 * The edits are made as a superuser would: with the immutability trigger disabled.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { recordFeedDigest, verifyIntegrity } from '../src/integrity/integrity.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { createLedgerProjector } from '../projections/ledger.ts';
import type { AccountAdjustedData } from '../src/ledger/events.ts';
import { databaseTargets } from './support/targets.ts';
import { until } from './support/until.ts';

const ping = (n: number): NewEvent => ({ type: 'Ping', data: { n, text: 'é ✓ "quoted"', nested: { b: 1, a: [1, 2] } }, metadata: { actor: 'test' } });

/** Runs `edit` as a superuser could: with the trigger that keeps events immutable switched off. */
async function tamper(database: Database, edit: string, params: unknown[]): Promise<void> {
  await database.query('ALTER TABLE events DISABLE TRIGGER events_no_update_delete');
  try {
    await database.query(edit, params);
  } finally {
    await database.query('ALTER TABLE events ENABLE TRIGGER events_no_update_delete');
  }
}

for (const target of databaseTargets()) {
  describe(`tamper evidence: ${target.name}`, function () {
    this.timeout(60_000);
    let database: Database;
    let store: PostgresEventStore;

    beforeEach(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
    });
    afterEach(async () => {
      await store?.close();
      await database?.close();
    });

    it('an untouched store passes: chains across single and batched appends, events from before the chain, digests', async () => {
      // Two events as a store before the chain recorded them: no chain hash.
      const legacy = `legacy-${randomUUID()}`;
      await database.query(`INSERT INTO events (id, stream, revision, type, data) VALUES ($1, $2, 0, 'Ping', '{"n": 0}'), ($3, $2, 1, 'Ping', '{"n": 1}')`,
        [randomUUID(), legacy, randomUUID()]);
      await store.append(legacy, [ping(2)], 1n);
      const streams = [`a-${randomUUID()}`, `b-${randomUUID()}`];
      await store.append(streams[0]!, [ping(1)], 'no_stream');
      await store.append(streams[0]!, [ping(2), ping(3), ping(4)], 0n);
      await store.append(streams[1]!, [ping(1), ping(2)], 'no_stream');

      const genesis = await recordFeedDigest(database, store, new Date());
      expect(genesis).to.include({ sequence: 1, fromPosition: null, events: 9, previousDigest: null });
      await store.append(streams[1]!, [ping(3)], 1n);
      const second = await recordFeedDigest(database, store, new Date());
      // The digest events themselves are not covered: they chain to each other.
      expect(second).to.include({ sequence: 2, events: 1, previousDigest: genesis!.digest });
      await store.append(streams[1]!, [ping(4)], 2n);

      const report = await verifyIntegrity(database);
      expect(report.problems).to.deep.equal([]);
      expect(report).to.include({ ok: true, events: 13, streams: 4, unchainedEvents: 2, digests: 2, eventsAfterLatestDigest: 1 });
      expect(report.latestDigest?.digest).to.equal(second!.digest);
      // Nothing new: no digest.
      await recordFeedDigest(database, store, new Date());
      expect(await recordFeedDigest(database, store, new Date())).to.equal(null);
    });

    it('names an edited event, a deleted one, a stream cut short and an edited event from before the chain', async () => {
      const edited = `edited-${randomUUID()}`;
      const holed = `holed-${randomUUID()}`;
      const cut = `cut-${randomUUID()}`;
      const legacy = `legacy-${randomUUID()}`;
      await database.query(`INSERT INTO events (id, stream, revision, type, data) VALUES ($1, $2, 0, 'Ping', '{"n": 0}')`, [randomUUID(), legacy]);
      await store.append(edited, [ping(1), ping(2), ping(3)], 'no_stream');
      await store.append(holed, [ping(1), ping(2), ping(3)], 'no_stream');
      await store.append(cut, [ping(1), ping(2)], 'no_stream');
      await recordFeedDigest(database, store, new Date());
      expect((await verifyIntegrity(database)).ok).to.equal(true);

      const [target1] = await store.readStream(edited, { fromRevision: 1n, limit: 1 });
      await tamper(database, `UPDATE events SET data = jsonb_set(data, '{n}', '200') WHERE id = $1`, [target1!.id]);
      const [target2] = await store.readStream(holed, { fromRevision: 1n, limit: 1 });
      await tamper(database, 'DELETE FROM events WHERE id = $1', [target2!.id]);
      await tamper(database, 'DELETE FROM events WHERE stream = $1 AND revision = 1', [cut]);
      await tamper(database, `UPDATE events SET data = '{"n": 99}' WHERE stream = $1`, [legacy]);

      const report = await verifyIntegrity(database);
      expect(report.ok).to.equal(false);
      const messages = report.problems.map((p) => p.message);
      expect(report.problems.find((p) => p.kind === 'altered')).to.include({ stream: edited, revision: '1', eventId: target1!.id });
      expect(report.problems.find((p) => p.kind === 'missing')).to.include({ stream: holed, revision: '1' });
      expect(messages.join('\n')).to.match(new RegExp(`${edited} revision 1, Ping\\) was altered`));
      expect(messages.join('\n')).to.match(new RegExp(`stream ${holed}: revision 1 is missing`));
      // The cut stream's last event and the legacy event are caught by the digest that covered them.
      expect(report.problems.filter((p) => p.kind === 'digest')).to.have.length(1);
      expect(messages.join('\n')).to.match(/digest 1 .* covered 9 events; 7 are there now/);
      expect(report.problems).to.have.length(3);
    });

    it('the chain holds through a replay of the ledger into a new version while events keep coming', async () => {
      const fast = { idlePollMs: 20, leaseTtlMs: 2_000, initialBackoffMs: 10, maxBackoffMs: 50 };
      const account = `acct-${randomUUID()}`;
      const deposit = (amount: string): NewEvent => {
        const data: AccountAdjustedData = { accountId: account, clientId: 'client-1', currency: 'USD', amount, reason: 'replay',
          adjustmentId: randomUUID(), adjustedAt: new Date().toISOString() };
        return { type: 'AccountAdjusted', data, metadata: { clientId: 'client-1', actor: 'operator' } };
      };
      const first = new ProjectionDaemon(database, store, fast).addProjector(createLedgerProjector(1));
      first.start();
      const one = await store.append(`account-${account}`, [deposit('10.00')], 'any');
      expect(await first.waitFor(one.position, 10_000)).to.equal(true);
      await first.stop();
      await recordFeedDigest(database, store, new Date());

      const bumped = new ProjectionDaemon(database, store, fast).addProjector(createLedgerProjector(2));
      bumped.start();
      try {
        await until(async () => (await bumped.status()).some((s) => s.version === 2 && s.status === 'active'), { what: 'v2 active' });
        const two = await store.append(`account-${account}`, [deposit('5.00')], 'any');
        expect(await bumped.waitFor(two.position, 10_000)).to.equal(true);
      } finally {
        await bumped.stop();
      }
      await recordFeedDigest(database, store, new Date());
      const report = await verifyIntegrity(database);
      expect(report.problems).to.deep.equal([]);
      expect(report.digests).to.equal(2);
    });
  });
}
