import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import type { Credentials, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';

for (const target of databaseTargets()) {
  describe(`identities over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let alice: Credentials;
    let bob: Credentials;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    const create = (headers: Record<string, string>, body: Record<string, unknown>) => service.request('POST', '/identities', { headers, body });

    let tenants: TwoTenants;

    before(async () => {
      tenants = await startTwoTenants(target);
      ({ database, service, alice, bob, asAlice, asBob } = tenants);
    });
    after(async () => {
      await tenants?.close();
    });

    it('creates, reads, updates and deletes an identity', async () => {
      const created = await create(asAlice, { type: 'USER', name: 'Ana', lastname: 'Pérez', email: 'Ana@Example.com',
        phone: '+56912345678', documentNumber: '12.345.678-9', documentType: 'RUT', country: 'CHL', externalId: 'ext-1',
        rules: { maxDaily: '1000' } });
      expect(created.status).to.equal(201);
      expect(created.body).to.include({ type: 'USER', name: 'Ana', status: 'PENDING', country: 'CHL', email: 'ana@example.com' });
      expect(created.body.securityOptions.accessControl.scopes).to.deep.equal([]);
      const id = created.body.id as string;

      const fetched = await service.request('GET', `/identities/${id}`, { headers: asAlice });
      expect(fetched.body).to.deep.equal(created.body);

      const patched = await service.request('PATCH', `/identities/${id}`, { headers: asAlice, body: { nickname: 'Anita', gender: 'FEMALE', country: 'ARG' } });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ nickname: 'Anita', gender: 'FEMALE', country: 'ARG', name: 'Ana' });

      const activated = await service.operator('POST', `/operator/identities/${id}/status`, { status: 'ACTIVE' });
      expect(activated.body.status).to.equal('ACTIVE');

      const deleted = await service.request('DELETE', `/identities/${id}`, { headers: asAlice });
      expect(deleted.status).to.equal(200);
      expect(deleted.text).to.equal('');
      expect((await service.request('GET', `/identities/${id}`, { headers: asAlice })).status).to.equal(404);
    });

    for (const [label, body, field] of [
      ['a bad type', { type: 'ROBOT', name: 'x' }, /type/],
      ['a missing name', { type: 'USER' }, /name/],
      ['a bad email', { type: 'USER', name: 'x', email: 'not-an-email' }, /email/],
      ['a phone without country code', { type: 'USER', name: 'x', phone: '912345678' }, /phone/],
      ['an unknown country', { type: 'USER', name: 'x', country: 'XYZ' }, /country/],
      ['an alpha-2 country', { type: 'USER', name: 'x', country: 'CL' }, /country/],
      ['a bad document type', { type: 'USER', name: 'x', documentType: 'LICENSE' }, /documentType/],
      ['an unknown field', { type: 'USER', name: 'x', favouriteColour: 'blue' }, /favouriteColour/],
    ] as Array<[string, Record<string, unknown>, RegExp]>) {
      it(`refuses ${label} with a 400 naming the field`, async () => {
        const before = await service.eventCount();
        const response = await create(asAlice, body);
        expect(response.status).to.equal(400);
        expect(response.body.message).to.match(field);
        expect(await service.eventCount()).to.equal(before);
      });
    }

    it('another client’s identity is a 404 everywhere', async () => {
      const bobs = (await create(asBob, { type: 'ORGANIZATION', name: 'Bob Corp' })).body.id as string;
      for (const [method, path, body] of [
        ['GET', `/identities/${bobs}`, undefined], ['PATCH', `/identities/${bobs}`, { name: 'x' }],
        ['DELETE', `/identities/${bobs}`, undefined], ['POST', `/identities/${bobs}/rules`, { resource: 'ACCOUNT', reference: 'a', permissions: ['READ'] }],
        ['POST', `/identities/${bobs}/children`, { children: ['x'] }],
      ] as Array<[string, string, unknown]>) {
        const response = await service.request(method, path, { headers: asAlice, ...(body ? { body } : {}) });
        expect(response.status, `${method} ${path}`).to.equal(404);
      }
      expect((await service.request('GET', '/identities/does-not-exist', { headers: asAlice })).status).to.equal(404);
    });

    it('children: same client only, no cycles, one parent; the parent lists {id, name, email}', async () => {
      const org = (await create(asAlice, { type: 'ORGANIZATION', name: 'Org', email: 'org@example.com' })).body.id as string;
      const kid1 = (await create(asAlice, { type: 'USER', name: 'Kid One', email: 'one@example.com' })).body.id as string;
      const kid2 = (await create(asAlice, { type: 'USER', name: 'Kid Two' })).body.id as string;
      const otherOrg = (await create(asAlice, { type: 'ORGANIZATION', name: 'Other' })).body.id as string;
      const bobs = (await create(asBob, { type: 'USER', name: 'Bob Kid' })).body.id as string;

      const linked = await service.request('POST', `/identities/${org}/children`, { headers: asAlice, body: { children: [kid1, kid2] } });
      expect(linked.status).to.equal(200);
      expect(linked.body.children).to.deep.equal([
        { id: kid1, name: 'Kid One', email: 'one@example.com' }, { id: kid2, name: 'Kid Two', email: null }]);

      const foreign = await service.request('POST', `/identities/${org}/children`, { headers: asAlice, body: { children: [bobs] } });
      expect(foreign.status).to.equal(404);
      const cycle = await service.request('POST', `/identities/${kid1}/children`, { headers: asAlice, body: { children: [org] } });
      expect(cycle.status).to.equal(422);
      expect(cycle.body.message).to.match(/cycle/);
      const self = await service.request('POST', `/identities/${org}/children`, { headers: asAlice, body: { children: [org] } });
      expect(self.status).to.equal(422);
      const secondParent = await service.request('POST', `/identities/${otherOrg}/children`, { headers: asAlice, body: { children: [kid1] } });
      expect(secondParent.status).to.equal(422);
      expect(secondParent.body.message).to.match(/already has parent/);
      const refusedDelete = await service.request('DELETE', `/identities/${org}`, { headers: asAlice });
      expect(refusedDelete.status).to.equal(422);

      const removed = await service.request('DELETE', `/identities/${org}/children`, { headers: asAlice, body: { children: [kid1] } });
      expect(removed.status).to.equal(200);
      expect(removed.body.children.map((c: { id: string }) => c.id)).to.deep.equal([kid2]);
      const notChild = await service.request('DELETE', `/identities/${org}/children`, { headers: asAlice, body: { children: [kid1] } });
      expect(notChild.status).to.equal(422);
      const moved = await service.request('POST', `/identities/${otherOrg}/children`, { headers: asAlice, body: { children: [kid1] } });
      expect(moved.body.children.map((c: { id: string }) => c.id)).to.deep.equal([kid1]);
    });

    it('children: POST and DELETE also take the interface’s bare array of ids; a bad array is a 400 that links nothing', async () => {
      const org = (await create(asAlice, { type: 'ORGANIZATION', name: 'Array Org' })).body.id as string;
      const kid1 = (await create(asAlice, { type: 'USER', name: 'Array One' })).body.id as string;
      const kid2 = (await create(asAlice, { type: 'USER', name: 'Array Two' })).body.id as string;
      const children = (body: unknown, method = 'POST') => service.request(method, `/identities/${org}/children`, { headers: asAlice, body });

      const linked = await children([kid1, kid2]);
      expect(linked.status, linked.text).to.equal(200);
      expect(linked.body.children.map((c: { id: string }) => c.id)).to.have.members([kid1, kid2]);
      const removed = await children([kid1], 'DELETE');
      expect(removed.status, removed.text).to.equal(200);
      expect(removed.body.children.map((c: { id: string }) => c.id)).to.deep.equal([kid2]);
      expect((await children({ children: [kid2] }, 'DELETE')).body.children).to.deep.equal([]);

      const before = await service.eventCount();
      for (const bad of [[], [kid1, kid1], [kid1, 7], ['not an id!'], { children: [kid1], extra: true }]) {
        const refused = await children(bad);
        expect(refused.status, JSON.stringify(bad)).to.equal(400);
        expect(refused.body.message).to.match(/body/);
      }
      expect(await service.eventCount()).to.equal(before);
    });

    it('access rules appear in securityOptions.accessControl.scopes and can be removed', async () => {
      const id = (await create(asAlice, { type: 'USER', name: 'Ruled' })).body.id as string;
      const granted = await service.request('POST', `/identities/${id}/rules`, { headers: asAlice,
        body: { resource: 'ACCOUNT', reference: 'acc-1', permissions: ['READ', 'TRANSFER'] } });
      expect(granted.status).to.equal(201);
      expect(granted.body.securityOptions.accessControl.scopes).to.deep.equal([
        { resource: 'ACCOUNT', reference: 'acc-1', permissions: ['READ', 'TRANSFER'] }]);
      const partial = await service.request('DELETE', `/identities/${id}/rules`, { headers: asAlice,
        body: { resource: 'ACCOUNT', reference: 'acc-1', permissions: ['TRANSFER'] } });
      expect(partial.status).to.equal(200);
      const after = await service.request('GET', `/identities/${id}`, { headers: asAlice });
      expect(after.body.securityOptions.accessControl.scopes).to.deep.equal([{ resource: 'ACCOUNT', reference: 'acc-1', permissions: ['READ'] }]);
      await service.request('DELETE', `/identities/${id}/rules`, { headers: asAlice, body: { resource: 'ACCOUNT', reference: 'acc-1' } });
      const empty = await service.request('GET', `/identities/${id}`, { headers: asAlice });
      expect(empty.body.securityOptions.accessControl.scopes).to.deep.equal([]);
      const missing = await service.request('DELETE', `/identities/${id}/rules`, { headers: asAlice, body: { resource: 'ACCOUNT', reference: 'acc-1' } });
      expect(missing.status).to.equal(404);
    });

    it('list filters and paging match a model of what was created', async () => {
      const carol = await service.createClient('Carol');
      const asCarol = await service.as(carol);
      const countries = ['CHL', 'ARG', 'MEX', 'COL'];
      const model: Array<{ id: string; type: string; email: string | null; country: string; documentNumber: string; phone: string; status: string }> = [];
      for (let i = 0; i < 36; i++) {
        const body = { type: i % 3 === 0 ? 'ORGANIZATION' : 'USER', name: `Person ${i}`, country: countries[i % 4],
          documentNumber: `DOC-${i % 5}`, phone: `+5691234${String(i).padStart(4, '0')}`, ...(i % 2 ? { email: `p${i % 6}@example.com` } : {}) };
        const created = await create(asCarol, body);
        model.unshift({ id: created.body.id, type: body.type, email: created.body.email, country: body.country!,
          documentNumber: body.documentNumber, phone: body.phone, status: 'PENDING' });
      }
      for (const entry of model.filter((_, i) => i % 7 === 0)) {
        await service.operator('POST', `/operator/identities/${entry.id}/status`, { status: 'ACTIVE' });
        entry.status = 'ACTIVE';
      }
      const list = async (query: string) => {
        const ids: string[] = [];
        let cursor: string | undefined;
        let total = -1;
        for (;;) {
          const response = await service.request('GET', `/identities?limit=7${query}${cursor ? `&cursor=${cursor}` : ''}`, { headers: asCarol });
          expect(response.status).to.equal(200);
          ids.push(...response.body.results.map((r: { id: string }) => r.id));
          total = response.body.pagination.total;
          if (response.body.pagination.next >= total) break;
          cursor = String(response.body.pagination.next);
        }
        expect(ids.length).to.equal(total);
        return ids;
      };
      const expectIds = (filter: (m: (typeof model)[number]) => boolean) => model.filter(filter).map((m) => m.id);
      expect(await list('')).to.deep.equal(expectIds(() => true));
      expect(await list('&type=ORGANIZATION')).to.deep.equal(expectIds((m) => m.type === 'ORGANIZATION'));
      expect(await list('&country=MEX')).to.deep.equal(expectIds((m) => m.country === 'MEX'));
      expect(await list('&email=P3@EXAMPLE.COM')).to.deep.equal(expectIds((m) => m.email === 'p3@example.com'));
      expect(await list('&documentNumber=DOC-2')).to.deep.equal(expectIds((m) => m.documentNumber === 'DOC-2'));
      expect(await list(`&phone=${encodeURIComponent(model[3]!.phone)}`)).to.deep.equal([model[3]!.id]);
      expect(await list('&status=ACTIVE&type=USER')).to.deep.equal(expectIds((m) => m.status === 'ACTIVE' && m.type === 'USER'));
      expect((await service.request('GET', '/identities?status=DONE', { headers: asCarol })).status).to.equal(400);
      expect((await service.request('GET', '/identities?limit=501', { headers: asCarol })).status).to.equal(400);
      expect((await service.request('GET', '/identities?country=XX', { headers: asCarol })).status).to.equal(400);
      // Another client sees none of them.
      const bobsView = await service.request('GET', '/identities?limit=500', { headers: asBob });
      const carolsIds = new Set(model.map((m) => m.id));
      expect(bobsView.body.results.filter((r: { id: string }) => carolsIds.has(r.id))).to.deep.equal([]);
    });
  });
}
