import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { WrongExpectedRevisionError } from '../src/eventstore/errors.ts';
import type { EventStore, ExpectedRevision, NewEvent } from '../src/eventstore/port.ts';
import { comparePositions } from '../src/eventstore/position.ts';
import { UpcasterRegistry } from '../src/eventstore/upcasting.ts';
import { eventStoreTargets, type OpenedEventStore } from './support/eventStoreTargets.ts';
import { until } from './support/until.ts';

function ev(type: string, data: unknown = {}, id?: string): NewEvent {
  return { type, data, ...(id ? { id } : {}) };
}

function uniqueStream(prefix = 'contract'): string {
  return `${prefix}-${randomUUID()}`;
}

async function expectWrongRevision(promise: Promise<unknown>, actual: bigint | 'no_stream'): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(WrongExpectedRevisionError);
    expect((error as WrongExpectedRevisionError).actual).to.equal(actual);
    return;
  }
  expect.fail('append should have been refused');
}

for (const target of eventStoreTargets()) {
  describe(`event store contract: ${target.name}`, function () {
    let opened: OpenedEventStore;
    let store: EventStore;

    before(async () => {
      opened = await target.open();
      store = opened.store;
    });
    after(async () => opened?.close());

    describe('expected revision', () => {
      it('no_stream creates a stream and numbers its events from 0', async () => {
        const stream = uniqueStream();
        const result = await store.append(stream, [ev('A'), ev('B')], 'no_stream');
        expect(result.nextRevision).to.equal(1n);
        const events = await store.readStream(stream);
        expect(events.map((e) => [e.type, e.revision])).to.deep.equal([['A', 0n], ['B', 1n]]);
      });

      it('no_stream on an existing stream is refused with its revision', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('A'), ev('B')], 'no_stream');
        await expectWrongRevision(store.append(stream, [ev('C')], 'no_stream'), 1n);
        expect(await store.readStream(stream)).to.have.length(2);
      });

      it('stream_exists on a missing stream is refused', async () => {
        const stream = uniqueStream();
        await expectWrongRevision(store.append(stream, [ev('A')], 'stream_exists'), 'no_stream');
        expect(await store.readStream(stream)).to.deep.equal([]);
      });

      it('stream_exists on an existing stream appends', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('A')], 'no_stream');
        const result = await store.append(stream, [ev('B')], 'stream_exists');
        expect(result.nextRevision).to.equal(1n);
      });

      it('an exact revision appends only when it is the current one', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('A'), ev('B')], 'no_stream');
        await expectWrongRevision(store.append(stream, [ev('C')], 0n), 1n);
        await expectWrongRevision(store.append(stream, [ev('C')], 2n), 1n);
        const result = await store.append(stream, [ev('C')], 1n);
        expect(result.nextRevision).to.equal(2n);
      });

      it('an exact revision on a missing stream is refused', async () => {
        await expectWrongRevision(store.append(uniqueStream(), [ev('A')], 0n), 'no_stream');
      });

      it('any appends to a missing and to an existing stream', async () => {
        const stream = uniqueStream();
        expect((await store.append(stream, [ev('A')], 'any')).nextRevision).to.equal(0n);
        expect((await store.append(stream, [ev('B'), ev('C')], 'any')).nextRevision).to.equal(2n);
      });

      for (const [label, setup, expected] of [
        ['an exact revision', true, 0n],
        ['no_stream', false, 'no_stream'],
      ] as Array<[string, boolean, ExpectedRevision]>) {
        it(`20 concurrent appends expecting ${label}: exactly one succeeds`, async () => {
          const stream = uniqueStream();
          if (setup) await store.append(stream, [ev('Opened')], 'no_stream');
          const results = await Promise.allSettled(
            Array.from({ length: 20 }, (_, i) => store.append(stream, [ev('Raced', { i })], expected)));
          const won = results.filter((r) => r.status === 'fulfilled');
          const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
          expect(won).to.have.length(1);
          expect(lost).to.have.length(19);
          for (const failure of lost) expect(failure.reason).to.be.instanceOf(WrongExpectedRevisionError);
          const events = await store.readStream(stream);
          expect(events.filter((e) => e.type === 'Raced')).to.have.length(1);
        });
      }

      it('200 concurrent appends expecting any, or stream_exists, all succeed with distinct revisions', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('Opened')], 'no_stream');
        await Promise.all(Array.from({ length: 200 }, (_, i) => store.append(stream, [ev('Any', { i })], i % 2 ? 'any' : 'stream_exists')));
        const events = await store.readStream(stream);
        expect(events.map((e) => e.revision)).to.deep.equal(Array.from({ length: 201 }, (_, i) => BigInt(i)));
      });
    });

    describe('appends made together (one group commit on Postgres)', () => {
      it('each keeps its own outcome: one refused on its expectation, one a repeat, the others recorded', async () => {
        const [fresh, existing, wrong, repeated] = [uniqueStream(), uniqueStream(), uniqueStream(), uniqueStream()];
        await store.append(existing, [ev('A')], 'no_stream');
        await store.append(wrong, [ev('A'), ev('B')], 'no_stream');
        const ids = [randomUUID(), randomUUID()];
        const first = await store.append(repeated, [ev('R1', {}, ids[0]), ev('R2', {}, ids[1])], 'no_stream');
        const outcomes = await Promise.allSettled([
          store.append(fresh, [ev('One'), ev('Two'), ev('Three')], 'no_stream'),
          store.append(existing, [ev('B')], 0n),
          store.append(wrong, [ev('C')], 0n),
          store.append(repeated, [ev('R1', {}, ids[0]), ev('R2', {}, ids[1])], 'no_stream'),
          store.append(uniqueStream(), [ev('Solo')], 'any'),
        ]);
        expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
        const value = (i: number) => (outcomes[i] as PromiseFulfilledResult<Awaited<ReturnType<EventStore['append']>>>).value;
        expect(value(0).nextRevision).to.equal(2n);
        expect(value(1).nextRevision).to.equal(1n);
        expect((outcomes[2] as PromiseRejectedResult).reason).to.be.instanceOf(WrongExpectedRevisionError);
        expect((outcomes[2] as PromiseRejectedResult).reason.actual).to.equal(1n);
        expect(value(3).nextRevision).to.equal(first.nextRevision);
        expect(comparePositions(value(3).position, first.position)).to.equal(0);
        expect((await store.readStream(fresh)).map((e) => [e.type, e.revision])).to.deep.equal([['One', 0n], ['Two', 1n], ['Three', 2n]]);
        expect((await store.readStream(existing)).map((e) => e.type)).to.deep.equal(['A', 'B']);
        expect((await store.readStream(wrong)).map((e) => e.type)).to.deep.equal(['A', 'B']);
        expect((await store.readStream(repeated)).map((e) => e.type)).to.deep.equal(['R1', 'R2']);
      });

      it('appends to one stream made together are applied one after the other, in the order they were made', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('Opened')], 'no_stream');
        const outcomes = await Promise.allSettled([
          store.append(stream, [ev('First')], 0n),
          store.append(stream, [ev('Second')], 0n),
          store.append(stream, [ev('Third')], 1n),
          store.append(stream, [ev('Any')], 'any'),
        ]);
        expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
        expect((await store.readStream(stream)).map((e) => e.type)).to.deep.equal(['Opened', 'First', 'Third', 'Any']);
      });

      it('the feed shows each stream of a group in revision order, and every event once', async () => {
        const head = await store.headPosition();
        const streams = Array.from({ length: 12 }, () => uniqueStream());
        await Promise.all(streams.map((stream, i) => store.append(stream, Array.from({ length: 1 + (i % 4) }, (_, n) => ev('G', { n })), 'no_stream')));
        const appended = streams.reduce((sum, _, i) => sum + 1 + (i % 4), 0);
        // On a shared Postgres server the feed shows the appends once every older transaction (of any database) has ended.
        let feed: Awaited<ReturnType<EventStore['readAll']>> = [];
        await until(async () => {
          feed = (await store.readAll({ after: head, limit: 1000 })).filter((e) => streams.includes(e.stream));
          return feed.length >= appended;
        }, { what: 'the group in the feed' });
        expect(feed).to.have.length(appended);
        for (const stream of streams) {
          const mine = feed.filter((e) => e.stream === stream);
          expect(mine.map((e) => e.revision)).to.deep.equal(mine.map((_, n) => BigInt(n)));
          expect(mine.map((e) => (e.data as { n: number }).n)).to.deep.equal(mine.map((_, n) => n));
        }
      });
    });

    describe('reading', () => {
      it('round-trips ids, data and metadata', async () => {
        const stream = uniqueStream();
        const id = randomUUID();
        await store.append(stream, [{ id, type: 'Rich', data: { amount: '10.50', nested: { a: [1, 2] } },
          metadata: { clientId: 'c-1', correlationId: 'corr', actor: 'test' } }], 'no_stream');
        const [event] = await store.readStream(stream);
        expect(event!.id).to.equal(id);
        expect(event!.stream).to.equal(stream);
        expect(event!.data).to.deep.equal({ amount: '10.50', nested: { a: [1, 2] } });
        expect(event!.metadata).to.include({ clientId: 'c-1', correlationId: 'corr', actor: 'test' });
        expect(event!.recordedAt).to.be.instanceOf(Date);
        expect(event!.schemaVersion).to.equal(1);
      });

      it('reads a stream forwards, backwards, from a revision and with a limit', async () => {
        const stream = uniqueStream();
        await store.append(stream, ['A', 'B', 'C', 'D'].map((t) => ev(t)), 'no_stream');
        const types = (events: { type: string }[]) => events.map((e) => e.type).join('');
        expect(types(await store.readStream(stream))).to.equal('ABCD');
        expect(types(await store.readStream(stream, { fromRevision: 2n }))).to.equal('CD');
        expect(types(await store.readStream(stream, { limit: 2 }))).to.equal('AB');
        expect(types(await store.readStream(stream, { direction: 'backwards' }))).to.equal('DCBA');
        expect(types(await store.readStream(stream, { direction: 'backwards', fromRevision: 1n }))).to.equal('BA');
        expect(await store.readStream(uniqueStream('missing'))).to.deep.equal([]);
      });

      it('reads made together (one statement on Postgres) each answer their own stream, from their revision, within their limit', async () => {
        const streams = Array.from({ length: 40 }, () => uniqueStream());
        // Stream i holds i % 7 events, typed E0, E1, ...; every third stream is never written.
        await Promise.all(streams.map((stream, i) => (i % 3 === 2 || i % 7 === 0
          ? Promise.resolve()
          : store.append(stream, Array.from({ length: i % 7 }, (_, n) => ev(`E${n}`, { stream: i, n })), 'no_stream'))));
        const held = (i: number) => (i % 3 === 2 ? 0 : i % 7);
        const reads = streams.flatMap((stream, i) => [
          { stream, i, from: 0, limit: 100 },
          { stream, i, from: i % 4, limit: 1 + (i % 3) },
        ]);
        const answers = await Promise.all(reads.map(({ stream, from, limit }) => store.readStream(stream, { fromRevision: BigInt(from), limit })));
        answers.forEach((events, r) => {
          const { stream, i, from, limit } = reads[r]!;
          const expected = Array.from({ length: held(i) }, (_, n) => `E${n}`).slice(from, from + limit);
          expect(events.map((e) => e.type), `${stream} from ${from}, at most ${limit}`).to.deep.equal(expected);
          expect(events.every((e) => e.stream === stream && (e.data as { stream: number }).stream === i)).to.equal(true);
          expect(events.map((e) => e.revision)).to.deep.equal(expected.map((_, n) => BigInt(from + n)));
        });
      });

      it('reads the global feed in append order, strictly after a position', async () => {
        const head = await store.headPosition();
        const s1 = uniqueStream();
        const s2 = uniqueStream();
        await store.append(s1, [ev('One')], 'no_stream');
        await store.append(s2, [ev('Two'), ev('Three')], 'no_stream');
        const last = await store.append(s1, [ev('Four')], 0n);
        // On a shared Postgres server the feed shows the appends once every older transaction (of any database) has ended.
        await until(async () => {
          const shown = await store.headPosition();
          return shown !== null && comparePositions(shown, last.position) >= 0;
        }, { what: 'the appends in the feed' });
        const feed = (await store.readAll({ after: head, limit: 1000 })).filter((e) => e.stream === s1 || e.stream === s2);
        expect(feed.map((e) => e.type)).to.deep.equal(['One', 'Two', 'Three', 'Four']);
        for (let i = 1; i < feed.length; i++) {
          expect(comparePositions(feed[i - 1]!.position, feed[i]!.position)).to.equal(-1);
        }
        expect(comparePositions(feed[3]!.position, last.position)).to.equal(0);
        const afterSecond = await store.readAll({ after: feed[1]!.position, limit: 2 });
        expect(afterSecond.map((e) => e.type)).to.deep.equal(['Three', 'Four']);
        expect(comparePositions((await store.headPosition())!, last.position)).to.be.at.least(0);
      });

      it('pages through the feed without losing or repeating an event', async () => {
        const head = await store.headPosition();
        const stream = uniqueStream();
        const { position } = await store.append(stream, Array.from({ length: 25 }, (_, i) => ev('Paged', { i })), 'no_stream');
        // On a shared Postgres cluster, the feed shows the append once every older transaction (of any database) has ended.
        await until(async () => comparePositions((await store.headPosition()) ?? position, position) >= 0, { what: 'the append in the feed' });
        const seen: number[] = [];
        let after = head;
        for (;;) {
          const page = await store.readAll({ after, limit: 7 });
          if (page.length === 0) break;
          for (const event of page) if (event.stream === stream) seen.push((event.data as { i: number }).i);
          after = page[page.length - 1]!.position;
        }
        expect(seen).to.deep.equal(Array.from({ length: 25 }, (_, i) => i));
      });
    });

    describe('idempotence and upcasting', () => {
      it('appending the same event ids again is a harmless repeat', async () => {
        const stream = uniqueStream();
        const ids = [randomUUID(), randomUUID()];
        const first = await store.append(stream, [ev('A', {}, ids[0]), ev('B', {}, ids[1])], 'no_stream');
        const again = await store.append(stream, [ev('A', {}, ids[0]), ev('B', {}, ids[1])], 'no_stream');
        expect(again.nextRevision).to.equal(first.nextRevision);
        expect(comparePositions(again.position, first.position)).to.equal(0);
        expect(await store.readStream(stream)).to.have.length(2);
      });

      it('appending an earlier batch again expecting any or stream_exists is a harmless repeat, after later appends too', async () => {
        const stream = uniqueStream();
        const first = randomUUID();
        const answered = await store.append(stream, [ev('A', { n: 1 }, first)], 'any');
        await store.append(stream, [ev('B', { n: 2 })], 'any');
        const again = await store.append(stream, [ev('A', { n: 1 }, first)], 'any');
        const thrice = await store.append(stream, [ev('A', { n: 1 }, first)], 'stream_exists');
        for (const repeat of [again, thrice]) {
          expect(repeat.nextRevision).to.equal(answered.nextRevision);
          expect(comparePositions(repeat.position, answered.position)).to.equal(0);
        }
        expect((await store.readStream(stream)).map((e) => e.type)).to.deep.equal(['A', 'B']);
      });

      it('an event id already used on another stream is refused', async () => {
        const id = randomUUID();
        await store.append(uniqueStream(), [ev('A', {}, id)], 'no_stream');
        const other = uniqueStream();
        const outcome = await store.append(other, [ev('A', {}, id)], 'no_stream').catch((error: unknown) => error);
        // EventStoreDB scopes ids to a stream and accepts; the Postgres adapter keeps ids globally unique.
        if (target.name !== 'eventstoredb') expect(outcome).to.be.instanceOf(Error);
      });

      it('old event versions are upcast on read', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('PriceSet', { cents: 1050 })], 'no_stream');
        const upcasters = new UpcasterRegistry()
          .register('PriceSet', 1, (data: { cents: number }) => ({ amount: (data.cents / 100).toFixed(2) }))
          .register('PriceSet', 2, (data: { amount: string }) => ({ ...data, currency: 'USD' }));
        const reader = opened.withUpcasters(upcasters);
        const [event] = await reader.readStream(stream);
        expect(event!.schemaVersion).to.equal(3);
        expect(event!.data).to.deep.equal({ amount: '10.50', currency: 'USD' });
        await reader.append(stream, [ev('PriceSet', { amount: '11.00', currency: 'CLP' })], 0n);
        const events = await reader.readStream(stream);
        expect(events[1]!.schemaVersion).to.equal(3);
        expect(events[1]!.data).to.deep.equal({ amount: '11.00', currency: 'CLP' });
      });
    });

    it('wakes listeners on append', async () => {
      let woken = 0;
      const unsubscribe = store.onAppended(() => woken++);
      await store.append(uniqueStream(), [ev('Ping')], 'any');
      await until(() => woken > 0, { what: 'a wake-up after the append', timeoutMs: 2_000 });
      unsubscribe();
    });
  });
}
