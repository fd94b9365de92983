/**
 * The command handler on its own: a small counter decider over a real store. Commands that queue on one stream
 * are decided one after another, each on the state the previous one left; two stores over one database stand
 * for two processes racing for the same stream.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { Decider } from '../src/domain/decider.ts';
import { DomainError, domainNotFound } from '../src/domain/errors.ts';
import { handleCommand, readState } from '../src/eventstore/commandHandler.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { databaseTargets } from './support/targets.ts';

type CounterCommand = { add: number; id?: string };
type CounterEvent = { type: 'Added'; data: { amount: number }; id?: string };
interface CounterState { total: number; seen: readonly number[] }

/** Adds to a total that may never go below zero; a command naming an id adds at most once. */
const counter: Decider<CounterCommand, CounterEvent, CounterState> = {
  initialState: { total: 0, seen: [] },
  decide(command, state) {
    if (state.total + command.add < 0) throw domainNotFound(`cannot take ${-command.add}: total is ${state.total}`);
    if (command.add === 0) return [];
    return [{ type: 'Added', data: { amount: command.add }, ...(command.id ? { id: command.id } : {}) }];
  },
  evolve(state, event) {
    return { total: state.total + event.data.amount, seen: [...state.seen, event.data.amount] };
  },
};

const metadata = { actor: 'test' };

