import { expect } from 'chai';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Position } from '../src/eventstore/position.ts';
import { databaseTargets } from './support/targets.ts';
import { until } from './support/until.ts';

for (const target of databaseTargets()) {
  describe(`postgres event store adapter: ${target.name}`, () => {
    let database: Database;
    let store: PostgresEventStore;

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
      await store.append(`immutable-${randomUUID()}`, [{ type: 'Recorded', data: { n: 1 } }], 'no_stream');
    });
    after(async () => {
      await store?.close();
      await database?.close();
    });

    it('appends made together go as one statement (up to 4 of them): one transaction, one commit, each member its own outcome; a refused one reads whether it is a repeat', async () => {
      const streams = Array.from({ length: 4 }, () => `grouped-${randomUUID()}`);
      await store.append(streams[3]!, [{ type: 'Existing', data: {} }], 'no_stream');
      let statements = 0;
      const query = database.query;
      const spy: Database['query'] = (text, params) => {
        statements++;
        return query(text, params);
      };
      (database as { query: Database['query'] }).query = spy;
      let outcomes: PromiseSettledResult<Awaited<ReturnType<PostgresEventStore['append']>>>[];
      try {
        outcomes = await Promise.allSettled(streams.map((stream, i) =>
          store.append(stream, Array.from({ length: 1 + (i % 3) }, (_, n) => ({ type: 'Grouped', data: { n } })), 'no_stream')));
      } finally {
        (database as { query: Database['query'] }).query = query;
      }
      // The group, then the refused member's look for its own events (a repeat answers as the first append did).
      expect(statements).to.equal(2);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
      const commits = new Set(outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.position.commit] : [])));
      expect(commits.size).to.equal(1);
    });

    it('a group whose member races a writer of another process (unique violation) is appended member by member', async () => {
      const raced = `raced-${randomUUID()}`;
      const others = [`calm-${randomUUID()}`, `calm-${randomUUID()}`];
      const other = new PostgresEventStore(database, { crossProcessWakeups: false });
      try {
        // Another store instance stands for another process: its append to the same stream is in a group of its own.
        const outcomes = await Promise.allSettled([
          store.append(raced, [{ type: 'Mine', data: {} }], 'no_stream'),
          ...others.map((stream) => store.append(stream, [{ type: 'Calm', data: {} }], 'no_stream')),
          other.append(raced, [{ type: 'Theirs', data: {} }], 'no_stream'),
          other.append(`calm-${randomUUID()}`, [{ type: 'Calm', data: {} }], 'no_stream'),
        ]);
        expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(4);
        expect(await store.readStream(raced)).to.have.length(1);
        for (const stream of others) expect(await store.readStream(stream)).to.have.length(1);
      } finally {
        await other.close();
      }
    });

    it('a group with a repeat expecting any (its ids already recorded) is appended member by member: the repeat answers as before', async () => {
      const repeated = `repeated-${randomUUID()}`;
      const id = randomUUID();
      const first = await store.append(repeated, [{ id, type: 'Once', data: {} }], 'any');
      const calm = [`calm-${randomUUID()}`, `calm-${randomUUID()}`];
      const outcomes = await Promise.all([
        store.append(repeated, [{ id, type: 'Once', data: {} }], 'any'),
        ...calm.map((stream) => store.append(stream, [{ type: 'Calm', data: {} }], 'no_stream')),
      ]);
      expect(outcomes[0]).to.deep.equal({ ...first, repeated: true });
      expect(await store.readStream(repeated)).to.have.length(1);
      for (const stream of calm) expect(await store.readStream(stream)).to.have.length(1);
    });

    for (const statement of ['UPDATE events SET type = \'Tampered\'', 'DELETE FROM events', 'TRUNCATE events']) {
      it(`refuses at the database: ${statement.split(' ')[0]}`, async () => {
        const before = await database.query('SELECT count(*)::int AS n, min(type) AS t FROM events');
        const outcome = await database.query(statement).then(() => null, (error: unknown) => error);
        expect(outcome).to.be.instanceOf(Error);
        expect(String((outcome as Error).message)).to.match(/events are immutable/);
        const after = await database.query('SELECT count(*)::int AS n, min(type) AS t FROM events');
        expect(after.rows).to.deep.equal(before.rows);
      });
    }
  });
}

