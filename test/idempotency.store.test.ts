import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { IdempotencyStore } from '../src/http/idempotency.ts';
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
  });
}
