/** The Identities endpoints of the interface, plus the operator's status change. */
import {
  accessScopeSchema, childrenBodySchema, createIdentitySchema, identityPageSchema, identitySchema, identityStatusBodySchema,
  listIdentitiesQuerySchema, removeAccessScopeSchema, updateIdentitySchema, type ChildrenBody,
} from '../../schemas/identities.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { identitiesPage, identityRecords } from '../../projections/identities.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import {
  addAccessRule, addChildren, changeIdentityStatus, createIdentity, deleteIdentity, removeAccessRule, removeChildren,
  updateIdentity,
} from './handlers.ts';
import { ownedIdentity } from '../../projections/identities.queries.ts';

/** The ids a children body names, in either of its forms: the interface's bare array, or `{children: [...]}`. */
const childIdsOf = (body: ChildrenBody): string[] => (Array.isArray(body) ? body : body.children);

const tags = ['Identities'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such identity for this client; another client’s identity answers the same, and nothing changes', schema: errorSchema } as const;

/** An identity of this client, as the API shows it. */
async function recordOf(services: Services, clientId: string, identityId: string) {
  const db = services.readModels;
  return (await identityRecords(db, [await ownedIdentity(db, { clientId }, identityId)]))[0]!;
}

// A table of 10 routes, long only by the documentation the OpenAPI document shows (descriptions, responses).
export function identityRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/identities', operationId: 'listIdentities', summary: 'List identities', tags, access: 'client',
      description: 'Newest first. Filters are exact matches (email case-insensitive).',
      schemas: { query: listIdentitiesQuerySchema },
      responses: { 200: { description: 'a page of identities', schema: identityPageSchema } },
      handler: (input) => listIdentities(services, input),
    }),
    defineRoute({
      method: 'post', path: '/identities', operationId: 'createIdentity', summary: 'Create an identity (user or organization)',
      description: 'New identities start PENDING; an operator activates them with POST /operator/identities/{id}/status.',
      tags, access: 'client', schemas: { body: createIdentitySchema },
      responses: { 201: { description: 'the identity', schema: identitySchema } },
      handler: (input) => onCreateIdentity(services, input),
    }),
    defineRoute({
      method: 'get', path: '/identities/:id', operationId: 'getIdentity', summary: 'Get an identity', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the identity', schema: identitySchema }, 404: notFoundResponse },
      handler: (input) => getIdentity(services, input),
    }),
    defineRoute({
      method: 'patch', path: '/identities/:id', operationId: 'updateIdentity', summary: 'Update an identity', tags, access: 'client',
      schemas: { params: idParamSchema, body: updateIdentitySchema },
      responses: { 200: { description: 'the identity', schema: identitySchema }, 404: notFoundResponse },
      handler: (input) => onUpdateIdentity(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/identities/:id', operationId: 'deleteIdentity', summary: 'Delete an identity',
      description: 'Refused (422) while it has children. A deleted identity leaves its parent’s children and can never be linked again; ' +
        'a deletion and a link sent together are decided one after the other on the client’s identity graph.',
      tags, access: 'client', schemas: { params: idParamSchema },
      responses: {
        200: { description: 'deleted (no body)' }, 404: notFoundResponse,
        422: { description: 'the identity has children', schema: errorSchema },
      },
      handler: (input) => onDeleteIdentity(services, input),
    }),
    defineRoute({
      method: 'post', path: '/identities/:id/children', operationId: 'addIdentityChildren', summary: 'Link children',
      description: 'Children must be identities of the same client, have no other parent, and not be ancestors (no cycles); ' +
        'otherwise nothing is linked (422, or 404 for an identity that is not the client’s). All links of a client are decided on ' +
        'one graph, one request after the other: of two requests sent together that would together make a cycle or give a child ' +
        'two parents, one succeeds and the other is refused. Linking a child already under this parent changes nothing.',
      tags, access: 'client', schemas: { params: idParamSchema, body: childrenBodySchema },
      responses: {
        200: { description: 'the parent identity', schema: identitySchema }, 404: notFoundResponse,
        422: { description: 'a child is this identity or one of its ancestors (a cycle), or already has another parent', schema: errorSchema },
      },
      handler: (input) => addIdentityChildren(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/identities/:id/children', operationId: 'removeIdentityChildren', summary: 'Unlink children',
      description: 'Every id must be a child of this identity (422 otherwise, and nothing is unlinked).',
      tags, access: 'client', schemas: { params: idParamSchema, body: childrenBodySchema },
      responses: {
        200: { description: 'the parent identity', schema: identitySchema }, 404: notFoundResponse,
        422: { description: 'an id is not a child of this identity', schema: errorSchema },
      },
      handler: (input) => removeIdentityChildren(services, input),
    }),
    defineRoute({
      method: 'post', path: '/identities/:id/rules', operationId: 'addIdentityAccessRule', summary: 'Grant an access-control scope',
      description: 'Merged into securityOptions.accessControl.scopes (permissions of the same resource and reference are united).',
      tags, access: 'client', schemas: { params: idParamSchema, body: accessScopeSchema },
      responses: { 201: { description: 'the identity', schema: identitySchema }, 404: notFoundResponse },
      handler: (input) => addIdentityAccessRule(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/identities/:id/rules', operationId: 'removeIdentityAccessRule', summary: 'Revoke an access-control scope',
      description: 'Without permissions, the whole scope of that resource and reference is removed.',
      tags, access: 'client', schemas: { params: idParamSchema, body: removeAccessScopeSchema },
      responses: { 200: { description: 'revoked (no body)' }, 404: notFoundResponse },
      handler: (input) => removeIdentityAccessRule(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/identities/:id/status', operationId: 'setIdentityStatus',
      summary: 'Move an identity through verification (e.g. PENDING → ACTIVE)', tags: ['Operator'], access: 'operator',
      description: 'Operators act on the identities of every client.',
      schemas: { params: idParamSchema, body: identityStatusBodySchema },
      responses: { 200: { description: 'the identity', schema: identitySchema }, 404: { description: 'no such identity (of any client)', schema: errorSchema } },
      handler: (input) => setIdentityStatus(services, input),
    }),
  ];
}

async function listIdentities(
  services: Services, { query, req }: HandlerInput<{ query: typeof listIdentitiesQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const page = pageRequest(query);
  const filters = { ...query, ...(query.email ? { email: query.email.toLowerCase() } : {}) };
  const { rows, total } = await identitiesPage(db, clientIdOf(req), filters, page);
  return { status: 200, body: pageOfResults(await identityRecords(db, rows), total, page) };
}

async function onCreateIdentity(
  services: Services, { body, req }: HandlerInput<{ body: typeof createIdentitySchema }>,
): Promise<HandlerResult> {
  const id = await createIdentity(services, clientIdOf(req), body, commandMetadata(req));
  return { status: 201, body: await recordOf(services, clientIdOf(req), id) };
}

async function getIdentity(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  return { status: 200, body: await recordOf(services, clientIdOf(req), params.id) };
}

async function onUpdateIdentity(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof updateIdentitySchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await updateIdentity(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 200, body: await recordOf(services, clientIdOf(req), id) };
}

async function onDeleteIdentity(
  services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  await deleteIdentity(services, clientIdOf(req), params.id, commandMetadata(req));
  return { status: 200 };
}

async function addIdentityChildren(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof childrenBodySchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await addChildren(services, clientIdOf(req), id, childIdsOf(body), commandMetadata(req));
  return { status: 200, body: await recordOf(services, clientIdOf(req), id) };
}

async function removeIdentityChildren(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof childrenBodySchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await removeChildren(services, clientIdOf(req), id, childIdsOf(body), commandMetadata(req));
  return { status: 200, body: await recordOf(services, clientIdOf(req), id) };
}

async function addIdentityAccessRule(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof accessScopeSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await addAccessRule(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 201, body: await recordOf(services, clientIdOf(req), id) };
}

async function removeIdentityAccessRule(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof removeAccessScopeSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await removeAccessRule(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 200 };
}

async function setIdentityStatus(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof identityStatusBodySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const { id } = params;
  // Operators act across clients: the identity of whichever client, whose id the events record.
  const row = await ownedIdentity(db, 'any', id);
  await changeIdentityStatus(services, 'any', id, body.status, commandMetadata(req, { clientId: row.client_id }));
  return { status: 200, body: await recordOf(services, row.client_id, id) };
}
