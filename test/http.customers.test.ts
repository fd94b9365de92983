import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import { customerDecider, documentNumberDecider } from '../src/customers/decider.ts';
import { customerStream, documentNumberStream } from '../src/customers/events.ts';
import { createCustomer, customerOfClient } from '../src/customers/handlers.ts';
import { DomainError } from '../src/domain/errors.ts';
import { createdId } from '../src/eventstore/deterministicId.ts';
import { handleCommand, readState } from '../src/eventstore/commandHandler.ts';
import { positionReached } from '../src/eventstore/position.ts';
import { until } from './support/until.ts';
import { databaseTargets } from './support/targets.ts';
import type { Credentials, TestService } from './support/testService.ts';
import { startTwoTenants, type TwoTenants } from './support/twoTenants.ts';

for (const target of databaseTargets()) {
  describe(`customers over HTTP: ${target.name}`, function () {
    this.timeout(120_000);
    let database: Database;
    let service: TestService;
    let alice: Credentials;
    let bob: Credentials;
    let asAlice: Record<string, string>;
    let asBob: Record<string, string>;
    const create = (headers: Record<string, string>, body: Record<string, unknown>) => service.request('POST', '/customers', { headers, body });
    const get = (headers: Record<string, string>, id: string) => service.request('GET', `/customers/${id}`, { headers });
    const addDocument = (id: string, body: Record<string, unknown>) =>
      service.request('POST', `/customers/${id}/documents`, { headers: asAlice, body });
    const upload = (headers: Record<string, string>, id: string, documentId: string, body: Record<string, unknown>) =>
      service.request('PATCH', `/customers/${id}/documents/${documentId}`, { headers, body });
    const decide = (id: string, documentId: string, decision: string) =>
      service.operator('POST', `/operator/customers/${id}/documents/${documentId}/decision`, { decision });
    const levelChanges = async (customerId: string) => (await database.query<{ data: Record<string, unknown> }>(
      `SELECT data FROM events WHERE type = 'CustomerLevelChanged' AND stream = $1 ORDER BY global_position`, [`customer-${customerId}`])).rows
      .map((r) => r.data);

    let tenants: TwoTenants;

    before(async () => {
      tenants = await startTwoTenants(target);
      ({ database, service, alice, bob, asAlice, asBob } = tenants);
    });
    after(async () => {
      await tenants?.close();
    });

    it('creates, reads and updates a customer', async () => {
      const created = await create(asAlice, { firstName: 'Ana', lastName: 'Pérez', email: 'Ana@Example.com', phoneNumber: '912345678',
        phoneNumberPrefix: '+56', documentNumber: '12.345.678-9', documentType: 'RUT', country: 'CHL' });
      expect(created.status).to.equal(201);
      expect(created.body).to.include({ clientId: alice.clientId, firstName: 'Ana', lastName: 'Pérez', email: 'ana@example.com',
        phoneNumber: '912345678', phoneNumberPrefix: '+56', documentNumber: '12.345.678-9', documentType: 'RUT', country: 'CHL',
        operationLevel: 'BASIC', autoCreated: false, isDocumented: false });
      expect(created.body.documents).to.deep.equal([]);
      expect(created.body.createdAt).to.equal(created.body.updatedAt);
      const id = created.body.id as string;

      expect((await get(asAlice, id)).body).to.deep.equal(created.body);

      const patched = await service.request('PATCH', `/customers/${id}`, { headers: asAlice, body: {
        firstName: 'Anita', lastName: 'Soto', email: 'anita@example.com', phoneNumber: '987654321', phoneNumberPrefix: '+54',
        documentType: 'DNI', documentNumber: '30111222' } });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ id, firstName: 'Anita', lastName: 'Soto', email: 'anita@example.com', phoneNumber: '987654321',
        phoneNumberPrefix: '+54', documentType: 'DNI', documentNumber: '30111222', country: 'CHL', operationLevel: 'BASIC' });
      expect(patched.body.updatedAt >= created.body.updatedAt).to.equal(true);
      expect((await get(asAlice, id)).body).to.deep.equal(patched.body);

      // The old document number was released: another customer may take it now.
      expect((await create(asAlice, { documentNumber: '12.345.678-9' })).status).to.equal(201);

      const minimal = await create(asAlice, { email: 'only-email@example.com' });
      expect(minimal.status).to.equal(201);
      expect(minimal.body).to.include({ documentNumber: null, firstName: null, country: null, email: 'only-email@example.com' });
    });

    it('adds documents: PENDING_UPLOAD without a url, UPLOADED with uploadedAt with one', async () => {
      const id = (await create(asAlice, { email: 'docs@example.com' })).body.id as string;
      const pending = await addDocument(id, { type: 'ID_BACK' });
      expect(pending.status).to.equal(201);
      expect(pending.body).to.include({ type: 'ID_BACK', url: null, contentType: null, status: 'PENDING_UPLOAD', uploadedAt: null });
      expect(pending.body.id).to.be.a('string');
      const uploaded = await addDocument(id, { type: 'ID_FRONT', url: 'https://files.example.com/front.png', contentType: 'image/png' });
      expect(uploaded.status).to.equal(201);
      expect(uploaded.body).to.include({ type: 'ID_FRONT', url: 'https://files.example.com/front.png', contentType: 'image/png', status: 'UPLOADED' });
      expect(Date.parse(uploaded.body.uploadedAt)).to.be.a('number').and.not.NaN;
      const customer = (await get(asAlice, id)).body;
      expect(customer.documents).to.deep.equal([pending.body, uploaded.body]);
      expect(customer.isDocumented).to.equal(false);
    });

    for (const [label, body, field] of [
      ['neither email nor documentNumber', { firstName: 'Ana', lastName: 'Pérez' }, /documentNumber or email/],
      ['a bad email', { email: 'not-an-email' }, /email/],
      ['a phone number with letters', { email: 'a@example.com', phoneNumber: '91234abc' }, /phoneNumber/],
      ['a prefix without a plus', { email: 'a@example.com', phoneNumberPrefix: '56' }, /phoneNumberPrefix/],
      ['an unknown country', { email: 'a@example.com', country: 'XYZ' }, /country/],
      ['an alpha-2 country', { email: 'a@example.com', country: 'CL' }, /country/],
      ['a bad document type', { documentNumber: '12345', documentType: 'LICENSE' }, /documentType/],
      ['a bad document number', { documentNumber: 'a b' }, /documentNumber/],
      ['a wrongly typed field', { email: 'a@example.com', firstName: 42 }, /firstName/],
      ['an unknown field', { email: 'a@example.com', favouriteColour: 'blue' }, /favouriteColour/],
      ['an operationLevel (set by operators only)', { email: 'a@example.com', operationLevel: 'FULL' }, /operationLevel/],
    ] as Array<[string, Record<string, unknown>, RegExp]>) {
      it(`POST /customers refuses ${label} with a 400 naming the field`, async () => {
        const before = await service.eventCount();
        const response = await create(asAlice, body);
        expect(response.status).to.equal(400);
        expect(response.body.message).to.match(field);
        expect(await service.eventCount()).to.equal(before);
      });
    }

    it('other bad input is a 400 naming the field, and changes nothing', async () => {
      const id = (await create(asAlice, { email: 'bad-input@example.com' })).body.id as string;
      const before = await service.eventCount();
      for (const [method, path, body, field, operator] of [
        ['PATCH', `/customers/${id}`, { country: 'ARG' }, /country/, false],
        ['PATCH', `/customers/${id}`, {}, /body/, false],
        ['PATCH', `/customers/${id}`, { email: 'nope' }, /email/, false],
        ['PATCH', `/customers/${id}`, { documentType: 'LICENSE' }, /documentType/, false],
        ['POST', `/customers/${id}/documents`, {}, /type/, false],
        ['POST', `/customers/${id}/documents`, { type: 'ID_FRONT', url: 'not a url' }, /url/, false],
        ['POST', `/customers/${id}/documents`, { type: 'ID_FRONT', contentType: 'png' }, /contentType/, false],
        ['POST', `/customers/${id}/documents`, { type: 'ID_FRONT', extra: 1 }, /extra/, false],
        ['PATCH', `/customers/${id}/documents/d1`, {}, /url/, false],
        ['PATCH', `/customers/${id}/documents/d1`, { url: 'not a url' }, /url/, false],
        ['PATCH', `/customers/${id}/documents/d1`, { url: 'https://files.example.com/a.png', contentType: 'png' }, /contentType/, false],
        ['PATCH', `/customers/${id}/documents/d1`, { url: 'https://files.example.com/a.png', type: 'ID_FRONT' }, /type/, false],
        ['POST', `/operator/customers/${id}/operation-level`, { operationLevel: 'PLATINUM' }, /operationLevel/, true],
        ['POST', `/operator/customers/${id}/documents/d1/decision`, { decision: 'MAYBE' }, /decision/, true],
      ] as Array<[string, string, Record<string, unknown>, RegExp, boolean]>) {
        const response = operator ? await service.operator(method, path, body) : await service.request(method, path, { headers: asAlice, body });
        expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).to.equal(400);
        expect(response.body.message, `${method} ${path}`).to.match(field);
      }
      for (const query of ['operationLevel=GOLD', 'limit=0', 'limit=501', 'cursor=abc', 'colour=red']) {
        expect((await service.request('GET', `/customers?${query}`, { headers: asAlice })).status, query).to.equal(400);
      }
      expect(await service.eventCount()).to.equal(before);
    });

    it('an unknown id or another client’s customer is a 404 everywhere', async () => {
      const bobs = (await create(asBob, { email: 'bob-customer@example.com' })).body.id as string;
      const before = await service.eventCount();
      for (const id of [bobs, 'does-not-exist']) {
        for (const [method, path, body] of [
          ['GET', `/customers/${id}`, undefined], ['PATCH', `/customers/${id}`, { firstName: 'x' }],
          ['POST', `/customers/${id}/documents`, { type: 'ID_FRONT' }],
        ] as Array<[string, string, unknown]>) {
          const response = await service.request(method, path, { headers: asAlice, ...(body ? { body } : {}) });
          expect(response.status, `${method} ${path}`).to.equal(404);
          expect(response.body.error).to.equal('notFound');
        }
      }
      expect((await service.operator('POST', '/operator/customers/does-not-exist/operation-level', { operationLevel: 'FULL' })).status).to.equal(404);
      expect((await decide('does-not-exist', 'd1', 'APPROVED')).status).to.equal(404);
      expect((await decide(bobs, 'no-such-document', 'APPROVED')).status).to.equal(404);
      expect(await service.eventCount()).to.equal(before);
      // Bob's customer never shows in Alice's list.
      const alicesList = await service.request('GET', '/customers?limit=500', { headers: asAlice });
      expect(alicesList.body.results.map((c: { id: string }) => c.id)).not.to.include(bobs);
    });

    it('the first approved document flips isDocumented and records exactly one level change', async () => {
      const id = (await create(asAlice, { firstName: 'Dora', lastName: 'Doc', email: 'dora@example.com', documentNumber: 'DORA-1' })).body.id as string;
      const first = (await addDocument(id, { type: 'ID_FRONT', url: 'https://files.example.com/secret-front.png', contentType: 'image/png' })).body;
      const second = (await addDocument(id, { type: 'ID_BACK', url: 'https://files.example.com/secret-back.png' })).body;
      const waiting = (await addDocument(id, { type: 'SELFIE' })).body;

      const refused = await decide(id, waiting.id, 'APPROVED');
      expect(refused.status).to.equal(422);
      expect(refused.body.message).to.match(/PENDING_UPLOAD/);

      const approved = await decide(id, first.id, 'APPROVED');
      expect(approved.status).to.equal(200);
      expect(approved.body.isDocumented).to.equal(true);
      expect(approved.body.operationLevel).to.equal('BASIC');
      expect(approved.body.documents.map((d: { status: string }) => d.status)).to.deep.equal(['APPROVED', 'UPLOADED', 'PENDING_UPLOAD']);
      expect((await get(asAlice, id)).body).to.deep.equal(approved.body);

      const changes = await levelChanges(id);
      expect(changes).to.have.length(1);
      expect(changes[0]).to.deep.include({ customerId: id, clientId: alice.clientId, firstName: 'Dora', lastName: 'Doc',
        email: 'dora@example.com', documentNumber: 'DORA-1', operationLevel: 'BASIC', autoCreated: false, documentsCount: 3,
        isDocumented: true, reason: 'DOCUMENTED' });
      expect(JSON.stringify(changes[0])).not.to.include('https://');
      expect(JSON.stringify(changes[0])).not.to.include('secret');

      // A second approval, and deciding an already decided document, record no further level change.
      expect((await decide(id, second.id, 'APPROVED')).status).to.equal(200);
      const again = await decide(id, first.id, 'REJECTED');
      expect(again.status).to.equal(422);
      expect(again.body.message).to.match(/APPROVED/);
      expect(await levelChanges(id)).to.have.length(1);
    });

    it('a document added without url is uploaded with PATCH, then decided; once decided it cannot change', async () => {
      const id = (await create(asAlice, { email: 'uploader@example.com', documentNumber: 'UPL-1' })).body.id as string;
      const document = (await addDocument(id, { type: 'ID_BACK' })).body;
      expect(document).to.include({ status: 'PENDING_UPLOAD', url: null, uploadedAt: null });

      const early = await decide(id, document.id, 'APPROVED');
      expect(early.status).to.equal(422);
      expect(early.body.message).to.match(/PENDING_UPLOAD/);

      const first = await upload(asAlice, id, document.id, { url: 'https://files.example.com/back-1.png' });
      expect(first.status).to.equal(200);
      expect(first.body).to.include({ id: document.id, type: 'ID_BACK', url: 'https://files.example.com/back-1.png', contentType: null,
        status: 'UPLOADED' });
      expect(Date.parse(first.body.uploadedAt)).to.be.a('number').and.not.NaN;

      // Before a decision the file can be replaced.
      const second = await upload(asAlice, id, document.id, { url: 'https://files.example.com/back-2.pdf', contentType: 'application/pdf' });
      expect(second.status).to.equal(200);
      expect(second.body).to.include({ id: document.id, url: 'https://files.example.com/back-2.pdf', contentType: 'application/pdf',
        status: 'UPLOADED' });
      expect(second.body.uploadedAt >= first.body.uploadedAt).to.equal(true);
      expect((await get(asAlice, id)).body.documents).to.deep.equal([second.body]);
      const uploads = (await database.query<{ data: Record<string, unknown> }>(
        `SELECT data FROM events WHERE type = 'CustomerDocumentUploaded' AND stream = $1 ORDER BY global_position`, [`customer-${id}`])).rows
        .map((r) => r.data);
      expect(uploads).to.deep.equal([
        { customerId: id, documentId: document.id, url: 'https://files.example.com/back-1.png', contentType: null, uploadedAt: first.body.uploadedAt },
        { customerId: id, documentId: document.id, url: 'https://files.example.com/back-2.pdf', contentType: 'application/pdf',
          uploadedAt: second.body.uploadedAt },
      ]);

      const approved = await decide(id, document.id, 'APPROVED');
      expect(approved.status).to.equal(200);
      expect(approved.body.isDocumented).to.equal(true);
      expect(approved.body.documents).to.deep.equal([{ ...second.body, status: 'APPROVED' }]);
      const changes = await levelChanges(id);
      expect(changes).to.have.length(1);
      expect(changes[0]).to.deep.include({ reason: 'DOCUMENTED', isDocumented: true, documentsCount: 1 });
      expect(JSON.stringify(changes[0])).not.to.include('https://');

      const before = await service.eventCount();
      const late = await upload(asAlice, id, document.id, { url: 'https://files.example.com/back-3.png' });
      expect(late.status).to.equal(422);
      expect(late.body.message).to.match(/APPROVED/);
      expect((await get(asAlice, id)).body).to.deep.equal(approved.body);

      // Another client's customer, and an unknown document or customer, are 404s.
      for (const [headers, customerId, documentId] of [
        [asBob, id, document.id], [asAlice, id, 'no-such-document'], [asAlice, 'does-not-exist', document.id],
      ] as Array<[Record<string, string>, string, string]>) {
        const response = await upload(headers, customerId, documentId, { url: 'https://files.example.com/other.png' });
        expect(response.status, `${customerId}/${documentId}`).to.equal(404);
        expect(response.body.error).to.equal('notFound');
      }
      expect(await service.eventCount()).to.equal(before);
    });

    it('a rejected document changes nothing but its own status', async () => {
      const id = (await create(asAlice, { email: 'rejected@example.com' })).body.id as string;
      const document = (await addDocument(id, { type: 'PASSPORT', url: 'https://files.example.com/passport.pdf', contentType: 'application/pdf' })).body;
      const before = (await get(asAlice, id)).body;
      const rejected = await decide(id, document.id, 'REJECTED');
      expect(rejected.status).to.equal(200);
      const { documents, updatedAt: _updatedAt, ...rest } = rejected.body;
      const { documents: documentsBefore, updatedAt: _before, ...restBefore } = before;
      expect(rest).to.deep.equal(restBefore);
      expect(rest.isDocumented).to.equal(false);
      expect(documents).to.deep.equal([{ ...documentsBefore[0], status: 'REJECTED' }]);
      expect(await levelChanges(id)).to.have.length(0);
      expect((await decide(id, document.id, 'APPROVED')).status).to.equal(422);
    });

    it('each operation-level change records one level change; the same level records none', async () => {
      const id = (await create(asAlice, { email: 'levels@example.com' })).body.id as string;
      const full = await service.operator('POST', `/operator/customers/${id}/operation-level`, { operationLevel: 'FULL' });
      expect(full.status).to.equal(200);
      expect(full.body).to.include({ operationLevel: 'FULL', isDocumented: false });
      expect((await get(asAlice, id)).body.operationLevel).to.equal('FULL');
      expect(await levelChanges(id)).to.have.length(1);
      expect((await levelChanges(id))[0]).to.deep.include({ operationLevel: 'FULL', previousOperationLevel: 'BASIC', reason: 'OPERATION_LEVEL',
        isDocumented: false, documentsCount: 0 });
      expect((await service.operator('POST', `/operator/customers/${id}/operation-level`, { operationLevel: 'FULL' })).status).to.equal(200);
      expect(await levelChanges(id)).to.have.length(1);
      expect((await service.operator('POST', `/operator/customers/${id}/operation-level`, { operationLevel: 'INACTIVE' })).body.operationLevel)
        .to.equal('INACTIVE');
      expect(await levelChanges(id)).to.have.length(2);
    });

    it('a documentNumber belongs to one customer of a client (409), on create and on update', async () => {
      const first = await create(asAlice, { documentNumber: 'UNIQ-1', email: 'uniq1@example.com' });
      expect(first.status).to.equal(201);
      const duplicate = await create(asAlice, { documentNumber: 'UNIQ-1', email: 'other@example.com' });
      expect(duplicate.status).to.equal(409);
      expect(duplicate.body).to.include({ error: 'alreadyExist' });
      expect(duplicate.body.message).to.match(/UNIQ-1/);
      // Another client may use the same number.
      expect((await create(asBob, { documentNumber: 'UNIQ-1' })).status).to.equal(201);

      const second = (await create(asAlice, { documentNumber: 'UNIQ-2' })).body.id as string;
      const taken = await service.request('PATCH', `/customers/${second}`, { headers: asAlice, body: { documentNumber: 'UNIQ-1', firstName: 'Z' } });
      expect(taken.status).to.equal(409);
      expect((await get(asAlice, second)).body).to.include({ documentNumber: 'UNIQ-2', firstName: null });
      // Keeping one's own number is not a conflict.
      const same = await service.request('PATCH', `/customers/${second}`, { headers: asAlice, body: { documentNumber: 'UNIQ-2', firstName: 'Zoe' } });
      expect(same.status).to.equal(200);
      expect(same.body).to.include({ documentNumber: 'UNIQ-2', firstName: 'Zoe' });
      // After the first customer moves to another number, its old one is free.
      expect((await service.request('PATCH', `/customers/${first.body.id}`, { headers: asAlice, body: { documentNumber: 'UNIQ-3' } })).status).to.equal(200);
      const moved = await service.request('PATCH', `/customers/${second}`, { headers: asAlice, body: { documentNumber: 'UNIQ-1' } });
      expect(moved.status).to.equal(200);
      expect((await create(asAlice, { documentNumber: 'UNIQ-2' })).status).to.equal(201);
      expect((await create(asAlice, { documentNumber: 'UNIQ-3' })).status).to.equal(409);
    });

    it('ten concurrent creates with the same documentNumber: exactly one 201', async () => {
      const responses = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        create(asAlice, { documentNumber: 'RACE-42', email: `racer${i}@example.com` })));
      const statuses = responses.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([201, ...Array(9).fill(409)]);
      const listed = await service.request('GET', '/customers?documentNumber=RACE-42', { headers: asAlice });
      expect(listed.body.pagination.total).to.equal(1);
      expect(listed.body.results[0].id).to.equal(responses.find((r) => r.status === 201)!.body.id);
    });

    it('list filters, order and paging match a model of what was created', async () => {
      const carol = await service.createClient('Carol');
      const asCarol = await service.as(carol);
      const levels = ['BASIC', 'STANDARD', 'FULL', 'INACTIVE'];
      const model: Array<{ id: string; createdAt: string; email: string | null; documentNumber: string | null; operationLevel: string }> = [];
      for (let i = 0; i < 30; i++) {
        const body: Record<string, unknown> = {
          firstName: `Payer ${i}`,
          ...(i % 3 !== 0 ? { documentNumber: `DOC-${i}` } : {}),
          ...(i % 3 === 0 || i % 4 === 0 ? { email: `Payer${i % 5}@Example.com` } : {}),
          ...(i % 2 ? { country: ['CHL', 'ARG', 'MEX'][i % 3], phoneNumberPrefix: '+56', phoneNumber: `9${String(i).padStart(8, '0')}` } : {}),
        };
        const created = await create(asCarol, body);
        expect(created.status, JSON.stringify(body)).to.equal(201);
        model.push({ id: created.body.id, createdAt: created.body.createdAt, email: created.body.email,
          documentNumber: created.body.documentNumber, operationLevel: 'BASIC' });
      }
      // The list's order: newest first, then by id (descending) among customers created in the same millisecond.
      model.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      for (const [index, entry] of model.entries()) {
        const level = levels[index % 4]!;
        if (level === 'BASIC') continue;
        await service.operator('POST', `/operator/customers/${entry.id}/operation-level`, { operationLevel: level });
        entry.operationLevel = level;
      }
      const list = async (query: string, pageSize: number) => {
        const ids: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const response = await service.request('GET', `/customers?limit=${pageSize}${query}${cursor ? `&cursor=${cursor}` : ''}`, { headers: asCarol });
          expect(response.status).to.equal(200);
          expect(response.body.pagination.count).to.equal(response.body.results.length);
          ids.push(...response.body.results.map((r: { id: string }) => r.id));
          if (response.body.pagination.next >= response.body.pagination.total) {
            expect(ids.length).to.equal(response.body.pagination.total);
            return ids;
          }
          cursor = String(response.body.pagination.next);
        }
      };
      const expectIds = (filter: (m: (typeof model)[number]) => boolean) => model.filter(filter).map((m) => m.id);
      for (const pageSize of [4, 7, 50]) {
        expect(await list('', pageSize)).to.deep.equal(expectIds(() => true));
        expect(await list('&operationLevel=STANDARD', pageSize)).to.deep.equal(expectIds((m) => m.operationLevel === 'STANDARD'));
        expect(await list('&email=PAYER3@example.COM', pageSize)).to.deep.equal(expectIds((m) => m.email === 'payer3@example.com'));
      }
      expect(await list('&documentNumber=DOC-7', 5)).to.deep.equal(expectIds((m) => m.documentNumber === 'DOC-7'));
      expect(await list('&documentNumber=DOC-7', 5)).to.have.length(1);
      expect(await list('&email=payer0@example.com&operationLevel=BASIC', 3))
        .to.deep.equal(expectIds((m) => m.email === 'payer0@example.com' && m.operationLevel === 'BASIC'));
      expect(await list('&documentNumber=NOPE', 5)).to.deep.equal([]);

      const byOffset = await service.request('GET', '/customers?limit=5&offset=10', { headers: asCarol });
      expect(byOffset.body.results.map((r: { id: string }) => r.id)).to.deep.equal(model.slice(10, 15).map((m) => m.id));
      expect(byOffset.body.pagination).to.deep.equal({ count: 5, next: 15, previous: 5, total: 30 });
      const defaults = await service.request('GET', '/customers', { headers: asCarol });
      expect(defaults.body.pagination).to.deep.equal({ count: 30, next: 30, previous: 0, total: 30 });
      // Newest first: createdAt descending, then id.
      const createdAts = defaults.body.results.map((r: { createdAt: string }) => r.createdAt);
      expect(createdAts).to.deep.equal([...createdAts].sort().reverse());
    });
  });

  describe(`a document number reserved for a customer never created: ${target.name}`, function () {
    this.timeout(120_000);
    // Short, so that the test waits little; a creation in progress records its customer within milliseconds.
    const ABANDONED_RESERVATION_MS = 1_500;
    let tenants: TwoTenants;

    before(async () => {
      tenants = await startTwoTenants(target, { env: { ABANDONED_RESERVATION_MS: String(ABANDONED_RESERVATION_MS) } });
    });
    after(async () => {
      await tenants?.close();
    });

    it('is released by the customers reactor once it is old enough, and a later create with the number succeeds; a late creation is refused', async () => {
      const { service, alice, asAlice } = tenants;
      const platform = service.services;
      const documentNumber = 'ORPHAN-7';
      const orphan = randomUUID();
      // What createCustomer does first, and then nothing else: its process died before the customer was recorded.
      await handleCommand(platform.storage.store, documentNumberStream(alice.clientId, documentNumber), documentNumberDecider,
        { type: 'ClaimKey', key: { clientId: alice.clientId, documentNumber }, owner: orphan, now: new Date() }, { clientId: alice.clientId });
      const reservedAt = Date.now();
      const holder = async () => (await readState(platform.storage.store, documentNumberStream(alice.clientId, documentNumber), documentNumberDecider)).holder;
      expect(await holder()).to.equal(orphan);
      // Meanwhile the number is taken, as it must be while a creation may still be under way.
      const refused = await service.request('POST', '/customers', { headers: asAlice, body: { documentNumber, email: 'early@example.com' } });
      expect(refused.status, refused.text).to.equal(409);

      await until(async () => (await holder()) === null, { what: 'the orphaned reservation is released' });
      expect(Date.now() - reservedAt).to.be.at.least(ABANDONED_RESERVATION_MS - 50);
      const created = await service.request('POST', '/customers', { headers: asAlice, body: { documentNumber, email: 'ana@example.com' } });
      expect(created.status, created.text).to.equal(201);
      expect(created.body.documentNumber).to.equal(documentNumber);
      expect(await holder()).to.equal(created.body.id);

      // The orphan's stream says its creation was given up, so a creation arriving this late is refused
      // rather than recording a customer whose number is no longer reserved for it.
      const orphanEvents = await platform.storage.store.readStream(customerStream(orphan), {});
      expect(orphanEvents.map((e) => e.type)).to.deep.equal(['CustomerCreationAbandoned']);
      expect(orphanEvents[0]!.data).to.include({ customerId: orphan, reservationRevision: 0 });
      let late: unknown;
      try {
        await handleCommand(platform.storage.store, customerStream(orphan), customerDecider, {
          type: 'CreateCustomer', tenant: { clientId: alice.clientId }, customerId: orphan, clientId: alice.clientId,
          fields: { documentNumber, email: 'late@example.com' }, autoCreated: false, reservationRevision: 0, now: new Date() }, { clientId: alice.clientId });
      } catch (error) {
        late = error;
      }
      expect(late).to.be.instanceOf(DomainError);
      expect(late).to.include({ kind: 'contention' });
      expect((late as DomainError).message).to.match(/was given up; send the request again/);
      // A customer created normally keeps its number once the reactor has looked at its reservation too.
      const [reservation] = await platform.storage.store.readStream(documentNumberStream(alice.clientId, documentNumber), { direction: 'backwards', limit: 1 });
      expect(reservation!.type).to.equal('CustomerDocumentNumberReserved');
      const reactor = platform.projections.projectionRunners.find((runner) => runner.name === 'customer_document_numbers')!;
      await until(() => positionReached(reactor.checkpoint, reservation!.position), { what: 'the reactor passes the new reservation' });
      expect(await holder()).to.equal(created.body.id);
      expect((await service.request('GET', `/customers/${created.body.id}`, { headers: asAlice })).body.documentNumber).to.equal(documentNumber);
    });

    it('a request sent again with its Idempotency-Key after its reservation was given back creates its customer, under the same id', async () => {
      const { service, alice } = tenants;
      const platform = service.services;
      const documentNumber = 'ORPHAN-8';
      // The request's key names its customer (as the HTTP edge sets it): its first run reserved the number and died.
      const metadata = { clientId: alice.clientId, requestKey: `retry-${randomUUID()}` };
      const customerId = createdId(platform.runtime, metadata, 'customer');
      const numberStream = documentNumberStream(alice.clientId, documentNumber);
      await handleCommand(platform.storage.store, numberStream, documentNumberDecider,
        { type: 'ClaimKey', key: { clientId: alice.clientId, documentNumber }, owner: customerId, now: new Date() }, metadata);
      await until(async () => (await readState(platform.storage.store, numberStream, documentNumberDecider)).holder === null,
        { what: 'the reservation is given back' });

      // The same request again: it reserves the number anew (another reservation than the one given up) and goes through.
      expect(await createCustomer(platform, alice.clientId, { documentNumber, email: 'vera@example.com' }, metadata)).to.equal(customerId);
      expect(await customerOfClient(platform, alice.clientId, customerId)).to.include({ exists: true });
      expect((await readState(platform.storage.store, numberStream, documentNumberDecider))).to.deep.equal({ holder: customerId, revision: 2 });
      expect((await platform.storage.store.readStream(customerStream(customerId), {})).map((e) => e.type))
        .to.deep.equal(['CustomerCreationAbandoned', 'CustomerCreated']);
    });
  });
}
