import { expect } from 'chai';
import fc from 'fast-check';
import { pageOfResults, pageRequest } from '../src/http/pagination.ts';
import { parseApiVersion } from '../src/http/apiVersion.ts';
import { HttpError } from '../src/http/errors.ts';
import { compileValidator } from '../src/http/validation.ts';
import { pageQueryProperties } from '../schemas/common.ts';

describe('list helpers', () => {
  const validateQuery = compileValidator('query', { type: 'object', additionalProperties: false, properties: pageQueryProperties });

  it('defaults to 50 from offset 0, caps at 500, and takes a cursor in place of the offset', () => {
    expect(pageRequest(validateQuery({}) as object)).to.deep.equal({ limit: 50, offset: 0 });
    expect(pageRequest({ limit: 10, offset: 20 })).to.deep.equal({ limit: 10, offset: 20 });
    expect(pageRequest({ limit: 10, cursor: '30' })).to.deep.equal({ limit: 10, offset: 30 });
    expect(pageRequest({ limit: 100_000 })).to.deep.equal({ limit: 500, offset: 0 });
  });

  it('refuses bad limits, offsets and cursors naming the parameter', () => {
    for (const [query, field] of [[{ limit: '0' }, 'limit'], [{ limit: '501' }, 'limit'], [{ limit: 'ten' }, 'limit'],
      [{ offset: '-1' }, 'offset'], [{ cursor: 'abc' }, 'cursor'], [{ page: '2' }, 'page']] as const) {
      expect(() => validateQuery(query)).to.throw(HttpError, new RegExp(field));
    }
  });

  it('paging through any total visits every item once (property)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 1, max: 500 }), (total, limit) => {
      const items = Array.from({ length: total }, (_, i) => i);
      const seen: number[] = [];
      let query: { limit: number; cursor?: string } = { limit };
      for (let guard = 0; guard <= total + 1; guard++) {
        const page = pageRequest(query);
        const slice = items.slice(page.offset, page.offset + page.limit);
        const answer = pageOfResults(slice, total, page);
        expect(answer.pagination.count).to.equal(slice.length);
        expect(answer.pagination.total).to.equal(total);
        expect(answer.pagination.previous).to.equal(Math.max(page.offset - limit, 0));
        seen.push(...answer.results);
        if (answer.pagination.next >= total) break;
        query = { limit, cursor: String(answer.pagination.next) };
      }
      expect(seen).to.deep.equal(items);
    }));
  });

  it('service-api-version: absent or empty is v1, 24-04-2025 is v2, anything else is a 400', () => {
    expect(parseApiVersion(undefined)).to.equal(1);
    expect(parseApiVersion('')).to.equal(1);
    expect(parseApiVersion('24-04-2025')).to.equal(2);
    for (const bad of ['2', 'v2', '2025-04-24', '24-04-2026']) {
      try {
        parseApiVersion(bad);
        expect.fail(`accepted ${bad}`);
      } catch (error) {
        expect(error).to.be.instanceOf(HttpError);
        expect((error as HttpError).statusCode).to.equal(400);
        expect((error as HttpError).message).to.match(/service-api-version/);
      }
    }
  });
});
