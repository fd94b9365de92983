import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../src/db/database.ts';
import type { ReadAllOptions } from '../src/eventstore/port.ts';
import { comparePositions, type Position } from '../src/eventstore/position.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { SharedFeed } from '../src/projection/sharedFeed.ts';
import { databaseTargets } from './support/targets.ts';
import { until } from './support/until.ts';

for (const target of databaseTargets()) {
  describe(`shared feed of a process's runners: ${target.name}`, () => {
    let database: Database;
    let store: PostgresEventStore;
    /** The real store, counting the pages it was asked for. */
    const counted = () => {
      const reads: ReadAllOptions[] = [];
      return { reads, source: { readAll: (options: ReadAllOptions) => { reads.push(options); return store.readAll(options); }, onAppended: store.onAppended.bind(store) } };
    };

    /** The feed shows an append once every older transaction of the database has ended (others run beside us). */
    const visible = async (position: Position) => until(async () => {
      const events = await store.readAll({ after: null, limit: 1_000 });
      return events.some((e) => comparePositions(e.position, position) === 0);
    }, { what: 'the append visible in the feed' });

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database, { crossProcessWakeups: false });
      const { position } = await store.append(`shared-${randomUUID()}`, Array.from({ length: 30 }, (_, i) => ({ type: 'Ping', data: { i } })), 'no_stream');
      await visible(position);
    });
    after(async () => {
      await store?.close();
      await database?.close();
    });

    it('reads a page once for every runner that asks for it, and answers exactly what the store answers', async () => {
      const { reads, source } = counted();
      const feed = new SharedFeed(source);
      const pages = await Promise.all(Array.from({ length: 11 }, () => feed.readAll({ after: null, limit: 10 })));
      expect(reads).to.have.length(1);
      const direct = await store.readAll({ after: null, limit: 10 });
      for (const page of pages) expect(page.map((e) => e.id)).to.deep.equal(direct.map((e) => e.id));
      // A runner behind the others gets the full page kept for it; another size is another page.
      await feed.readAll({ after: null, limit: 10 });
      await feed.readAll({ after: null, limit: 5 });
      expect(reads).to.have.length(2);
    });

    /** The real store, counting its reads of the head. */
    const countedTail = () => {
      const reads: ReadAllOptions[] = [];
      return {
        reads,
        source: {
          readAll: (options: ReadAllOptions) => store.readAll(options),
          readTail: (options: ReadAllOptions) => { reads.push(options); return store.readTail(options); },
          onAppended: store.onAppended.bind(store),
        },
      };
    };

    /** A feed no timer reads: neither the held wait nor the idle poll comes during a test, only what it waits for. */
    const quietFeed = (source: ConstructorParameters<typeof SharedFeed>[0]) => {
      const feed = new SharedFeed(source, { releases: database.pool, idlePollMs: 60_000, heldWaitMs: { first: 60_000, max: 60_000 } });
      return { feed, unsubscribe: feed.subscribe(() => undefined) };
    };

    /** A transaction of this process that wrote, open on a connection of its pool. */
    const transactionOnPool = async () => {
      const connection = await database.pool.connect();
      await connection.query('BEGIN');
      await connection.query('SELECT pg_current_xact_id()');
      return connection;
    };

    it('while a transaction of this process holds the feed, its appends read the head once, not once each; the end of the transaction reads again', async function () {
      // PGlite is one connection: a transaction held open there would hold every append too.
      if (target.name !== 'postgres') this.skip();
      const { reads, source } = countedTail();
      // Only the connections can read again.
      const { unsubscribe } = quietFeed(source);
      const holder = await transactionOnPool();
      try {
        const stream = `held-${randomUUID()}`;
        for (let i = 0; i < 20; i++) await store.append(stream, [{ type: 'Ping', data: { i } }], 'any');
        await until(async () => reads.length >= 1, { what: 'the first append read the head' });
        // Every append after the first committed behind the open transaction: reading for it would find it held.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(reads, 'reads of the head while the transaction stays open').to.have.length(1);
        await holder.query('COMMIT');
      } finally {
        // A connection given back inside its transaction would hold the feed for every later test.
        await holder.query('ROLLBACK').catch(() => undefined);
        holder.release();
      }
      await until(async () => reads.length >= 2, { what: 'the end of the transaction read the head again' });
      unsubscribe();
    });

    /** A transaction of another process: a connection of its own, outside this process's pool, that wrote. */
    const otherProcessTransaction = async () => {
      const client = new pg.Client({ connectionString: database.connectionString });
      await client.connect();
      await client.query('BEGIN');
      await client.query('SELECT pg_current_xact_id()');
      return { end: async () => { try { await client.query('COMMIT'); } finally { await client.end(); } } };
    };

    it('a read that finds events held by another process reads again at once when another process appended while it was out', async function () {
      if (target.name !== 'postgres') this.skip();
      const reads: ReadAllOptions[] = [];
      let feed: SharedFeed | null = null;
      const source = {
        readAll: (options: ReadAllOptions) => store.readAll(options),
        readTail: (options: ReadAllOptions) => {
          reads.push(options);
          // Another process's notification, heard while the first read is out.
          if (reads.length === 1) queueMicrotask(() => feed!.nudge('remote'));
          return store.readTail(options);
        },
        onAppended: store.onAppended.bind(store),
      };
      feed = new SharedFeed(source, { releases: database.pool, idlePollMs: 60_000, heldWaitMs: { first: 60_000, max: 60_000 } });
      const unsubscribe = feed.subscribe(() => undefined);
      const holder = await otherProcessTransaction();
      try {
        await store.append(`held-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'any');
        // Held behind the other process's transaction; the notification heard meanwhile may have been its end.
        await until(async () => reads.length >= 2, { what: 'a second read after the notification heard during the first' });
      } finally {
        await holder.end();
        unsubscribe();
      }
    });

    it('a read that finds events held by a transaction of this process reads again when that connection is given back, not when another is', async function () {
      if (target.name !== 'postgres') this.skip();
      const { reads, source } = countedTail();
      const { unsubscribe } = quietFeed(source);
      const holder = await transactionOnPool();
      // Taken before the read, given back while the hold lasts: its return cannot show what the holder holds.
      const bystander = await database.pool.connect();
      let committed = false;
      let bystanderBack = false;
      try {
        await store.append(`held-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'any');
        await until(async () => reads.length >= 1, { what: 'the append read the head' });
        await new Promise((resolve) => setTimeout(resolve, 50));
        bystander.release();
        bystanderBack = true;
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(reads, 'reads of the head while the holder stays open').to.have.length(1);
        await holder.query('COMMIT');
        committed = true;
        holder.release();
        await until(async () => reads.length >= 2, { what: 'the return of the holding connection read the head again' });
      } finally {
        if (!committed) {
          await holder.query('ROLLBACK').catch(() => undefined);
          holder.release();
          if (!bystanderBack) bystander.release();
        }
        unsubscribe();
      }
    });

    it('an append that ends while a read is out starts no read after it when that read shows it; one it does not show does', async function () {
      // Deterministic on PGlite alone: on Postgres, others' transactions beside the test can hold what a read shows.
      if (target.name !== 'pglite') this.skip();
      const reads: ReadAllOptions[] = [];
      const shown: string[][] = [];
      // Each read waits for `beforeRead` to be let go before it reads, then for `afterRead` before it answers.
      let beforeRead: Promise<void> = Promise.resolve();
      let afterRead: Promise<void> = Promise.resolve();
      const source = {
        readAll: (options: ReadAllOptions) => store.readAll(options),
        readTail: async (options: ReadAllOptions) => {
          reads.push(options);
          await beforeRead;
          const read = await store.readTail(options);
          await afterRead;
          shown.push(read.events.map((e) => e.id));
          return read;
        },
        onAppended: store.onAppended.bind(store),
      };
      const { feed, unsubscribe } = quietFeed(source);
      const gate = () => { let open!: () => void; const closed = new Promise<void>((resolve) => { open = resolve; }); return { closed, open }; };
      const head = (await store.headPosition())!;
      expect((await feed.next(head, 100, {})).caughtUp).to.equal(true);
      reads.length = 0;
      shown.length = 0;
      const stream = `during-${randomUUID()}`;
      try {
        // 1. B ends while the read for A waits to be sent: that read shows both, and none follows.
        let before = gate();
        beforeRead = before.closed;
        const a = await store.append(stream, [{ type: 'Ping', data: { n: 'a' } }], 'no_stream');
        await until(async () => reads.length === 1, { what: 'the read for A' });
        const b = await store.append(stream, [{ type: 'Ping', data: { n: 'b' } }], 'any');
        before.open();
        await until(async () => shown.length === 1, { what: 'the read for A answered' });
        expect(shown[0]!.length).to.equal(2);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(reads, 'no read after B, which the read out showed').to.have.length(1);
        expect((await feed.next(a.position, 100, {})).events.map((e) => e.position)).to.deep.equal([b.position]);

        // 2. C ends after the read for B's successor took its snapshot: a read follows, and shows it.
        before = gate();
        beforeRead = before.closed;
        const after = gate();
        afterRead = after.closed;
        const d = store.append(stream, [{ type: 'Ping', data: { n: 'd' } }], 'any');
        await until(async () => reads.length === 2, { what: 'the read for D' });
        before.open();
        await d;
        // The read for D has its answer and waits: C ends now, after it.
        await new Promise((resolve) => setTimeout(resolve, 20));
        beforeRead = Promise.resolve();
        afterRead = Promise.resolve();
        const c = await store.append(stream, [{ type: 'Ping', data: { n: 'c' } }], 'any');
        after.open();
        await until(async () => shown.flat().length === 4, { what: 'a read after C, showing it' });
        expect(reads).to.have.length(3);
        expect(shown[2]).to.deep.equal([(await store.readStream(stream)).find((e) => comparePositions(e.position, c.position) === 0)!.id]);
      } finally {
        beforeRead = Promise.resolve();
        afterRead = Promise.resolve();
        unsubscribe();
      }
    });

    it('at the head, reads what is new once for every runner, and tells each when it has seen all there is', async () => {
      const { reads, source } = countedTail();
      const feed = new SharedFeed(source);
      const head = (await store.headPosition())!;
      const runners = [{}, {}, {}];
      for (const runner of runners) expect(await feed.next(head, 100, runner)).to.deep.equal({ events: [], caughtUp: true });
      expect(reads).to.have.length(1);
      const appended = await store.append(`shared-${randomUUID()}`, Array.from({ length: 7 }, (_, i) => ({ type: 'Ping', data: { i } })), 'no_stream');
      await visible(appended.position);
      feed.nudge();
      const batches = await Promise.all(runners.map((runner) => feed.next(head, 100, runner)));
      for (const batch of batches) expect(batch.events.map((e) => (e.data as { i: number }).i)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
      expect(reads).to.have.length(2);
      for (const runner of runners) expect((await feed.next(appended.position, 100, runner)).caughtUp).to.equal(true);
      expect(reads).to.have.length(2);
    });

    it('reads a backlog once for runners going at different speeds, each getting every event once and in order', async () => {
      const start = (await store.headPosition())!;
      const stream = `backlog-${randomUUID()}`;
      const last = await store.append(stream, Array.from({ length: 60 }, (_, i) => ({ type: 'Ping', data: { i } })), 'no_stream');
      await visible(last.position);
      const { reads, source } = countedTail();
      // A window of 20 events, read 10 at a time: the fast runner waits for the slow one rather than reading on its own.
      const feed = new SharedFeed(source, { windowEvents: 20, readEvents: 10, backpressureMs: 10_000 });
      const consume = async (batch: number, pauseMs: number) => {
        const seen: number[] = [];
        const runner = {};
        for (let after: Position = start; ;) {
          const { events, caughtUp } = await feed.next(after, batch, runner);
          if (caughtUp) return seen;
          for (const event of events) if (event.stream === stream) seen.push((event.data as { i: number }).i);
          if (events.length > 0) after = events[events.length - 1]!.position;
          if (pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs));
        }
      };
      const [fast, slow] = await Promise.all([consume(7, 0), consume(3, 5)]);
      const all = Array.from({ length: 60 }, (_, i) => i);
      expect(fast).to.deep.equal(all);
      expect(slow).to.deep.equal(all);
      // Others append beside this test: the window reads at most a few pages more than the 60 events need.
      expect(reads.length).to.be.within(6, 12);
    });

    it('a runner further on than the window starts it again there; one behind it reads the store, and both see every event', async () => {
      const early = (await store.headPosition())!;
      const stream = `split-${randomUUID()}`;
      const middle = await store.append(stream, Array.from({ length: 5 }, (_, i) => ({ type: 'Ping', data: { i } })), 'no_stream');
      const end = await store.append(stream, Array.from({ length: 5 }, (_, i) => ({ type: 'Ping', data: { i: 5 + i } })), 4n);
      await visible(end.position);
      const { source } = countedTail();
      const feed = new SharedFeed(source);
      const drainFrom = async (after: Position, runner: object) => {
        const seen: number[] = [];
        for (;;) {
          const { events, caughtUp } = await feed.next(after, 3, runner);
          if (caughtUp) return seen;
          for (const event of events) if (event.stream === stream) seen.push((event.data as { i: number }).i);
          if (events.length > 0) after = events[events.length - 1]!.position;
        }
      };
      const behind = {};
      expect((await feed.next(early, 3, behind)).events.length).to.be.greaterThan(0);
      expect(await drainFrom(middle.position, {})).to.deep.equal([5, 6, 7, 8, 9]);
      expect(await drainFrom(early, behind)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it('keeps no short page (the feed’s end moves on), no failed read, and at most its bound of pages', async () => {
      const { reads, source } = counted();
      const feed = new SharedFeed(source, 2);
      const head = (await store.headPosition())!;
      expect(await feed.readAll({ after: head, limit: 10 })).to.deep.equal([]);
      const appended = await store.append(`shared-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await visible(appended.position);
      const next = await feed.readAll({ after: head, limit: 10 });
      expect(next.map((e) => e.position)).to.deep.equal([appended.position]);
      expect(reads).to.have.length(2);
      // Readers that joined a read which came back short read again themselves: it may have started before
      // the append that woke them.
      const late = await store.append(`shared-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await visible(late.position);
      const joined = await Promise.all([0, 1, 2].map(() => feed.readAll({ after: appended.position, limit: 10 })));
      for (const page of joined) expect(page.map((e) => e.position)).to.deep.equal([late.position]);
      expect(reads).to.have.length(5);

      const all = await store.readAll({ after: null, limit: 30 });
      for (const at of [0, 1, 2]) await feed.readAll({ after: all[at]!.position, limit: 3 });
      const before = reads.length;
      await feed.readAll({ after: all[0]!.position, limit: 3 }); // the oldest of three, past the bound of two: read again
      await feed.readAll({ after: all[2]!.position, limit: 3 }); // still kept
      expect(reads.length - before).to.equal(1);

      let attempts = 0;
      const failing = new SharedFeed({ readAll: async () => { attempts++; throw new Error('connection lost'); }, onAppended: () => () => undefined });
      for (let i = 0; i < 2; i++) {
        const outcome = await failing.readAll({ after: null, limit: 10 }).catch((error: Error) => error.message);
        expect(outcome).to.equal('connection lost');
      }
      expect(attempts).to.equal(2);
    });
  });
}