for (const target of databaseTargets()) {
  describe(`command handler: ${target.name}`, function () {
    this.timeout(60_000);
    let database: Database;
    let store: PostgresEventStore;

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
    });
    after(async () => {
      await store?.close();
      await database?.close();
    });

    it('reads of one stream’s state asked while another runs share one read, made after all of them asked; a read asked after a queued command sees it', async () => {
      const stream = `counter-${randomUUID()}`;
      await handleCommand(store, stream, counter, { add: 5 }, metadata);
      let reads = 0;
      const counted = new Proxy(store, {
        get(target, property, receiver) {
          if (property === 'readStream') {
            return (...args: Parameters<PostgresEventStore['readStream']>) => { reads++; return target.readStream(...args); };
          }
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const first = readState(counted, stream, counter);
      const others = Array.from({ length: 9 }, () => readState(counted, stream, counter));
      const added = handleCommand(counted, stream, counter, { add: 2 }, metadata);
      const after = readState(counted, stream, counter);
      const states = await Promise.all([first, ...others]);
      expect(states.map((state) => state.total)).to.deep.equal(Array.from({ length: 10 }, () => 5));
      expect((await added).state.total).to.equal(7);
      expect((await after).total).to.equal(7);
      // The first read starts at once; the nine asked while it runs share the next one; the command decides on the
      // state they left (no read); the read asked after the command reads what it appended.
      expect(reads).to.equal(3);
    });

    it('decides queued commands one after another, each with its own outcome', async () => {
      const stream = `counter-${randomUUID()}`;
      await handleCommand(store, stream, counter, { add: 5 }, metadata);
      // 40 at once, a quarter of them refused: the others must not notice.
      const commands: CounterCommand[] = Array.from({ length: 40 }, (_, i) => ({ add: i % 4 === 3 ? -100 : 1 }));
      const outcomes = await Promise.allSettled(commands.map((command) => handleCommand(store, stream, counter, command, metadata)));

      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused).to.have.length(10);
      for (const o of refused) expect((o as PromiseRejectedResult).reason).to.be.instanceOf(DomainError);
      const accepted = outcomes.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<{ events: CounterEvent[]; state: CounterState; position: unknown }>).value);
      expect(accepted).to.have.length(30);
      // Each answer is the state after its own command, in arrival order: totals 6, 7, 8, …
      expect(accepted.map((a) => a.state.total)).to.deep.equal(Array.from({ length: 30 }, (_, i) => 6 + i));
      for (const a of accepted) expect(a.events).to.have.length(1);

      const events = await store.readStream(stream);
      expect(events).to.have.length(31);
      expect(events.map((e) => e.revision)).to.deep.equal(events.map((_, i) => BigInt(i)));
      expect((await readState(store, stream, counter)).total).to.equal(35);
    });

    it('commands that waited together go to the store in one append, each still answered with its own outcome', async () => {
      const stream = `counter-${randomUUID()}`;
      await handleCommand(store, stream, counter, { add: 1 }, metadata);
      const appends: number[] = [];
      const counting = new Proxy(store, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (property !== 'append') return typeof value === 'function' ? value.bind(target) : value;
          return (...args: Parameters<PostgresEventStore['append']>) => {
            appends.push(args[1].length);
            return target.append(...args);
          };
        },
      });
      const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) =>
        handleCommand(counting, stream, counter, { add: i === 7 ? -1000 : 1 }, { actor: `command-${i}` })));
      expect(outcomes.filter((o) => o.status === 'rejected')).to.have.length(1);
      // The first runs alone; the 19 that queued behind it are decided together (one of them refused).
      expect(appends).to.deep.equal([1, 18]);
      const events = await store.readStream(stream);
      expect(events.map((e) => e.metadata.actor)).to.deep.equal([
        'test', ...Array.from({ length: 20 }, (_, i) => `command-${i}`).filter((_, i) => i !== 7)]);
      const totals = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.state.total] : []));
      expect(totals).to.deep.equal(Array.from({ length: 19 }, (_, i) => 2 + i));
    });

    it('a deterministic event id is appended once, however often its command arrives', async () => {
      const stream = `counter-${randomUUID()}`;
      const id = randomUUID();
      const idempotent: Decider<CounterCommand, CounterEvent, CounterState & { ids?: readonly string[] }> = {
        initialState: { total: 0, seen: [], ids: [] },
        decide: (command, state) => (command.id && state.ids?.includes(command.id) ? [] : counter.decide(command, state)),
        evolve: (state, event) => ({ ...counter.evolve(state, event), ids: [...(state.ids ?? []), ...(event.id ? [event.id] : [])] }),
      };
      const answers = await Promise.all(Array.from({ length: 10 }, () => handleCommand(store, stream, idempotent, { add: 7, id }, metadata)));
      expect(answers.filter((a) => a.events.length > 0)).to.have.length(1);
      const events = await store.readStream(stream);
      expect(events.map((e) => e.id)).to.deep.equal([id]);
    });

    it('requests run again under their keys, batched with new ones, answer with what their first run recorded', async () => {
      const stream = `counter-${randomUUID()}`;
      const keyed = (key: string) => ({ actor: 'test', requestKey: key });
      await handleCommand(store, stream, counter, { add: 3 }, metadata);
      // First runs: queued together, so all but the first are decided and appended as one batch.
      const first = await Promise.all(Array.from({ length: 8 }, (_, i) => handleCommand(store, stream, counter, { add: i < 3 ? -1 : 1 }, keyed(`k${i}`))));
      expect(first.map((a) => a.repeated)).to.deep.equal(Array.from({ length: 8 }, () => undefined));
      const recorded = await store.readStream(stream);
      expect(recorded).to.have.length(9);
      // The total drained to 0, then the same requests again, on another process (its own cache), with two new ones
      // among them. The three that took 1 are refused by the state now and find their first run's event; the five
      // that added decide the same ids again, which the store finds recorded (so the batch they joined is undone
      // and run one by one). Each answers with its first run's event, nothing appended; and the new request that
      // takes 1 is refused, as the five repeats added nothing.
      const other = new PostgresEventStore(database);
      try {
        await handleCommand(other, stream, counter, { add: -5 }, keyed('drain'));
        const again = await Promise.allSettled([
          ...Array.from({ length: 8 }, (_, i) => handleCommand(other, stream, counter, { add: i < 3 ? -1 : 1 }, keyed(`k${i}`))),
          handleCommand(other, stream, counter, { add: -1 }, keyed('new-refused')),
          handleCommand(other, stream, counter, { add: 2 }, keyed('new-added')),
        ]);
        for (const [i, outcome] of again.slice(0, 8).entries()) {
          expect(outcome.status, `request k${i}`).to.equal('fulfilled');
          const answer = (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof handleCommand<CounterCommand, CounterEvent, CounterState>>>>).value;
          expect(answer.repeated, `request k${i}`).to.equal(true);
          expect(answer.events.map((e) => e.id)).to.deep.equal([recorded[i + 1]!.id]);
          expect(answer.events[0]!.data).to.deep.equal({ amount: i < 3 ? -1 : 1 });
        }
        expect(again[8]!.status).to.equal('rejected');
        expect((again[8] as PromiseRejectedResult).reason).to.be.instanceOf(DomainError);
        expect(again[9]!.status).to.equal('fulfilled');
        const events = await store.readStream(stream);
        expect(events.map((e) => e.data)).to.deep.equal([
          ...recorded.map((e) => e.data), { amount: -5 }, { amount: 2 }]);
      } finally {
        await other.close();
      }
    });

    it('two processes racing on one stream: every command lands once, none is lost or doubled', async () => {
      const stream = `counter-${randomUUID()}`;
      const other = new PostgresEventStore(database);
      try {
        const work = Array.from({ length: 60 }, (_, i) => handleCommand(i % 2 ? store : other, stream, counter, { add: 1 }, metadata));
        const outcomes = await Promise.allSettled(work);
        const landed = outcomes.filter((o) => o.status === 'fulfilled').length;
        for (const o of outcomes) {
          // Only contention may refuse a command here, and it must say so.
          if (o.status === 'rejected') expect((o.reason as DomainError).kind).to.equal('contention');
        }
        const events = await store.readStream(stream);
        expect(events).to.have.length(landed);
        expect(landed).to.be.greaterThan(0);
      } finally {
        await other.close();
      }
    });

    it('a decider whose evolve grows its state in place (as the account’s does) loses nothing to a refused append', async () => {
      // The state is evolved only by events that were appended: an append another process beat must leave no
      // trace in the cached state, or the retry would take its own command for already applied.
      type Ids = { ids: Set<string> };
      const linear: Decider<{ id: string }, { type: 'Seen'; data: { id: string } }, Ids> = {
        get initialState() { return { ids: new Set<string>() }; },
        decide: (command, state) => (state.ids.has(command.id) ? [] : [{ type: 'Seen', data: { id: command.id } }]),
        evolve: (state, event) => { state.ids.add(event.data.id); return state; },
      };
      const stream = `linear-${randomUUID()}`;
      const other = new PostgresEventStore(database);
      try {
        const outcomes = await Promise.allSettled(Array.from({ length: 60 }, (_, i) =>
          handleCommand(i % 2 ? store : other, stream, linear, { id: `c${i}` }, metadata)));
        const landed = outcomes.filter((o) => o.status === 'fulfilled').length;
        const events = await store.readStream(stream);
        expect(events).to.have.length(landed);
        expect(new Set(events.map((e) => (e.data as { id: string }).id)).size).to.equal(landed);
      } finally {
        await other.close();
      }
    });
  });
}
