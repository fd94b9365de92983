import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { deterministicId } from '../src/eventstore/deterministicId.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import type { Projector, Reactor } from '../src/projection/projector.ts';
import { ProjectionStateStore } from '../src/projection/projectionState.ts';
import { projectorSchemaName } from '../src/projection/projectorSchema.ts';
import { replayProjector, ReplayRefusedError } from '../src/projection/replay.ts';
import { positionReached, type Position } from '../src/eventstore/position.ts';
import { databaseTargets } from './support/targets.ts';
import { totalsProjector } from './support/totalsProjector.ts';
import { until } from './support/until.ts';

const fast = { idlePollMs: 20, initialBackoffMs: 10, maxBackoffMs: 50, leaseTtlMs: 2_000 };
let names = 0;
const uniqueName = (prefix: string) => `${prefix}_${process.pid % 1000}_${++names}`;

async function expectRefused(replay: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await replay.then(() => null, (e: unknown) => e);
  expect(error).to.be.instanceOf(ReplayRefusedError);
  expect((error as Error).message).to.match(message);
}

const deposit = (amount: number, id?: string): NewEvent => ({ type: 'Deposited', data: { amount }, ...(id ? { id } : {}) });

for (const target of databaseTargets()) {
  describe(`projection runner: ${target.name}`, () => {
    let database: Database;
    let store: PostgresEventStore;
    const daemons: ProjectionDaemon[] = [];
    const daemon = (owner?: string) => {
      const d = new ProjectionDaemon(database, store, { ...fast, ...(owner ? { owner } : {}) });
      daemons.push(d);
      return d;
    };
    const rows = async (table: string, streams: string[]) =>
      (await database.query(`SELECT * FROM ${table} WHERE stream = ANY($1) ORDER BY stream`, [streams])).rows;
    const applications = async (table: string, streams: string[]) =>
      (await database.query<{ event_id: string; n: number }>(
        `SELECT event_id, count(*)::int AS n FROM ${table} WHERE stream = ANY($1) GROUP BY event_id`, [streams])).rows;

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
    });
    afterEach(async () => {
      await Promise.all(daemons.splice(0).map((d) => d.stop()));
    });
    after(async () => {
      await store?.close();
      await database?.close();
    });

    it('applies events into read-model views and waits for read-your-writes', async () => {
      const name = uniqueName('ryw');
      const d = daemon().addProjector(totalsProjector(name, 1));
      d.start();
      const stream = `acct-${randomUUID()}`;
      const { position } = await store.append(stream, [deposit(5), deposit(7), { type: 'Withdrawn', data: { amount: 2 } }], 'no_stream');
      expect(await d.waitFor(position, 5_000)).to.equal(true);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events: 3, balance: '10', last_revision: '2' }]);
    });

    it('a write waits only for the projectors that handle one of its event types', async () => {
      const totals = uniqueName('typed');
      // Handles only `Noted` and refuses every batch of them: stuck from the first one on.
      const stuck: Projector = {
        name: uniqueName('noted'), version: 1, handles: ['Noted'], tables: [], setup: async () => undefined,
        apply: async () => { throw new Error('refuses every note'); },
      };
      const d = daemon().addProjector(totalsProjector(totals, 1)).addProjector(stuck);
      d.start();
      await store.append(`note-${randomUUID()}`, [{ type: 'Noted', data: {} }], 'no_stream');
      const stream = `acct-${randomUUID()}`;
      const { position } = await store.append(stream, [deposit(4)], 'no_stream');
      expect(await d.waitFor(position, 5_000, ['Deposited'])).to.equal(true);
      expect(await rows(`${totals}_totals`, [stream])).to.deep.equal([{ stream, events: 1, balance: '4', last_revision: '0' }]);
      expect(await d.waitFor(position, 300), 'without types every projector is waited for').to.equal(false);
    });

    it('passes over events it ignores at once, and stores that checkpoint by the time it stops', async () => {
      const name = uniqueName('ignores');
      const d = daemon().addProjector(totalsProjector(name, 1));
      d.start();
      const { position } = await store.append(`note-${randomUUID()}`, [{ type: 'Noted', data: {} }], 'no_stream');
      expect(await d.waitFor(position, 5_000)).to.equal(true);
      const shown = (await d.status()).find((s) => s.name === name)!;
      expect(positionReached(shown.checkpoint, position), 'status shows what the runner reached').to.equal(true);
      await d.stop();
      const stored = await new ProjectionStateStore(database).get(name, 1);
      expect(positionReached(stored!.checkpoint, position)).to.equal(true);
      expect(stored!.leaseOwner).to.equal(null);
    });

    it('waitFor gives up after its bound when a projector cannot pass the position', async () => {
      const name = uniqueName('stuck');
      const d = daemon().addProjector(totalsProjector(name, 1, { failOn: () => true }));
      d.start();
      const { position } = await store.append(`acct-${randomUUID()}`, [deposit(1)], 'no_stream');
      const started = Date.now();
      expect(await d.waitFor(position, 300)).to.equal(false);
      expect(Date.now() - started).to.be.within(250, 3_000);
    });

    it('a projector that throws mid-batch leaves neither rows nor checkpoint; after restart each event applies once', async () => {
      const name = uniqueName('crash');
      const streams = [`acct-${randomUUID()}`, `acct-${randomUUID()}`];
      const poisonId = randomUUID();
      await store.append(streams[0]!, [deposit(1), deposit(2), deposit(3)], 'no_stream');
      await store.append(streams[1]!, [deposit(10), deposit(20, poisonId), deposit(30)], 'no_stream');
      const last = await store.append(streams[0]!, [deposit(4)], 2n);

      let failing = true;
      const first = new ProjectionDaemon(database, store, { ...fast, batchSize: 10_000 })
        .addProjector(totalsProjector(name, 1, { failOn: (e) => failing && e.id === poisonId }));
      daemons.push(first);
      first.start();
      const runner = first.projectionRunners[0]!;
      await until(() => runner.state === 'failing');
      await until(async () => (await first.status()).some((s) => s.name === name && s.lastError !== null));
      const [state] = (await first.status()).filter((s) => s.name === name);
      expect(state!.checkpoint).to.equal(null);
      expect(await rows(`${name}_totals`, streams)).to.deep.equal([]);
      expect(await applications(`${name}_applied`, streams)).to.deep.equal([]);
      await first.stop();

      failing = false;
      const second = daemon().addProjector(totalsProjector(name, 1));
      second.start();
      expect(await second.waitFor(last.position, 5_000)).to.equal(true);
      const applied = await applications(`${name}_applied`, streams);
      expect(applied).to.have.length(7);
      for (const row of applied) expect(row.n).to.equal(1);
      expect(await rows(`${name}_totals`, streams)).to.deep.equal([
        { stream: streams[0], events: 4, balance: '10', last_revision: '3' },
        { stream: streams[1], events: 3, balance: '60', last_revision: '2' },
      ].sort((a, b) => (a.stream! < b.stream! ? -1 : 1)));
    });

    it('one instance holds the lease; another takes over when it stops, and nothing is applied twice', async () => {
      const name = uniqueName('lease');
      const stream = `acct-${randomUUID()}`;
      const a = daemon('owner-a').addProjector(totalsProjector(name, 1));
      const b = daemon('owner-b').addProjector(totalsProjector(name, 1));
      a.start();
      await until(() => a.projectionRunners[0]!.holdsLease);
      b.start();
      const first = await store.append(stream, [deposit(1), deposit(2)], 'no_stream');
      expect(await a.waitFor(first.position, 5_000)).to.equal(true);
      expect(b.projectionRunners[0]!.holdsLease).to.equal(false);
      await until(() => b.projectionRunners[0]!.state === 'standby');

      await a.stop(); // releases the lease
      const third = await store.append(stream, [deposit(3)], 1n);
      await until(() => b.projectionRunners[0]!.holdsLease);
      expect(await b.waitFor(third.position, 5_000)).to.equal(true);
      const applied = await applications(`${name}_applied`, [stream]);
      expect(applied.map((r) => r.n)).to.deep.equal([1, 1, 1]);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events: 3, balance: '6', last_revision: '2' }]);
    });

    it('a version bump rebuilds from zero beside the serving version, then swaps it in', async () => {
      const name = uniqueName('bump');
      const stream = `acct-${randomUUID()}`;
      const appended = await store.append(stream, [deposit(2), deposit(3)], 'no_stream');
      const v1 = daemon().addProjector(totalsProjector(name, 1));
      v1.start();
      expect(await v1.waitFor(appended.position)).to.equal(true);
      await v1.stop();
      const before = await rows(`${name}_totals`, [stream]);

      const v2 = daemon().addProjector(totalsProjector(name, 2));
      v2.start();
      await until(async () => (await v2.status()).some((s) => s.name === name && s.version === 2 && s.status === 'active'));
      const states = (await v2.status()).filter((s) => s.name === name);
      expect(states.map((s) => [s.version, s.status])).to.deep.equal([[1, 'retired'], [2, 'active']]);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal(before);
      const schemas = await database.query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1`, [`${database.schema}\\_\\_${name}\\_v%`]);
      expect(schemas.rows.map((r) => r.nspname)).to.deep.equal([`${database.schema}__${name}_v2`]);
    });

    it('a replay rebuilds the active version beside it and swaps it in under the running runner: each event applied once', async () => {
      const name = uniqueName('replay');
      const stream = `acct-${randomUUID()}`;
      const first = await store.append(stream, [deposit(2), deposit(3)], 'no_stream');
      const v1 = daemon().addProjector(totalsProjector(name, 1));
      v1.start();
      expect(await v1.waitFor(first.position)).to.equal(true);
      let revision = 1n;
      let writing = true;
      const writes = (async () => {
        while (writing) {
          await store.append(stream, [deposit(1)], revision);
          revision++;
        }
      })();
      let replayed;
      try {
        replayed = await replayProjector(database, store, totalsProjector(name, 1));
      } finally {
        writing = false;
        await writes;
      }
      expect(replayed).to.include({ projector: name, version: 1, replays: 1, schema: `${database.schema}__${name}_v1_r1`,
        previousSchema: `${database.schema}__${name}_v1` });
      const last = await store.append(stream, [deposit(10)], revision);
      expect(await v1.waitFor(last.position)).to.equal(true);
      const events = Number(revision) + 2;
      const applied = await applications(`${name}_applied`, [stream]);
      expect(applied).to.have.length(events);
      expect(applied.every((r) => r.n === 1), 'no event applied twice').to.equal(true);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events, balance: String(events + 12), last_revision: String(events - 1) }]);
      const schemas = async () => (await database.query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY 1`, [`${database.schema}\\_\\_${name}\\_v%`])).rows.map((r) => r.nspname);
      expect(await schemas()).to.deep.equal([`${database.schema}__${name}_v1_r1`]);

      // A version bump later replaces the replayed tables like any others.
      await v1.stop();
      const v2 = daemon().addProjector(totalsProjector(name, 2));
      v2.start();
      await until(async () => (await v2.status()).some((s) => s.name === name && s.version === 2 && s.status === 'active'));
      expect(await schemas()).to.deep.equal([`${database.schema}__${name}_v2`]);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events, balance: String(events + 12), last_revision: String(events - 1) }]);
    });

    it('a replay is refused, changing nothing, for a projector not active yet, another version than the active one, or one building beside it', async () => {
      const name = uniqueName('refused');
      await expectRefused(replayProjector(database, store, totalsProjector(name, 1)), /has no active version yet/);
      const stream = `acct-${randomUUID()}`;
      const appended = await store.append(stream, [deposit(2)], 'no_stream');
      const v1 = daemon().addProjector(totalsProjector(name, 1));
      v1.start();
      expect(await v1.waitFor(appended.position)).to.equal(true);
      await expectRefused(replayProjector(database, store, totalsProjector(name, 2)), /active version is v1 and this code's is v2/);
      const states = new ProjectionStateStore(database);
      await states.register(name, 2, 'projector', projectorSchemaName(database.schema, { name, version: 2 }));
      await expectRefused(replayProjector(database, store, totalsProjector(name, 1)), /v2 is building beside the active v1/);
      const [row] = (await states.list()).filter((s) => s.name === name && s.version === 1);
      expect(row!.schemaName).to.equal(`${database.schema}__${name}_v1`);
    });

    it('read-your-writes waits for the version readers see, not for a version building beside it', async () => {
      const name = uniqueName('ryw_build');
      const stream = `acct-${randomUUID()}`;
      const first = await store.append(stream, [deposit(1)], 'no_stream');
      const v1 = daemon().addProjector(totalsProjector(name, 1));
      v1.start();
      expect(await v1.waitFor(first.position)).to.equal(true);
      await v1.stop(); // the serving version's process is gone (or lagging): readers still see v1's tables

      // One append, so that the feed shows both events at once: v2 cannot catch up between them and swap in. Events
      // v2 ignores stand between them, more than one batch of a runner behind the head takes (five times its batch
      // size), so that `written` and the poisoned event are never in one batch: a failing batch applies nothing.
      const poisonId = randomUUID();
      const between = Array.from({ length: 10 }, (): NewEvent => ({ type: 'Noted', data: {} }));
      await store.append(stream, [deposit(5), ...between, deposit(7, poisonId)], 0n);
      const written = (await store.readStream(stream, { fromRevision: 1n, limit: 1 }))[0]!;
      // On a busy cluster the feed can show an append later than it was made; v2 must not see the feed end before it.
      await until(async () => (await store.readAll({ after: first.position, limit: 20 })).length === 2 + between.length);
      // v2 builds in batches of one (five while behind), passes `written`, then keeps failing on the poisoned event
      const v2 = new ProjectionDaemon(database, store, { ...fast, batchSize: 1 })
        .addProjector(totalsProjector(name, 2, { failOn: (event) => event.id === poisonId }));
      daemons.push(v2);
      v2.start();
      const runner = v2.projectionRunners[0]!;
      await until(() => runner.state === 'failing' && positionReached(runner.checkpoint, written.position));
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events: 1, balance: '1', last_revision: '0' }]);
      expect(await v2.waitFor(written.position, 300), 'a building version answers for nothing').to.equal(false);
    });

    it('read-your-writes does not count a version another process is building as passed', async () => {
      const name = uniqueName('ryw_remote');
      const stream = `acct-${randomUUID()}`;
      const first = await store.append(stream, [deposit(1)], 'no_stream');
      const v1 = daemon().addProjector(totalsProjector(name, 1));
      v1.start();
      expect(await v1.waitFor(first.position)).to.equal(true);
      await v1.stop();
      const written = await store.append(stream, [deposit(5)], 0n);

      // another process took v2's lease and builds it; this one stands by
      const states = new ProjectionStateStore(database);
      await states.register(name, 2, 'projector', projectorSchemaName(database.schema, { name, version: 2 }));
      expect((await states.claimLease(name, 2, 'elsewhere', 60_000)).held).to.equal(true);
      const v2 = daemon().addProjector(totalsProjector(name, 2));
      v2.start();
      await until(() => v2.projectionRunners[0]!.state === 'standby');
      expect(await v2.waitFor(written.position, 300), 'v1 serves reads and has not passed the write').to.equal(false);

      // once the other process lets go, this one builds v2 and swaps it in: the write is both passed and seen
      await states.releaseLease(name, 2, 'elsewhere');
      await until(async () => (await v2.status()).some((s) => s.name === name && s.version === 2 && s.status === 'active'));
      expect(await v2.waitFor(written.position, 10_000)).to.equal(true);
      expect(await rows(`${name}_totals`, [stream])).to.deep.equal([{ stream, events: 2, balance: '6', last_revision: '1' }]);
    });

    it('a full rebuild yields rows identical to the incremental run (property)', async function () {
      this.timeout(120_000); // up to 20 runs, each a build and a rebuild
      const event = fc.record({
        stream: fc.integer({ min: 0, max: 4 }),
        type: fc.constantFrom('Deposited', 'Withdrawn', 'Ignored'),
        amount: fc.integer({ min: 0, max: 1_000_000 }),
        catchUp: fc.boolean(),
      });
      await fc.assert(fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 40 }), async (script) => {
        const name = uniqueName('prop');
        const streams = Array.from({ length: 5 }, () => `acct-${randomUUID()}`);
        const incremental = daemon().addProjector(totalsProjector(name, 1));
        incremental.start();
        const revisions = new Map<number, bigint>();
        // Not headPosition(): on Postgres the readable head stays behind any transaction open in the cluster.
        let last: Position | null = null;
        for (const step of script) {
          const previous = revisions.get(step.stream);
          const { nextRevision, position } = await store.append(streams[step.stream]!,
            [{ type: step.type, data: { amount: step.amount } }], previous === undefined ? 'no_stream' : previous);
          revisions.set(step.stream, nextRevision);
          last = position;
          if (step.catchUp) expect(await incremental.waitFor(position)).to.equal(true);
        }
        expect(await incremental.waitFor(last!)).to.equal(true);
        const incrementalRows = await rows(`${name}_totals`, streams);
        await incremental.stop();

        const rebuild = daemon().addProjector(totalsProjector(name, 2));
        rebuild.start();
        await until(async () => (await rebuild.status()).some((s) => s.name === name && s.version === 2 && s.status === 'active'));
        expect(await rows(`${name}_totals`, streams)).to.deep.equal(incrementalRows);
        await rebuild.stop();
      }), { numRuns: target.name === 'pglite' ? 12 : 20 });
    });

    it('a reaction due later is waited for by the runner, holding none of the lanes the other reactors share', async () => {
      const reacted: string[] = [];
      // Due ten minutes after each event: never, within this test. One partition per stream, more than the lanes.
      const later: Reactor = {
        name: uniqueName('later'), handles: ['Reserved'],
        dueAt: (event) => event.recordedAt.getTime() + 600_000,
        async react(event) { reacted.push(event.stream); },
      };
      const name = uniqueName('pong');
      const now: Reactor = {
        name, handles: ['Pinged'],
        async react(event) {
          await store.append(`pong-${event.stream}`, [{ id: deterministicId(name, event.id), type: 'Ponged', data: {} }], 'no_stream');
        },
      };
      await Promise.all(Array.from({ length: 12 }, () => store.append(`number-${randomUUID()}`, [{ type: 'Reserved', data: {} }], 'no_stream')));
      const d = daemon().addReactor(later).addReactor(now);
      d.start();
      const ping = `ping-${randomUUID()}`;
      await store.append(ping, [{ type: 'Pinged', data: {} }], 'no_stream');
      await until(async () => (await store.readStream(`pong-${ping}`)).length === 1, { what: 'the other reactor reacted' });
      expect(reacted).to.deep.equal([]);
      // Stopping ends the wait: the events are reacted to by the next holder.
      await d.stop();
      expect(reacted).to.deep.equal([]);
    });

    it('a reactor re-run from zero changes nothing, thanks to deterministic ids', async () => {
      const name = uniqueName('ship');
      const order = `order-${randomUUID()}`;
      const reactor: Reactor = {
        name,
        handles: ['Ordered'],
        async react(event) {
          await store.append(`shipment-${event.stream}`,
            [{ id: deterministicId(name, event.id), type: 'ShipmentRequested', data: { order: event.stream } }], 'no_stream');
        },
      };
      await store.append(order, [{ type: 'Ordered', data: {} }], 'no_stream');
      const first = daemon().addReactor(reactor);
      first.start();
      await until(async () => (await store.readStream(`shipment-${order}`)).length === 1);
      await until(async () => (await first.status()).some((s) => s.name === name && s.checkpoint !== null));
      await first.stop();
      // Forget the checkpoint, as after a crash between effect and checkpoint.
      await database.query(`UPDATE projection_state SET checkpoint_commit = NULL, checkpoint_prepare = NULL WHERE name = $1`, [name]);
      const again = daemon().addReactor(reactor);
      again.start();
      await until(async () => (await again.status()).some((s) => s.name === name && s.checkpoint !== null));
      expect(await store.readStream(`shipment-${order}`)).to.have.length(1);
    });
  });
}
