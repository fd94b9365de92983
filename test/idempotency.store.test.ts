import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { CLAIM_AND_COMPLETE_STATEMENT, COMPLETE_STATEMENT, IdempotencyStore } from '../src/http/idempotency.ts';
import { databaseTargets } from './support/targets.ts';

for (const target of databaseTargets()) {
  describe(`idempotency store, batched claims and answers: ${target.name}`, () => {
    let database: Database;
    let store: IdempotencyStore;
    before(async () => {
      database = await target.open();
      store = new IdempotencyStore(database);
    });
    after(async () => {
      await database?.close();
    });

    it('concurrent claims: each key is claimed once, by its first request; the repeat finds it in flight', async () => {
      const [a, b] = [randomUUID(), randomUUID()];
      const outcomes = await Promise.all([store.begin('s', a, 'h1'), store.begin('s', b, 'h2'), store.begin('s', a, 'h1')]);
      expect(outcomes.map((o) => o.kind)).to.deep.equal(['proceed', 'proceed', 'inFlight']);
    });

    it('a recorded answer replays for the same request and refuses another', async () => {
      const key = randomUUID();
      const first = await store.begin('s', key, 'h');
      expect(first.kind).to.equal('proceed');
      await store.complete('s', key, (first as { owner: string }).owner, 201, { id: 'x' });
      const [again, other] = await Promise.all([store.begin('s', key, 'h'), store.begin('s', key, 'different request')]);
      expect(again).to.deep.equal({ kind: 'replay', status: 201, body: { id: 'x' } });
      expect(other).to.deep.equal({ kind: 'mismatch' });
    });

    it('only the owner of a claim records its answer', async () => {
      const key = randomUUID();
      const first = await store.begin('s', key, 'h');
      await store.complete('s', key, randomUUID(), 200, { stolen: true });
      expect(await store.begin('s', key, 'h')).to.deep.equal({ kind: 'inFlight' });
      await store.complete('s', key, (first as { owner: string }).owner, 200, { mine: true });
      expect(await store.begin('s', key, 'h')).to.deep.equal({ kind: 'replay', status: 200, body: { mine: true } });
    });

    it('a completion and a claim made together share a statement, and a key completed and claimed at once replays the answer', async () => {
      const [done, fresh] = [randomUUID(), randomUUID()];
      const first = await store.begin('s', done, 'h');
      const [, claimedFresh, retried] = await Promise.all([
        store.complete('s', done, (first as { owner: string }).owner, 201, { id: 'done' }),
        store.begin('s', fresh, 'h'),
        // The same key claimed in the turn its answer is recorded: one statement cannot change its row twice.
        store.begin('s', done, 'h'),
      ]);
      expect(claimedFresh.kind).to.equal('proceed');
      expect(retried).to.deep.equal({ kind: 'replay', status: 201, body: { id: 'done' } });
      expect(await store.begin('s', done, 'h')).to.deep.equal({ kind: 'replay', status: 201, body: { id: 'done' } });
      expect(await store.begin('s', fresh, 'h')).to.deep.equal({ kind: 'inFlight' });
    });

    it('a write that fails in a shared statement fails alone: the claims beside it are taken', async () => {
      const [first, fresh] = [randomUUID(), randomUUID()];
      const claim = await store.begin('s', first, 'h');
      // Postgres's jsonb refuses a NUL character: this completion's own error.
      const [completion, claimed] = await Promise.allSettled([
        store.complete('s', first, (claim as { owner: string }).owner, 400, { message: 'bad \u0000 byte' }),
        store.begin('s', fresh, 'h'),
      ]);
      expect(completion.status).to.equal('rejected');
      expect(claimed).to.deep.include({ status: 'fulfilled' });
      expect((claimed as PromiseFulfilledResult<{ kind: string }>).value.kind).to.equal('proceed');
    });

    it('a completion reaches its row through the primary key, even with a plan made while the table was empty', async () => {
      // A new deployment's first plans see an empty table; a named statement keeps its generic plan, so that plan must
      // not scan the table (it once did: every completion read the whole table, the heaviest statement under load).
      const client = await database.pool.connect();
      try {
        // An empty table of the same shape, found first by the statement's unqualified name on this connection.
        await client.query('CREATE TEMP TABLE idempotency_keys (LIKE idempotency_keys INCLUDING ALL)');
        await client.query(`PREPARE completion(jsonb) AS ${COMPLETE_STATEMENT.text}`);
        await client.query(`PREPARE claim_and_completion(jsonb, integer, integer, integer, text[], boolean, text, integer, jsonb) AS ${CLAIM_AND_COMPLETE_STATEMENT.text}`);
        await client.query('SET plan_cache_mode = force_generic_plan');
        const completion = `'[{"scope":"s","key":"k","owner":"o","status":200,"body":{}}]'`;
        for (const execute of [`completion(${completion})`,
          `claim_and_completion('[{"scope":"s","key":"c","hash":"h","owner":"o"}]', 60, 60, NULL, '{}', false, 'i', 1, ${completion})`]) {
          const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${execute}`);
          const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
          expect(plan).to.match(/Index Scan using idempotency_keys_pkey/);
          expect(plan).not.to.match(/Seq Scan on idempotency_keys/);
        }
      } finally {
        await client.query('DEALLOCATE ALL; RESET plan_cache_mode; DROP TABLE IF EXISTS pg_temp.idempotency_keys').catch(() => undefined);
        client.release();
      }
    });
  });
}
