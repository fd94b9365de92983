/**
 * Registering a context (docs/architecture.md, "Adding a context"): a throwaway context written the recipe's way (its
 * stored events, a decider, a command handler, a route, its manifest; its read model's projector and its HTTP
 * contract) joins the service by one line, the list of contexts, and nothing else: its events are in the registry,
 * its projector builds its table from its events, and its route answers over HTTP, documented.
 *
 * The parts below stand for the files of the recipe: src/notes/events.ts, decider.ts, handlers.ts, routes.ts and
 * module.ts; projections/notes.ts; schemas/notes.ts.
 */
import { expect } from 'chai';
import type { FromSchema } from 'json-schema-to-ts';
import type { Kysely } from 'kysely';
import { closed, instantSchema, textSchema } from '../schemas/events/common.ts';
import { contexts, eventContractsOf, projectorsOf, storedEvents } from '../src/contexts.ts';
import type { Decider } from '../src/domain/decider.ts';
import { domainConflict } from '../src/domain/errors.ts';
import { runCommand, streamType } from '../src/eventstore/streams.ts';
import type { ContextEvents } from '../src/eventstore/upcasting.ts';
import { notFound } from '../src/http/errors.ts';
import { defineRoute } from '../src/http/route.ts';
import type { Services } from '../src/http/services.ts';
import { defineContext } from '../src/module.ts';
import type { Platform } from '../src/platform.ts';
import { defineProjector } from '../src/projection/projector.ts';
import { eventDataValidator } from '../src/storedEvents/validate.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';

// src/notes/events.ts: the stored contract of its one event, and the event type derived from it.
const noteEventSchemas = {
  NoteWritten: closed({ noteId: textSchema, text: textSchema, writtenAt: instantSchema }),
} as const;
type NoteWrittenData = FromSchema<typeof noteEventSchemas['NoteWritten']>;
interface NoteWritten { type: 'NoteWritten'; data: NoteWrittenData }
type NoteEventData = { NoteWritten: NoteWrittenData };
const noteEvents = { schemas: noteEventSchemas } satisfies ContextEvents;
const NOTE_STREAM_PREFIX = 'note-';

// src/notes/decider.ts: a note is written once; its stream type binds the decider to its streams and read-model waits.
type WriteNote = { type: 'WriteNote'; noteId: string; text: string; at: string };
const noteDecider: Decider<WriteNote, NoteWritten, { written: boolean }> = {
  initialState: { written: false },
  decide(command, state) {
    if (state.written) throw domainConflict(`note ${command.noteId} is already written`);
    return [{ type: 'NoteWritten', data: { noteId: command.noteId, text: command.text, writtenAt: command.at } }];
  },
  evolve: () => ({ written: true }),
};
const noteStreamType = streamType(NOTE_STREAM_PREFIX, { decider: noteDecider, readModels: { WriteNote: 'alongside' } });

// src/notes/handlers.ts: the command, run on its stream (`runCommand`, the one way a write happens).
function writeNote(platform: Platform, command: { noteId: string; text: string }) {
  const at = platform.runtime.now().toISOString();
  return runCommand(platform, noteStreamType, `${NOTE_STREAM_PREFIX}${command.noteId}`, { type: 'WriteNote', ...command, at }, {},
    { expectNewStream: true });
}

// projections/notes.ts: the read model, its table declared beside its CREATE TABLE, and its query.
type NoteTables = { notes: { note_id: string; text: string; written_at: string } };
const notesProjector = defineProjector<NoteTables, NoteEventData>({
  name: 'notes',
  version: 1,
  tables: ['notes'],
  async setup(trx) {
    await trx.schema.createTable('notes')
      .addColumn('note_id', 'text', (c) => c.primaryKey())
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('written_at', 'text', (c) => c.notNull())
      .execute();
  },
  handlers: {
    async NoteWritten(trx, event) {
      const d = event.data;
      await trx.insertInto('notes').values({ note_id: d.noteId, text: d.text, written_at: d.writtenAt }).execute();
    },
  },
});
const noteById = (db: Kysely<NoteTables>, noteId: string) =>
  db.selectFrom('notes').selectAll().where('note_id', '=', noteId).executeTakeFirst();

// schemas/notes.ts: the HTTP contract.
const noteSchema = closed({ noteId: textSchema, text: textSchema, writtenAt: instantSchema });
const writeNoteSchema = closed({ noteId: { type: 'string', minLength: 1, maxLength: 64 }, text: { type: 'string', maxLength: 200 } });
const noteParamsSchema = closed({ noteId: { type: 'string', minLength: 1, maxLength: 64 } });
const error = { $ref: '#/components/schemas/Error' } as const;

