import { expect } from 'chai';
import { functionLengths, MAX_FUNCTION_LINES } from '../scripts/functionLengths.ts';

describe('function lengths of src/ and projections/', () => {
  it(`holds every function to at most ${MAX_FUNCTION_LINES} lines`, () => {
    const all = functionLengths();
    // The walk found the code: an empty list would pass whatever the code holds.
    expect(all.length).to.be.greaterThan(100);
    const over = all.filter((f) => f.lines > MAX_FUNCTION_LINES).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(over, `split these functions (the limit is ${MAX_FUNCTION_LINES} lines)`).to.deep.equal([]);
  });
});
