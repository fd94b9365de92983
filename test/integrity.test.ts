/**
 * Tamper evidence: every event's chain hash and the feed digests, recomputed by `verifyIntegrity`, name each
 * event an edit or a deletion broke; an untouched store passes, also after a rebuild into a new projector version
 * and a replay of it.
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
import { verifyReadModels } from '../src/projection/verify.ts';
import { replayProjector } from '../src/projection/replay.ts';
import { allProjectors, registered } from '../src/contexts.ts';
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

    it('chains every member of a group commit from its own stream, and names an edited event among them', async () => {
      const continued = `continued-${randomUUID()}`;
      await store.append(continued, [ping(0), ping(1)], 'no_stream');
      const fresh = Array.from({ length: 3 }, () => `grouped-${randomUUID()}`);
      // Made in the same turn of the event loop (four of them): one statement, one transaction.
      const results = await Promise.all([
        store.append(continued, [ping(2), ping(3)], 1n),
        ...fresh.map((stream, i) => store.append(stream, Array.from({ length: 1 + (i % 3) }, (_, n) => ping(n)), 'no_stream')),
      ]);
      expect(new Set(results.map((r) => r.position.commit)).size).to.equal(1);
      await recordFeedDigest(database, store, new Date());
      const intact = await verifyIntegrity(database);
      expect(intact.problems).to.deep.equal([]);
      expect(intact.ok).to.equal(true);

      const [target] = await store.readStream(fresh[2]!, { fromRevision: 1n, limit: 1 });
      await tamper(database, `UPDATE events SET data = jsonb_set(data, '{n}', '42') WHERE id = $1`, [target!.id]);
      const edited = await verifyIntegrity(database);
      expect(edited.problems.filter((p) => p.kind === 'altered').map((p) => 'stream' in p && [p.stream, p.revision]))
        .to.deep.equal([[fresh[2], '1']]);
    });

    it('checks a long stream in revision order (revision 10 after 9, not after 1)', async () => {
      const long = `long-${randomUUID()}`;
      await store.append(long, Array.from({ length: 12 }, (_, i) => ping(i)), 'no_stream');
      for (let i = 12; i < 25; i++) await store.append(long, [ping(i)], 'any');
      const intact = await verifyIntegrity(database);
      expect(intact.problems.filter((p) => 'stream' in p && p.stream === long)).to.deep.equal([]);

      await tamper(database, `UPDATE events SET data = '{"n": 1100}' WHERE stream = $1 AND revision = 11`, [long]);
      const edited = await verifyIntegrity(database);
      expect(edited.problems.filter((p) => 'stream' in p && p.stream === long).map((p) => [p.kind, 'revision' in p ? p.revision : null])).to.deep.equal([['altered', '11']]);
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

    it('the chain holds through a rebuild of the ledger into a new version, then a replay of it, while events keep coming', async () => {
      const fast = { idlePollMs: 20, leaseTtlMs: 2_000, initialBackoffMs: 10, maxBackoffMs: 50 };
      const account = `acct-${randomUUID()}`;
      const deposit = (amount: string): NewEvent => {
        const data: AccountAdjustedData = { accountId: account, clientId: 'client-1', currency: 'USD', amount, reason: 'replay',
          adjustmentId: randomUUID(), adjustedAt: new Date().toISOString() };
        return { type: 'AccountAdjusted', data, metadata: { clientId: 'client-1', actor: 'operator' } };
      };
      const first = new ProjectionDaemon(database, store, fast).addProjector(createLedgerProjector(1, registered.postings));
      first.start();
      const one = await store.append(`account-${account}`, [deposit('10.00')], 'any');
      expect(await first.waitFor(one.position, 10_000)).to.equal(true);
      await first.stop();
      await recordFeedDigest(database, store, new Date());

      const ledger = createLedgerProjector(2, registered.postings);
      const bumped = new ProjectionDaemon(database, store, fast).addProjector(ledger);
      bumped.start();
      let writing = true;
      const writes = (async () => {
        while (writing) {
          await store.append(`account-${account}`, [deposit('0.01')], 'any');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      try {
        await until(async () => (await bumped.status()).some((s) => s.version === 2 && s.status === 'active'), { what: 'v2 active' });
        const two = await store.append(`account-${account}`, [deposit('5.00')], 'any');
        expect(await bumped.waitFor(two.position, 10_000)).to.equal(true);
        const replayed = await replayProjector(database, store, ledger);
        expect(replayed).to.include({ projector: 'ledger', version: 2, replays: 1, schema: `${database.schema}__ledger_v2_r1`,
          previousSchema: `${database.schema}__ledger_v2` });
        expect(replayed.eventsApplied).to.be.greaterThan(1);
      } finally {
        writing = false;
        await writes;
      }
      try {
        // The live runner writes to the replayed tables from then on: a deposit after the replay shows.
        const three = await store.append(`account-${account}`, [deposit('7.00')], 'any');
        expect(await bumped.waitFor(three.position, 10_000)).to.equal(true);
        const [check] = await verifyReadModels(database, store, [ledger]);
        expect(check, JSON.stringify(check)).to.include({ status: 'equal' });
        const { rows } = await database.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, [`${database.schema}\\_\\_ledger%`]);
        expect(rows.map((r) => r.nspname)).to.deep.equal([`${database.schema}__ledger_v2_r1`]);
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

for (const target of databaseTargets()) {
  describe(`verify read-models: ${target.name}`, function () {
    this.timeout(120_000);

    it('finds every rebuilt read model equal to the live one while writes go on, and names a row edited behind its back', async () => {
      const database = await target.open();
      const store = new PostgresEventStore(database);
      const projectors = allProjectors();
      const daemon = new ProjectionDaemon(database, store, { idlePollMs: 20 });
      for (const projector of projectors) daemon.addProjector(projector);
      daemon.start();
      const account = `acct-${randomUUID()}`;
      const deposit = (amount: string): NewEvent => {
        const data: AccountAdjustedData = { accountId: account, clientId: 'client-1', currency: 'USD', amount, reason: 'verify',
          adjustmentId: randomUUID(), adjustedAt: new Date().toISOString() };
        return { type: 'AccountAdjusted', data, metadata: { clientId: 'client-1', actor: 'operator' } };
      };
      let writing = true;
      const writes = (async () => {
        while (writing) {
          await store.append(`account-${account}`, [deposit('1.00')], 'any');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      try {
        const last = await store.append(`account-${account}`, [deposit('10.00')], 'any');
        expect(await daemon.waitFor(last.position, 10_000)).to.equal(true);
        const live = await verifyReadModels(database, store, projectors);
        for (const check of live) expect(['equal', 'skipped'], JSON.stringify(check)).to.include(check.status);
        expect(live.find((c) => c.projector === 'ledger')!.status).to.equal('equal');
      } finally {
        writing = false;
        await writes;
      }

      const settled = await store.append(`account-${account}`, [deposit('0.50')], 'any');
      expect(await daemon.waitFor(settled.position, 10_000)).to.equal(true);
      await database.query(`UPDATE ledger_balances SET balance = balance + 1 WHERE account_id = $1`, [account]).catch(async () => {
        // The view is not updatable through its generated column: edit the version's own table.
        const { rows } = await database.query<{ schema_name: string }>(`SELECT schema_name FROM projection_state WHERE name = 'ledger' AND status = 'active'`);
        await database.query(`UPDATE "${rows[0]!.schema_name}".ledger_balances SET balance = balance + 1 WHERE account_id = $1`, [account]);
      });
      const edited = await verifyReadModels(database, store, projectors.filter((p) => p.name === 'ledger'));
      expect(edited[0]!.status).to.equal('different');
      const difference = edited[0]!.differences.find((d) => d.table === 'ledger_balances')!;
      expect(JSON.stringify(difference.onlyInLive)).to.contain(account);
      expect(JSON.stringify(difference.onlyInRebuild)).to.contain(account);
      await daemon.stop();
      await store.close();
      await database.close();
    });
  });
}