// src/notes/routes.ts: the route table.
function noteRoutes(services: Services) {
  return [
    defineRoute({
      method: 'post', path: '/notes', operationId: 'writeNote', summary: 'Write a note', tags: ['Notes'], access: 'operator',
      schemas: { body: writeNoteSchema },
      responses: { 201: { description: 'the note', schema: noteSchema }, 409: { description: 'already written', schema: error } },
      async handler({ body }) {
        const { events, readModels } = await writeNote(services, body);
        return { status: 201, body: events[0]!.data, readModels };
      },
    }),
    defineRoute({
      method: 'get', path: '/notes/:noteId', operationId: 'getNote', summary: 'A note', tags: ['Notes'], access: 'operator',
      schemas: { params: noteParamsSchema },
      responses: { 200: { description: 'the note', schema: noteSchema }, 404: { description: 'no such note', schema: error } },
      async handler({ params }) {
        const row = await noteById(services.storage.database.db.withTables<NoteTables>(), params.noteId);
        if (!row) throw notFound(`note ${params.noteId} not found`);
        return { status: 200, body: { noteId: row.note_id, text: row.text, writtenAt: row.written_at } };
      },
    }),
  ];
}

// src/notes/module.ts: the manifest.
const notesContext = defineContext({
  name: 'notes', events: [noteEvents], streams: [noteStreamType], routes: noteRoutes, projectors: [notesProjector],
});

// src/contexts.ts: the one line.
const withNotes = [...contexts, notesContext];

describe('registering a context', () => {
  it('puts its stored events in the registry, and nothing but the list of contexts does', () => {
    expect(storedEvents.has('NoteWritten')).to.equal(false);
    const registry = eventContractsOf(withNotes);
    expect(registry.has('NoteWritten')).to.equal(true);
    expect(registry.currentVersion('NoteWritten')).to.equal(1);
    expect(registry.types()).to.deep.equal([...storedEvents.types(), 'NoteWritten'].sort());
    const problemOf = eventDataValidator(registry);
    expect(problemOf('NoteWritten', { noteId: 'n1', text: 'hello', writtenAt: '2026-01-02T03:04:05.000Z' })).to.equal(null);
    expect(problemOf('NoteWritten', { noteId: 'n1', writtenAt: '2026-01-02T03:04:05.000Z' })).to.match(/text/);
  });

  it('refuses a context that registers a stored event type another already owns', () => {
    const copy = defineContext({ name: 'copies', events: [{ schemas: { PaymentCreated: noteEventSchemas.NoteWritten } }] });
    expect(() => eventContractsOf([...contexts, copy])).to.throw(/PaymentCreated declared twice/);
  });

  it('runs its projector with the others', () => {
    const names = projectorsOf(withNotes).map((p) => p.name);
    expect(names).to.include('notes');
    expect(names.filter((name) => name !== 'notes')).to.deep.equal(projectorsOf(contexts).map((p) => p.name));
  });

  // The HTTP flow on PGlite (the registration is storage-independent; every http.* suite runs both targets).
  const [pglite] = databaseTargets();
  describe(`over HTTP (${pglite!.name})`, function () {
    this.timeout(60_000);
    let service: TestService;

    before(async () => {
      service = await startTestService(await pglite!.open(), { contexts: withNotes });
    });
    after(async () => {
      await service?.close();
      await service?.database.close();
    });

    it('answers its routes, documented, and its projector builds its table from its event', async () => {
      const written = await service.operator('POST', '/notes', { noteId: 'n1', text: 'hello' });
      expect(written.status, written.text).to.equal(201);
      expect(written.body).to.include({ noteId: 'n1', text: 'hello' });
      expect(written.headers.get('x-read-models')).to.equal(null);

      const read = await service.operator('GET', '/notes/n1');
      expect(read.status, read.text).to.equal(200);
      expect(read.body).to.deep.equal(written.body);

      const again = await service.operator('POST', '/notes', { noteId: 'n1', text: 'twice' });
      expect(again.status, again.text).to.equal(409);
      expect((await service.operator('GET', '/notes/n2')).status).to.equal(404);

      const document = (await service.request('GET', '/openapi.json')).body as { paths: Record<string, unknown> };
      expect(Object.keys(document.paths)).to.include.members(['/notes', '/notes/{noteId}']);
      const stored = await service.database.query<{ type: string }>(`SELECT type FROM events WHERE stream = 'note-n1'`);
      expect(stored.rows.map((r) => r.type)).to.deep.equal(['NoteWritten']);
    });

    it('leaves the service\'s own routes as they were', async () => {
      expect((await service.request('GET', '/health')).status).to.equal(200);
    });
  });
});
