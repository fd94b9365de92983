/**
 * What the types promise, checked where it matters: by the compiler (`npm run typecheck`, part of `npm test`).
 * Each `@ts-expect-error` below must be an error, or the type check fails; the handlers are never run.
 */
import { expect } from 'chai';
import type { Kysely } from 'kysely';
import { defineRoute } from '../src/http/route.ts';
import { defineProjector } from '../src/projection/projector.ts';
import { idParamSchema } from '../schemas/common.ts';
import { listPaymentsQuerySchema, reviewDecisionSchema } from '../schemas/payments.ts';
import type { ReadModels } from '../projections/readModels.ts';

describe('types: routes and read models', () => {
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
    const projector = defineProjector<Tables>({
      name: 'typed', version: 1, tables: ['second', 'first'], async setup() {}, handlers: {},
    });
    // @ts-expect-error `second` is missing from the list
    defineProjector<Tables>({ name: 'typed', version: 1, tables: ['first'], async setup() {}, handlers: {} });
    // @ts-expect-error `first` is listed twice
    defineProjector<Tables>({ name: 'typed', version: 1, tables: ['first', 'first', 'second'], async setup() {}, handlers: {} });
    expect(projector.tables).to.deep.equal(['second', 'first']);
    expect(definition).to.be.a('function');
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
