/**
 * What the types promise, checked where it matters: by the compiler (`npm run typecheck`, part of `npm test`).
 * Each `@ts-expect-error` below must be an error, or the type check fails; the handlers are never run.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { defineRoute } from '../src/http/route.ts';
import { defineProjector, defineReactor } from '../src/projection/projector.ts';
import type { EventHandlers } from '../src/eventstore/typedEvents.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import { idParamSchema } from '../schemas/common.ts';
import { listPaymentsQuerySchema, reviewDecisionSchema } from '../schemas/payments.ts';
import type { ReadModels } from '../projections/readModels.ts';

describe('types: routes, read models and consumers of events', () => {
  it('a handler\'s params, query and body are the types its own schemas derive, with no cast', () => {
    const route = defineRoute({
      method: 'post', path: '/test/:id', operationId: 'typed', summary: 'typed input', tags: ['Test'], access: 'operator',
      schemas: { params: idParamSchema, query: listPaymentsQuerySchema, body: reviewDecisionSchema }, responses: {},
      async handler({ params, query, body }) {
        const id: string = params.id;
        const limit: number = query.limit;
        const decision: 'APPROVED' | 'REJECTED' = body.decision;
        // @ts-expect-error idParamSchema declares no such parameter
        void params.paymentId;
        // @ts-expect-error the query's limit is a number
        const text: string = query.limit;
        return { status: 200, body: { id, limit, decision, text } };
      },
    });
    const bodiless = defineRoute({
      method: 'get', path: '/test', operationId: 'bodiless', summary: 'no schemas', tags: ['Test'], access: 'public',
      schemas: {}, responses: {},
      async handler({ body }) {
        // @ts-expect-error a route without a body schema takes no body
        return { status: 200, body: body.anything };
      },
    });
    expect([route.schemas.params, bodiless.schemas.body]).to.deep.equal([idParamSchema, undefined]);
  });

  it('a projector lists each of its tables once, and its handlers write only their columns', () => {
    type Tables = { first: { id: string; n: number }; second: { id: string } };
    const definition = (trx: Kysely<Tables>) => [
      trx.insertInto('first').values({ id: 'a', n: 1 }),
      // @ts-expect-error `first` has no column `m`
      trx.insertInto('first').values({ id: 'a', m: 1 }),
      // @ts-expect-error not one of this projector's tables
      trx.selectFrom('payments'),
    ];
    const projector = defineProjector<Tables, StoredEventData>({
      name: 'typed', version: 1, tables: ['second', 'first'], async setup() {}, handlers: {},
    });
    // @ts-expect-error `second` is missing from the list
    defineProjector<Tables, StoredEventData>({ name: 'typed', version: 1, tables: ['first'], async setup() {}, handlers: {} });
    // @ts-expect-error `first` is listed twice
    defineProjector<Tables, StoredEventData>({ name: 'typed', version: 1, tables: ['first', 'first', 'second'], async setup() {}, handlers: {} });
    expect(projector.tables).to.deep.equal(['second', 'first']);
    expect(definition).to.be.a('function');
  });

  it('a consumer declares handlers keyed by stored event type, each receiving its data typed: a misspelt type does not compile', () => {
    type Tables = { seen: { id: string } };
    const projector = defineProjector<Tables, StoredEventData>({
      name: 'typed', version: 1, tables: ['seen'], async setup() {},
      handlers: {
        async PaymentCreated(trx, event) {
          const currency: string = event.data.currency;
          // @ts-expect-error a payment's creation names no refund
          void event.data.refundId;
          await trx.insertInto('seen').values({ id: `${event.data.paymentId} ${currency}` }).execute();
        },
        // @ts-expect-error no stored event type is called PaymentCreatd
        async PaymentCreatd() {},
      },
    });
    const batch = defineProjector<Tables, StoredEventData>({
      name: 'typed', version: 1, tables: ['seen'], async setup() {},
      // @ts-expect-error no stored event type is called RefundSettld
      handles: ['RefundSettled', 'RefundSettld'],
      async apply(_trx, events) {
        for (const event of events) if (event.type === 'RefundSettled') void (event.data.fundingSource satisfies 'ACCOUNT' | 'SUSPENSE');
      },
    });
    const reactor = defineReactor<StoredEventData>({
      name: 'typed',
      handlers: {
        async AccountCredited(event) {
          void (event.data.fundsFrom satisfies 'clearing' | 'suspense');
        },
        // @ts-expect-error no stored event type is called AccountCreditted
        async AccountCreditted() {},
      },
    });
    const postings: EventHandlers<StoredEventData, [], string[]> = {
      RefundSettled: (event) => [event.data.refundId],
      // @ts-expect-error no stored event type is called RefundSetled
      RefundSetled: () => [],
    };
    expect([projector.handles, batch.handles, reactor.handles, Object.keys(postings)]).to.deep.equal([
      ['PaymentCreated', 'PaymentCreatd'], ['RefundSettled', 'RefundSettld'], ['AccountCredited', 'AccountCreditted'], ['RefundSettled', 'RefundSetled'],
    ]);
  });

  it('no consumer casts event data: outside the event store\'s generic code, src/ and projections/ hold no `.data as`', () => {
    const root = join(import.meta.dirname, '..');
    const casts = ['src', 'projections'].flatMap((folder) => readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !(folder === 'src' && file.startsWith('eventstore/')))
      .flatMap((file) => readFileSync(join(root, folder, file), 'utf8').split('\n')
        .map((line, n) => ({ where: `${folder}/${file}:${n + 1}`, line }))
        .filter(({ line }) => /\bdata\s*(\?\?\s*\{\}\s*\))?\s+as\s/.test(line) && !/^\s*(\*|\/\/)/.test(line))
        .map(({ where }) => where)));
    expect(casts).to.deep.equal([]);
  });

  it('the read models are queried with their declared row types', () => {
    const query = (db: Kysely<ReadModels>) => async () => {
      const row = await db.selectFrom('payments').selectAll().executeTakeFirstOrThrow();
      const createdAt: Date = row.created_at;
      // @ts-expect-error a payment's status is one of its statuses, not any string
      const status: 'NOT_A_STATUS' = row.status;
      return { createdAt, status };
    };
    expect(query).to.be.a('function');
  });
});
