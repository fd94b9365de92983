import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { ChainChecker, esdbChainHash, type ChainedContent, type ChainProblem } from '../src/eventstore/esdb/chain.ts';

/** What EventStoreDB gives back: the JSON bytes the client wrote, parsed again. */
const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

function history(stream: string, datas: unknown[]): Array<{ event: ChainedContent; hash: string }> {
  let previous: string | null = null;
  return datas.map((data, i) => {
    const event: ChainedContent = {
      id: randomUUID(), stream, revision: BigInt(i), type: 'Happened', schemaVersion: 1, data, metadata: { actor: 'test', clientId: 'c-1' },
    };
    previous = esdbChainHash(previous, event);
    return { event, hash: previous };
  });
}

function check(events: Array<{ event: ChainedContent; hash: string | null }>): ChainProblem[] {
  const problems: ChainProblem[] = [];
  const checker = new ChainChecker((problem) => problems.push(problem));
  for (const { event, hash } of events) checker.check(event, hash);
  return problems;
}

describe('EventStoreDB hash chain (computed before the append, checked from the feed)', () => {
  it('a chain computed on append verifies from the data as it reads back, whatever JSON it holds', () => {
    fc.assert(fc.property(fc.array(fc.jsonValue(), { minLength: 1, maxLength: 8 }), (datas) => {
      const written = history(`s-${randomUUID()}`, datas);
      const read = written.map(({ event, hash }) => ({ event: { ...event, data: roundTrip(event.data), metadata: roundTrip(event.metadata) }, hash }));
      expect(check(read)).to.deep.equal([]);
    }), { numRuns: 200 });
  });

  it('names an altered event, a missing revision and an unchained event after chained ones', () => {
    const stream = `s-${randomUUID()}`;
    const events: Array<{ event: ChainedContent; hash: string | null }> = history(stream, [{ amount: '10.00' }, { amount: '20.00' }, { amount: '30.00' }, { amount: '40.00' }]);
    events[1] = { ...events[1]!, event: { ...events[1]!.event, data: { amount: '2000.00' } } };
    events.splice(2, 1);
    const problems = check(events);
    expect(problems.map((p) => [p.kind, p.revision])).to.deep.equal([['altered', '1'], ['missing', '2']]);
    expect(problems[0]!.message).to.contain(events[1]!.event.id);

    const other = `s-${randomUUID()}`;
    const chained: Array<{ event: ChainedContent; hash: string | null }> = history(other, [{ n: 1 }, { n: 2 }]);
    chained[1] = { ...chained[1]!, hash: null };
    expect(check(chained).map((p) => p.kind)).to.deep.equal(['unchained']);
  });

  it('events written before the chain existed are counted, not faulted, and the chain may start after them', () => {
    const stream = `s-${randomUUID()}`;
    const legacy = history(stream, [{ n: 1 }, { n: 2 }]).map(({ event }) => ({ event, hash: null as string | null }));
    const next: ChainedContent = { ...legacy[1]!.event, id: randomUUID(), revision: 2n, data: { n: 3 } };
    const problems: ChainProblem[] = [];
    const checker = new ChainChecker((problem) => problems.push(problem));
    for (const { event, hash } of [...legacy, { event: next, hash: esdbChainHash(null, next) }]) checker.check(event, hash);
    expect(problems).to.deep.equal([]);
    expect(checker.unchained).to.equal(2);
    expect(checker.streams).to.equal(1);
  });

  it('covers the metadata, the type and the position in the stream, not only the data', () => {
    const { event, hash } = history(`s-${randomUUID()}`, [{ n: 1 }])[0]!;
    for (const changed of [{ ...event, metadata: { ...event.metadata, actor: 'someone else' } }, { ...event, type: 'Other' },
      { ...event, schemaVersion: 2 }, { ...event, id: randomUUID() }]) {
      expect(esdbChainHash(null, changed)).not.to.equal(hash);
    }
  });
});

const esdb = process.env.EVENTSTORE_CONNECTION_STRING;
(esdb ? describe : describe.skip)('EventStoreDB hash chain on a live server (EVENTSTORE_CONNECTION_STRING)', () => {
  it('chains every append (exact, no_stream, any, stream_exists, repeats) and verifies the whole feed', async () => {
    const { EventStoreDbEventStore } = await import('../src/eventstore/esdb/eventStoreDbEventStore.ts');
    const store = new EventStoreDbEventStore({ connectionString: esdb! });
    try {
      const stream = `chain-${randomUUID()}`;
      const ids = [randomUUID(), randomUUID()];
      await store.append(stream, [{ id: ids[0], type: 'A', data: { n: 1 } }, { id: ids[1], type: 'B', data: { n: 2 } }], 'no_stream');
      await store.append(stream, [{ id: ids[0], type: 'A', data: { n: 1 } }, { id: ids[1], type: 'B', data: { n: 2 } }], 'no_stream');
      await store.append(stream, [{ type: 'C', data: { n: 3 }, metadata: { actor: 'test' } }], 1n);
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(stream, [{ type: 'D', data: { i } }], i % 2 ? 'any' : 'stream_exists')));
      const events = await store.readStream(stream);
      expect(events).to.have.length(23);
      for (const event of events) expect(event.metadata).not.to.have.property('chainHash');
      const report = await store.verifyChains();
      expect(report.problems).to.deep.equal([]);
      expect(report.events).to.be.at.least(23);
    } finally {
      await store.close();
    }
  });
});
