/**
 * A statement with its parameters written in as literals answers what it answers with them sent apart, whatever
 * their type, and `$n` inside quotes, quoted names, dollar quotes and comments is left as written.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import pg from 'pg';
import type { Database } from '../src/db/database.ts';
import { inlineParameters, quoteLiteral } from '../src/db/inlineSql.ts';
import { databaseTargets } from './support/targets.ts';

describe('a string written as an SQL literal', () => {
  it("is quoted exactly as node-postgres's escapeLiteral quotes it, quotes and backslashes included", () => {
    const tricky = fc.constantFrom("'", '\\', "''", '\\\\', "\\'", 'E', '$1', '"', '\n', 'é', '💸');
    fc.assert(fc.property(fc.array(fc.oneof(fc.string(), tricky)).map((parts) => parts.join('')), (text) => {
      expect(quoteLiteral(text)).to.equal(pg.escapeLiteral(text));
    }), { numRuns: 2_000 });
  });
});

for (const target of databaseTargets()) {
  describe(`statements with their parameters written in: ${target.name}`, () => {
    let database: Database;
    before(async () => { database = await target.open(); });
    after(async () => { await database?.close(); });

    it('answers as the statement with its parameters sent apart, for every kind of value', async () => {
      const text = `SELECT $1::text AS t, $2::integer AS i, $3::numeric AS d, $4::jsonb AS j, $5::timestamptz AS at,
        $6::text[] AS a, $7::bytea AS b, $8::boolean AS yes, $9::text AS nothing, $10::bigint AS big, $11 AS untyped`;
      const values = [
        String.raw`it's \ a 'quoted' "string" with $1 and E'\n'`, 42, '10.50', { nested: { a: [1, 'two', null] }, quote: "o'clock" },
        new Date('2026-11-27T06:00:00.123Z'), ['a', "b'c", 'd,e', 'f"g', null], Buffer.from([0, 1, 255]), true, null, 9007199254740993n, 'plain',
      ];
      const apart = (await database.query(text, values)).rows;
      const inlined = (await database.query(inlineParameters(text, values))).rows;
      expect(inlined).to.deep.equal(apart);
    });

    it('reads back every string it quotes, in whichever form', async () => {
      const texts = ['', 'plain', "o'clock", String.raw`back\slash`, String.raw`both ' and \ and \'`, String.raw`E'\x41'`, 'ends with \\'];
      const { rows } = await database.query(`SELECT ${texts.map((text, i) => `${quoteLiteral(text)}::text AS t${i}`).join(', ')}`);
      expect(Object.values(rows[0]!)).to.deep.equal(texts);
    });

    it('leaves $n inside quotes, quoted names, dollar quotes and comments as written', async () => {
      const text = String.raw`SELECT '$1' AS "quoted $1", $1::text AS p, $$ $1 $$ AS dollar, $tag$ '$2' $tag$ AS tagged -- $2
        /* $2 */, $2::integer AS q, E'\' $1' AS escaped`;
      const { rows } = await database.query(inlineParameters(text, ['one', 2]));
      expect(rows).to.deep.equal([{ 'quoted $1': '$1', p: 'one', dollar: ' $1 ', tagged: " '$2' ", q: 2, escaped: "' $1" }]);
    });

    it('reads comments as Postgres does (nested, ended by a carriage return), a long dollar tag, and $ inside a name', async () => {
      const tag = `$${'t'.repeat(70)}$`;
      const text = `SELECT /* outer /* inner $1 */ still $1 */ $1::text AS p, -- $2
 $2::integer AS q, ${tag} $1 ${tag} AS long,
        "a$1" AS b$2 FROM (SELECT 'x' AS "a$1") AS t`;
      const { rows } = await database.query(inlineParameters(text, ['*/ one', 2]));
      expect(rows).to.deep.equal([{ p: '*/ one', q: 2, long: ' $1 ', b$2: 'x' }]);
    });

    it('refuses a statement it cannot read (a quote left open), a parameter with no value, and a NUL', () => {
      expect(() => inlineParameters("SELECT 'open $1", [1])).to.throw(/unterminated/);
      expect(() => inlineParameters('SELECT $2', [1])).to.throw(/no value for \$2/);
      // The text goes as a C string: a NUL would cut it short.
      expect(() => inlineParameters('SELECT $1', ['a\u0000b'])).to.throw(/NUL/);
    });
  });
}
