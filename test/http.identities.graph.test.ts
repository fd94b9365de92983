/**
 * The parent/child graph of a client's identities is one consistency boundary: requests sent together that
 * would make a cycle or give a child two parents are decided one after the other, so exactly one succeeds.
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { identityGraphStream, identityStream } from '../src/identities/events.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type ApiResponse, type TestService } from './support/testService.ts';

/** Rounds of each race: a lost race shows up in a few of them, not every time. */
const ROUNDS = 20;
/** Requests on one client's graph at once: more than the command handler's attempts on a stream. */
const CONCURRENT_ADOPTIONS = 20;

for (const target of databaseTargets()) {
  describe(`identity graph under concurrent requests: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let sequence = 0;

    const identity = async () => {
      const response = await service.request('POST', '/identities', { headers, body: { type: 'USER', name: `Person ${++sequence}` } });
      expect(response.status, response.text).to.equal(201);
      return response.body.id as string;
    };
    const adopt = (parentId: string, childId: string) =>
      service.request('POST', `/identities/${parentId}/children`, { headers, body: { children: [childId] } });
    const get = async (id: string) => (await service.request('GET', `/identities/${id}`, { headers })).body;
    const remove = (id: string) => service.request('DELETE', `/identities/${id}`, { headers });
    const statuses = (responses: ApiResponse[]) => responses.map((r) => r.status).sort();

    before(async () => {
      database = await target.open();
      service = await startTestService(database);
      headers = await service.as(await service.createClient('Graph'));
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('"X adopts Y" and "Y adopts X" sent together: exactly one succeeds, the other is a 422 (cycle); then the child and the parent can be deleted', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [x, y] = [await identity(), await identity()];
        const [xAdoptsY, yAdoptsX] = await Promise.all([adopt(x, y), adopt(y, x)]);
        expect(statuses([xAdoptsY, yAdoptsX]), `round ${round}: ${xAdoptsY.text} | ${yAdoptsX.text}`).to.deep.equal([200, 422]);
        const [parent, child, refused] = xAdoptsY.status === 200 ? [x, y, yAdoptsX] : [y, x, xAdoptsY];
        expect(refused.body.message).to.match(/cycle/);

        const [parentRecord, childRecord] = [await get(parent), await get(child)];
        expect(parentRecord.parentId, `round ${round}: the parent has no parent`).to.equal(null);
        expect(parentRecord.children.map((c: { id: string }) => c.id)).to.deep.equal([child]);
        expect(childRecord.parentId).to.equal(parent);
        expect(childRecord.children).to.deep.equal([]);

        const parentFirst = await remove(parent);
        expect(parentFirst.status).to.equal(422);
        expect(parentFirst.body.message).to.match(/has children/);
        expect((await remove(child)).status).to.equal(200);
        expect((await remove(parent)).status).to.equal(200);
        expect((await service.request('GET', `/identities/${parent}`, { headers })).status).to.equal(404);
      }
    });

    it('two parents adopting one child together: exactly one succeeds, the other is a 422; the child has that one parent', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [first, second, child] = [await identity(), await identity(), await identity()];
        const [byFirst, bySecond] = await Promise.all([adopt(first, child), adopt(second, child)]);
        expect(statuses([byFirst, bySecond]), `round ${round}: ${byFirst.text} | ${bySecond.text}`).to.deep.equal([200, 422]);
        const [winner, loser, refused] = byFirst.status === 200 ? [first, second, bySecond] : [second, first, byFirst];
        expect(refused.body.message).to.match(/already has parent/);
        expect((await get(child)).parentId).to.equal(winner);
        expect((await get(winner)).children.map((c: { id: string }) => c.id)).to.deep.equal([child]);
        expect((await get(loser)).children).to.deep.equal([]);
      }
    });

    it('a parent deleted while it adopts a child: either the adoption is refused or the deletion is; never a child of a deleted parent', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [parent, child] = [await identity(), await identity()];
        const [adopted, deleted] = await Promise.all([adopt(parent, child), remove(parent)]);
        if (deleted.status === 200) {
          expect(adopted.status, `round ${round}: ${adopted.text}`).to.equal(404);
          expect((await get(child)).parentId).to.equal(null);
        } else {
          expect([adopted.status, deleted.status], `round ${round}: ${adopted.text} | ${deleted.text}`).to.deep.equal([200, 422]);
          expect((await get(child)).parentId).to.equal(parent);
        }
      }
    });

    it('adoptions of different children sent together all succeed: one graph per client serialises them without refusing any', async () => {
      const parent = await identity();
      const children = await Promise.all(Array.from({ length: CONCURRENT_ADOPTIONS }, () => identity()));
      const responses = await Promise.all(children.map((child) => adopt(parent, child)));
      for (const response of responses) expect(response.status, response.text).to.equal(200);
      expect((await get(parent)).children.map((c: { id: string }) => c.id)).to.have.members(children);
    });

    it('links made before the graph had a stream (on the children’s streams) still bind it: one parent, no cycle, no deletion of a parent; a cycle among them can be undone', async () => {
      const credentials = await service.createClient('Earlier links');
      const asEarlier = await service.as(credentials);
      const make = async (name: string) =>
        (await service.request('POST', '/identities', { headers: asEarlier, body: { type: 'USER', name } })).body.id as string;
      const [parent, child, other, x, y] = [await make('Parent'), await make('Child'), await make('Other'), await make('X'), await make('Y')];
      // What the earlier code recorded: the link on the child's own stream (x ↔ y: the cycle its race could make).
      const store = service.services.storage.store;
      const linkedBefore = (childId: string, parentId: string) => store.append(identityStream(childId),
        [{ type: 'IdentityParentSet', data: { identityId: childId, parentId, at: new Date().toISOString() }, metadata: { clientId: credentials.clientId } }], 'stream_exists');
      await linkedBefore(child, parent);
      await linkedBefore(x, y);
      await linkedBefore(y, x);
      const call = (method: string, path: string, body?: unknown) => service.request(method, path, { headers: asEarlier, ...(body ? { body } : {}) });

      const secondParent = await call('POST', `/identities/${other}/children`, { children: [child] });
      expect(secondParent.status, secondParent.text).to.equal(422);
      expect(secondParent.body.message).to.match(/already has parent/);
      const graph = await store.readStream(identityGraphStream(credentials.clientId));
      expect(graph.map((e) => e.type)).to.deep.equal([], 'a refusal records nothing, not even the links it started from');
      const cycle = await call('POST', `/identities/${child}/children`, { children: [parent] });
      expect(cycle.status).to.equal(422);
      expect(cycle.body.message).to.match(/cycle/);
      expect((await call('DELETE', `/identities/${parent}`)).status).to.equal(422);
      expect((await call('DELETE', `/identities/${x}`)).status).to.equal(422);

      expect((await call('DELETE', `/identities/${parent}/children`, { children: [child] })).status).to.equal(200);
      const started = await store.readStream(identityGraphStream(credentials.clientId));
      expect(started.map((e) => e.type)).to.deep.equal(['IdentityGraphSeeded', 'IdentityChildUnlinked']);
      expect((started[0]!.data as { links: unknown[] }).links).to.have.deep.members([
        { parentId: parent, childId: child }, { parentId: y, childId: x }, { parentId: x, childId: y }]);
      expect((await call('DELETE', `/identities/${parent}`)).status).to.equal(200);
      expect((await call('GET', `/identities/${child}`)).body.parentId).to.equal(null);

      expect((await call('DELETE', `/identities/${x}/children`, { children: [y] })).status).to.equal(200);
      expect((await call('DELETE', `/identities/${y}`)).status).to.equal(422);
      expect((await call('DELETE', `/identities/${x}`)).status).to.equal(200);
      expect((await call('DELETE', `/identities/${y}`)).status).to.equal(200);
    });
  });
}
