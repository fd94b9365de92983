import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import type { Credentials, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';

const today = () => {
  const d = new Date();
  return `${String(d.getUTCDate()).padStart(2, '0')}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${d.getUTCFullYear()}`;
};
const yesterday = () => {
  const d = new Date(Date.now() - 86_400_000);
  return `${String(d.getUTCDate()).padStart(2, '0')}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${d.getUTCFullYear()}`;
};

for (const target of databaseTargets()) {
  describe(`accounts over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let alice: Credentials;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    let ana: string;
    let bobIdentity: string;

    const identity = async (headers: Record<string, string>, name: string, country = 'CHL') =>
      (await service.request('POST', '/identities', { headers, body: { type: 'USER', name, country } })).body.id as string;
    const open = (headers: Record<string, string>, body: Record<string, unknown>) => service.request('POST', '/accounts', { headers, body });
    const adjust = (id: string, amount: string) => service.operator('POST', `/operator/accounts/${id}/adjustments`, { amount, reason: 'test deposit' });

    let tenants: TwoTenants;

    before(async () => {
      tenants = await startTwoTenants(target);
      ({ database, service, alice, asAlice, asBob } = tenants);
      ana = await identity(asAlice, 'Ana');
      bobIdentity = await identity(asBob, 'Bobby');
    });
    after(async () => {
      await tenants?.close();
    });

    it('opens, reads, updates, blocks and deletes an account', async () => {
      const created = await open(asAlice, { identityId: ana, type: 'CHECKING', currency: 'CLP', name: 'Main', externalId: 'acc-1' });
      expect(created.status).to.equal(201);
      expect(created.body).to.include({ identityId: ana, type: 'CHECKING', custody: 'PLATFORM', currency: 'CLP', name: 'Main',
        status: 'ACTIVE', balance: '0', availableFunds: '0', accountHolder: 'Ana', country: 'CHL', parentId: null });
      expect(created.body.accountNumber).to.match(/^\d{12}$/);
      const id = created.body.id as string;
      expect((await service.request('GET', `/accounts/${id}`, { headers: asAlice })).body).to.deep.equal(created.body);

      const blocked = await service.request('PATCH', `/accounts/${id}`, { headers: asAlice, body: { status: 'BLOCKED', name: 'Frozen' } });
      expect(blocked.body).to.include({ status: 'BLOCKED', name: 'Frozen' });
      expect((await service.request('GET', `/accounts/${id}`, { headers: asAlice })).body.status).to.equal('BLOCKED');

      expect((await service.request('DELETE', `/accounts/${id}`, { headers: asAlice })).status).to.equal(200);
      expect((await service.request('GET', `/accounts/${id}`, { headers: asAlice })).status).to.equal(404);
    });

    it('balances move with operator adjustments; an account with funds cannot be deleted; the trial balance is zero', async () => {
      const usd = (await open(asAlice, { identityId: ana, type: 'SAVINGS', currency: 'USD' })).body.id as string;
      const deposited = await adjust(usd, '125.50');
      expect(deposited.status).to.equal(201);
      expect(deposited.body).to.include({ balance: '125.50', availableFunds: '125.50' });
      expect((await adjust(usd, '-25.5')).body.balance).to.equal('100.00');
      const refused = await service.request('DELETE', `/accounts/${usd}`, { headers: asAlice });
      expect(refused.status).to.equal(422);
      expect(refused.body.message).to.match(/zero balance/);
      const tooPrecise = await adjust(usd, '1.234');
      expect(tooPrecise.status).to.equal(400);
      expect(tooPrecise.body.message).to.match(/amount/);
      expect((await adjust(usd, '0')).status).to.equal(422);
      const trial = await database.query<{ currency: string; total: string; balanced: boolean }>(`SELECT currency, balance_sum::text AS total, balanced FROM trial_balance`);
      expect(trial.rows.length).to.be.greaterThan(0);
      for (const row of trial.rows) expect([row.currency, Number(row.total), row.balanced]).to.deep.equal([row.currency, 0, true]);
      await adjust(usd, '-100');
      expect((await service.request('DELETE', `/accounts/${usd}`, { headers: asAlice })).status).to.equal(200);
    });

    it('sub-accounts share the parent’s identity and currency', async () => {
      const parent = (await open(asAlice, { identityId: ana, type: 'CHECKING', currency: 'MXN' })).body.id as string;
      const child = await open(asAlice, { identityId: ana, type: 'SAVINGS', currency: 'MXN', parentId: parent });
      expect(child.status).to.equal(201);
      expect(child.body.parentId).to.equal(parent);
      const mismatch = await open(asAlice, { identityId: ana, type: 'SAVINGS', currency: 'USD', parentId: parent });
      expect(mismatch.status).to.equal(400);
      expect(mismatch.body.message).to.match(/currency/);
      const otherIdentity = await identity(asAlice, 'Other');
      expect((await open(asAlice, { identityId: otherIdentity, type: 'SAVINGS', currency: 'MXN', parentId: parent })).status).to.equal(400);
    });

    for (const [label, body, field] of [
      ['a bad type', { type: 'PIGGY', currency: 'CLP' }, /type/],
      ['an unknown currency', { type: 'CHECKING', currency: 'XXX' }, /currency/],
      ['an unknown field', { type: 'CHECKING', currency: 'CLP', color: 'red' }, /color/],
      ['a missing currency', { type: 'CHECKING' }, /currency/],
    ] as Array<[string, Record<string, unknown>, RegExp]>) {
      it(`refuses ${label} with a 400 naming the field`, async () => {
        const response = await open(asAlice, { identityId: ana, ...body });
        expect(response.status).to.equal(400);
        expect(response.body.message).to.match(field);
      });
    }

    it('another client’s account or identity is a 404', async () => {
      const bobs = (await open(asBob, { identityId: bobIdentity, type: 'CHECKING', currency: 'CLP' })).body.id as string;
      for (const [method, path, body] of [['GET', `/accounts/${bobs}`], ['PATCH', `/accounts/${bobs}`, { name: 'x' }], ['DELETE', `/accounts/${bobs}`]] as Array<[string, string, unknown]>) {
        expect((await service.request(method, path, { headers: asAlice, ...(body ? { body } : {}) })).status, `${method} ${path}`).to.equal(404);
      }
      expect((await open(asAlice, { identityId: bobIdentity, type: 'CHECKING', currency: 'CLP' })).status).to.equal(404);
      expect((await service.request('GET', '/accounts/nope', { headers: asAlice })).status).to.equal(404);
      expect((await adjust('nope', '1')).status).to.equal(404);
    });

    it('list filters, dates and paging match a model', async () => {
      const carol = await service.createClient('Carol');
      const asCarol = await service.as(carol);
      const people = [await identity(asCarol, 'P1', 'CHL'), await identity(asCarol, 'P2', 'MEX')];
      const types = ['CHECKING', 'SAVINGS', 'ESCROW'];
      const model: Array<{ id: string; identityId: string; type: string; externalId: string; country: string; accountNumber: string; status: string; parentId: string | null }> = [];
      for (let i = 0; i < 24; i++) {
        const identityId = people[i % 2]!;
        const parent = i >= 20 ? model.find((m) => m.identityId === identityId && m.type === 'CHECKING') : undefined;
        const body = { identityId, type: types[i % 3], currency: parent ? 'CLP' : 'CLP', externalId: `ext-${i % 4}`, ...(parent ? { parentId: parent.id } : {}) };
        const created = await open(asCarol, body);
        expect(created.status, created.text).to.equal(201);
        model.unshift({ id: created.body.id, identityId, type: body.type!, externalId: body.externalId, country: i % 2 ? 'MEX' : 'CHL',
          accountNumber: created.body.accountNumber, status: 'ACTIVE', parentId: parent?.id ?? null });
      }
      for (const m of model.filter((_, i) => i % 5 === 0)) {
        await service.request('PATCH', `/accounts/${m.id}`, { headers: asCarol, body: { status: 'BLOCKED' } });
        m.status = 'BLOCKED';
      }
      const list = async (query: string) => {
        const ids: string[] = [];
        for (let offset = 0; ; offset += 5) {
          const response = await service.request('GET', `/accounts?limit=5&offset=${offset}${query}`, { headers: asCarol });
          expect(response.status, response.text).to.equal(200);
          ids.push(...response.body.results.map((r: { id: string }) => r.id));
          if (response.body.pagination.next >= response.body.pagination.total) break;
        }
        return ids;
      };
      const expected = (f: (m: (typeof model)[number]) => boolean) => model.filter(f).map((m) => m.id);
      expect(await list('')).to.deep.equal(expected(() => true));
      expect(await list('&type=SAVINGS')).to.deep.equal(expected((m) => m.type === 'SAVINGS'));
      expect(await list(`&identityId=${people[1]}`)).to.deep.equal(expected((m) => m.identityId === people[1]));
      expect(await list('&country=MEX&status=BLOCKED')).to.deep.equal(expected((m) => m.country === 'MEX' && m.status === 'BLOCKED'));
      expect(await list('&externalId=ext-2')).to.deep.equal(expected((m) => m.externalId === 'ext-2'));
      expect(await list(`&accountNumber=${model[4]!.accountNumber}`)).to.deep.equal([model[4]!.id]);
      const parentId = model.find((m) => m.parentId)!.parentId!;
      expect(await list(`&parentId=${parentId}`)).to.deep.equal(expected((m) => m.parentId === parentId));
      expect(await list(`&startDate=${today()}&endDate=${today()}`)).to.deep.equal(expected(() => true));
      expect(await list(`&endDate=${yesterday()}`)).to.deep.equal([]);
      for (const bad of ['startDate=2024-01-01', 'startDate=31/02/2024', 'endDate=1/1/2024', 'status=CLOSED', 'limit=0']) {
        const response = await service.request('GET', `/accounts?${bad}`, { headers: asCarol });
        expect(response.status, bad).to.equal(400);
      }
    });
  });
}