const url = process.env.DATABASE_URL;
const onPostgres = databaseTargets().find((t) => t.name === 'postgres');

(onPostgres && url ? describe : describe.skip)('postgres feed: late-committing transactions', () => {
  let database: Database;
  let store: PostgresEventStore;

  before(async () => {
    database = await onPostgres!.open();
    store = new PostgresEventStore(database);
  });
  after(async () => {
    await store?.close();
    await database?.close();
  });

  it('delivers an event whose transaction took its sequence number first and committed last', async () => {
    const slowStream = `slow-${randomUUID()}`;
    const fastStream = `fast-${randomUUID()}`;
    let checkpoint: Position | null = await store.headPosition();
    const delivered: RecordedEvent[] = [];
    const poll = async () => {
      const events = await store.readAll({ after: checkpoint, limit: 100 });
      for (const event of events) delivered.push(event);
      if (events.length > 0) checkpoint = events[events.length - 1]!.position;
    };

    // The slow writer inserts first (taking the lower global position) and holds its transaction open.
    const slow = new pg.Client({ connectionString: url });
    await slow.connect();
    try {
      await slow.query(`SET search_path TO "${database.schema}"`);
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO events (id, stream, revision, type, data) VALUES ($1, $2, 0, 'Slow', '{}')`,
        [randomUUID(), slowStream]);

      // A fast writer appends and commits meanwhile; the consumer keeps polling.
      await store.append(fastStream, [{ type: 'Fast', data: {} }], 'no_stream');
      for (let i = 0; i < 5; i++) await poll();
      // Nothing past the open transaction is handed out, so the checkpoint cannot jump over it.
      expect(delivered.filter((e) => e.stream === fastStream || e.stream === slowStream)).to.deep.equal([]);

      await slow.query('COMMIT');
    } finally {
      await slow.end();
    }
    // The feed's horizon is the oldest transaction still running anywhere on the server (other suites and other
    // schemas included): both events come once it has passed them.
    const ours = () => delivered.filter((e) => e.stream === fastStream || e.stream === slowStream);
    await until(async () => {
      await poll();
      return ours().length >= 2;
    }, { what: 'both events delivered' });
    expect(ours().map((e) => e.type)).to.deep.equal(['Slow', 'Fast']);
    expect(new Set(delivered.map((e) => e.id)).size).to.equal(delivered.length);
  });

  it('wakes consumers in other processes (LISTEN/NOTIFY), not only in its own', async () => {
    // A second Database is a second pool and a second store: the in-process emitter cannot reach it.
    const { openDatabase } = await import('../src/db/database.ts');
    const other = await openDatabase({ kind: 'postgres', connectionString: url!, poolSize: 2 }, { schema: database.schema });
    const listener = new PostgresEventStore(other);
    try {
      let woken = 0;
      listener.onAppended(() => woken++);
      // LISTEN is established once the listener has woken for its connection.
      await until(() => woken > 0, { what: 'the listener connected', timeoutMs: 5_000 });
      const before = woken;
      await store.append(`notify-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await until(() => woken > before, { what: 'a wake-up from the other connection', timeoutMs: 2_000 });
    } finally {
      await listener.close();
      await other.close();
    }
  });

  it('a process alone on the channel sends no NOTIFY; once another process listens, both do', async () => {
    const { openDatabase } = await import('../src/db/database.ts');
    const channel = `events_${database.schema}`;
    // A plain listener (it says no hello, so the stores do not count it) sees every notice on the channel.
    const watcher = new pg.Client({ connectionString: url });
    const notices: string[] = [];
    watcher.on('notification', (message) => notices.push(message.payload ?? ''));
    await watcher.connect();
    await watcher.query(`LISTEN "${channel}"`);
    const firstDb = await openDatabase({ kind: 'postgres', connectionString: url!, poolSize: 2 }, { schema: database.schema });
    const secondDb = await openDatabase({ kind: 'postgres', connectionString: url!, poolSize: 2 }, { schema: database.schema });
    const first = new PostgresEventStore(firstDb);
    const second = new PostgresEventStore(secondDb);
    try {
      let firstWoken = 0;
      first.onAppended(() => firstWoken++);
      await until(() => notices.includes('hello'), { what: "the first store's hello", timeoutMs: 5_000 });
      const helloAt = Date.now();
      // Right after its hello, answers may still be on their way: it notifies.
      await first.append(`early-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await until(() => notices.includes(''), { what: 'a notice while answers may be on their way', timeoutMs: 2_000 });
      // Past the wait for answers (2 s), nobody answered: it is alone, and sends nothing.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, helloAt + 2_100 - Date.now())));
      notices.length = 0;
      for (let i = 0; i < 3; i++) await first.append(`alone-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(notices, 'no notice while it is alone').to.deep.equal([]);

      let secondWoken = 0;
      second.onAppended(() => secondWoken++);
      // The second says hello, the first answers: each now knows the other listens.
      await until(() => notices.includes('hello') && notices.includes('here'), { what: 'hello and here', timeoutMs: 5_000 });
      const before = secondWoken;
      await first.append(`together-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await until(() => secondWoken > before && notices.includes(''), { what: "the second woken by the first's append", timeoutMs: 2_000 });
      const firstBefore = firstWoken;
      await second.append(`together-${randomUUID()}`, [{ type: 'Ping', data: {} }], 'no_stream');
      await until(() => firstWoken > firstBefore, { what: "the first woken by the second's append", timeoutMs: 2_000 });
    } finally {
      await first.close();
      await second.close();
      await firstDb.close();
      await secondDb.close();
      await watcher.end();
    }
  });

  it('a consumer that polled before a late commit still gets every event exactly once under load', async () => {
    const streams = Array.from({ length: 8 }, () => `load-${randomUUID()}`);
    let checkpoint: Position | null = await store.headPosition();
    const seen = new Map<string, number>();
    let writing = true;
    const written: string[] = [];
    // After the writers, the consumer reads until it has seen every event written: an empty read then is no end, a
    // transaction of anyone else on the cluster (another test) may hold the feed's horizon for a moment.
    let finishedAt = Infinity;
    const deadline = () => Date.now() > finishedAt + 10_000;
    const consumer = (async () => {
      while (writing || (written.some((id) => !seen.has(id)) && !deadline())) {
        const events = await store.readAll({ after: checkpoint, limit: 50 });
        for (const event of events) seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
        if (events.length > 0) checkpoint = events[events.length - 1]!.position;
        else await new Promise((r) => setTimeout(r, 2));
      }
    })();
    // Writers whose transactions interleave: each holds its insert open for a random while before committing.
    await Promise.all(streams.map(async (stream) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`SET search_path TO "${database.schema}"`);
      for (let revision = 0; revision < 15; revision++) {
        const id = randomUUID();
        await client.query('BEGIN');
        await client.query(`INSERT INTO events (id, stream, revision, type, data) VALUES ($1, $2, $3, 'Load', '{}')`,
          [id, stream, revision]);
        await new Promise((r) => setTimeout(r, Math.random() * 6));
        await client.query('COMMIT');
        written.push(id);
      }
      await client.end();
    }));
    finishedAt = Date.now();
    writing = false;
    await consumer;
    // Nothing more than what was seen: a late read finds no event twice.
    for (const event of await store.readAll({ after: checkpoint, limit: 50 })) seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
    for (const id of written) expect(seen.get(id), `event ${id}`).to.equal(1);
  });
});
