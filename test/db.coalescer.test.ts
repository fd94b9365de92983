import { expect } from 'chai';
import { Coalescer } from '../src/db/coalescer.ts';

/** A batch runner that records its batches and answers when told to. */
function recorder() {
  const batches: number[][] = [];
  const pending: Array<() => void> = [];
  const run = (inputs: number[]) => {
    batches.push(inputs);
    return new Promise<number[]>((resolve) => pending.push(() => resolve(inputs.map((n) => n * 10))));
  };
  /** Answers batches as they come until a few turns of the event loop bring no new one. */
  const releaseAll = async () => {
    for (let quietTurns = 0; quietTurns < 3;) {
      if (pending.length > 0) {
        pending.shift()!();
        quietTurns = 0;
      } else {
        quietTurns++;
      }
      await new Promise((r) => setImmediate(r));
    }
  };
  return { batches, run, releaseAll };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('coalescer (group commit of small statements)', () => {
  it('runs a lone call on the next turn of the event loop, alone', async () => {
    const r = recorder();
    const coalescer = new Coalescer(r.run, { maxInFlight: 1 });
    const answer = coalescer.submit(1);
    expect(r.batches).to.deep.equal([]);
    await nextTurn();
    expect(r.batches).to.deep.equal([[1]]);
    await r.releaseAll();
    expect(await answer).to.equal(10);
  });

  it('batches the calls of one turn, and puts those made while a batch is in flight into the next, each answered in order', async () => {
    const r = recorder();
    const coalescer = new Coalescer(r.run, { maxInFlight: 1 });
    const answers = [1, 2].map((n) => coalescer.submit(n));
    await nextTurn();
    answers.push(...[3, 4, 5].map((n) => coalescer.submit(n)));
    await nextTurn();
    expect(r.batches).to.deep.equal([[1, 2]]);
    await r.releaseAll();
    expect(await Promise.all(answers)).to.deep.equal([10, 20, 30, 40, 50]);
    expect(r.batches).to.deep.equal([[1, 2], [3, 4, 5]]);
  });

  it('a lazy call waits for a batch another call sets off, or for its caller to send it', async () => {
    const r = recorder();
    const coalescer = new Coalescer(r.run, { maxInFlight: 1 });
    const lazy = coalescer.submit(1, { lazy: true });
    await nextTurn();
    await nextTurn();
    expect(r.batches, 'no batch for a lazy call alone').to.deep.equal([]);
    const eager = coalescer.submit(2);
    await nextTurn();
    expect(r.batches, 'the lazy call rides with the next batch').to.deep.equal([[1, 2]]);
    await r.releaseAll();
    expect(await Promise.all([lazy, eager])).to.deep.equal([10, 20]);

    const alone = coalescer.submit(3, { lazy: true });
    await nextTurn();
    expect(r.batches).to.have.length(1);
    coalescer.sendWaiting();
    await nextTurn();
    expect(r.batches, 'sent when its caller needs it').to.deep.equal([[1, 2], [3]]);
    await r.releaseAll();
    expect(await alone).to.equal(30);
  });

  it('bounds batches by maxBatch and overlaps at most maxInFlight of them', async () => {
    const r = recorder();
    const coalescer = new Coalescer(r.run, { maxBatch: 2, maxInFlight: 2 });
    const answers = [1, 2, 3, 4, 5, 6, 7].map((n) => coalescer.submit(n));
    await nextTurn();
    expect(r.batches).to.deep.equal([[1, 2], [3, 4]]);
    await r.releaseAll();
    expect(await Promise.all(answers)).to.deep.equal([10, 20, 30, 40, 50, 60, 70]);
    expect(r.batches.every((b) => b.length <= 2)).to.equal(true);
    expect(r.batches.flat()).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
  });

  it('rejects every call of a failed batch, and the next batch still runs', async () => {
    let calls = 0;
    const coalescer = new Coalescer<number, number>(async (inputs) => {
      calls++;
      if (calls === 1) throw new Error('database went away');
      return inputs;
    }, { maxInFlight: 1 });
    const failed = Promise.allSettled([coalescer.submit(1), coalescer.submit(2)]);
    await nextTurn();
    const next = await Promise.allSettled([coalescer.submit(3)]);
    const results = [...(await failed), ...next];
    for (const result of results.slice(0, 2)) {
      expect(result.status).to.equal('rejected');
      expect(String((result as PromiseRejectedResult).reason)).to.match(/database went away/);
    }
    expect(results[2]).to.deep.equal({ status: 'fulfilled', value: 3 });
    expect(calls).to.equal(2);
  });

  it('a runner answering the wrong number of outputs fails its batch', async () => {
    const coalescer = new Coalescer<number, number>(async () => [], { maxInFlight: 1 });
    let caught: unknown;
    await coalescer.submit(1).catch((error: unknown) => { caught = error; });
    expect(String(caught)).to.match(/answered 0 of 1/);
  });
});
