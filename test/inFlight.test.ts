import { expect } from 'chai';
import { InFlight } from '../src/projection/inFlight.ts';

describe('work in flight: what a reactor need not repeat', () => {
  it('nothing ran: the caller does the work', async () => {
    expect(await new InFlight().doneByAnother('a')).to.equal(false);
  });

  it('work running is waited for: done when it ends well, not done when it fails', async () => {
    const inFlight = new InFlight();
    let finish!: () => void;
    const running = inFlight.run('a', () => new Promise<string>((resolve) => { finish = () => resolve('answer'); }));
    let answered = false;
    const asked = inFlight.doneByAnother('a').then((done) => { answered = true; return done; });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered, 'answers only once the work ended').to.equal(false);
    finish();
    expect(await running).to.equal('answer');
    expect(await asked).to.equal(true);

    const failing = inFlight.run('b', () => Promise.reject(new Error('stopped')));
    const askedB = inFlight.doneByAnother('b');
    await failing.catch(() => undefined);
    expect(await askedB).to.equal(false);
    expect(await inFlight.doneByAnother('b'), 'a failure is not remembered as done').to.equal(false);
  });

  it('finished work is remembered within its bounds: the newest entries, for a while', async () => {
    const inFlight = new InFlight({ entries: 2, ms: 60_000 });
    for (const key of ['a', 'b', 'c']) await inFlight.run(key, async () => undefined);
    expect(await inFlight.doneByAnother('a'), 'the oldest, past the entries bound').to.equal(false);
    expect(await inFlight.doneByAnother('b')).to.equal(true);
    expect(await inFlight.doneByAnother('c')).to.equal(true);

    const brief = new InFlight({ entries: 10, ms: 5 });
    await brief.run('a', async () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await brief.doneByAnother('a'), 'past the time bound').to.equal(false);
  });
});
