/** A bounded memory: the newest entry set last, the oldest going first once the map is full. */
import { expect } from 'chai';
import { setBounded } from '../src/domain/boundedMap.ts';

describe('setBounded', () => {
  it('keeps at most max entries, dropping the oldest; an entry set again becomes the newest', () => {
    const map = new Map<string, number>();
    for (const [key, value] of [['a', 1], ['b', 2], ['c', 3]] as const) setBounded(map, 3, key, value);
    setBounded(map, 3, 'a', 10);
    expect([...map]).to.deep.equal([['b', 2], ['c', 3], ['a', 10]]);
    setBounded(map, 3, 'd', 4);
    expect([...map]).to.deep.equal([['c', 3], ['a', 10], ['d', 4]]);
  });
});
