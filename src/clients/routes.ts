/** POST /auth, and the operator routes that provision and remove clients and set their review thresholds. */
import {
  authBodySchema, authResponseSchema, clientCredentialsSchema, currentClientSchema, createClientBodySchema,
  reviewThresholdsBodySchema, reviewThresholdsSchema,
} from '../../schemas/clients.ts';
import type { Request } from 'express';
import { idParamSchema } from '../../schemas/common.ts';
import { activeClientThresholds } from '../../projections/clients.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import { clientIdOf, commandMetadata } from '../http/tenancy.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { deleteClient, registerClient, setReviewThresholds } from './handlers.ts';

const errorSchema = { $ref: '#/components/schemas/Error' } as const;

/** The thresholds a client's payments are reviewed by: its own, else the environment's. */
async function thresholdsOf(services: Services, clientId: string) {
  const row = await activeClientThresholds(services.readModels, clientId);
  if (!row) throw notFound(`client ${clientId} not found`);
  const own = row.review_threshold_basic_usd !== null && row.review_threshold_standard_usd !== null;
  return {
    clientId,
    basicUsd: row.review_threshold_basic_usd ?? services.config.reviewThresholdBasicUsd,
    standardUsd: row.review_threshold_standard_usd ?? services.config.reviewThresholdStandardUsd,
    source: own ? 'CLIENT' as const : 'DEFAULT' as const,
  };
}

export function clientRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/auth', operationId: 'authenticate',
      summary: 'Exchange client credentials for a bearer token',
      description: 'Needs the client’s x-api-key header; User-Agent is optional here. `expiresIn` is in seconds.',
      tags: ['Authentication'], access: 'apiKey',
      secretFields: ['accessToken'],
      schemas: { body: authBodySchema },
      responses: { 200: { description: 'a bearer token', schema: authResponseSchema } },
      handler: (input) => authenticate(services, input),
    }),
    defineRoute({
      method: 'get', path: '/me', operationId: 'currentClient',
      summary: 'The client the credentials belong to (a cheap way to check them)',
      tags: ['Authentication'], access: 'client',
      schemas: {},
      responses: { 200: { description: 'the calling client', schema: currentClientSchema } },
      handler: (input) => currentClient(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/clients', operationId: 'createClient',
      summary: 'Provision a client (tenant)',
      description: 'Answers the client’s credentials once; they are stored hashed and cannot be shown again.',
      tags: ['Operator'], access: 'operator',
      secretFields: ['clientSecret', 'apiKey'],
      schemas: { body: createClientBodySchema },
      responses: { 201: { description: 'the new client and its credentials', schema: clientCredentialsSchema } },
      handler: (input) => createClient(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/operator/clients/:id', operationId: 'deleteClient',
      summary: 'Remove a client: its keys and tokens stop working at once',
      tags: ['Operator'], access: 'operator',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted' }, 404: { description: 'no such client', schema: { $ref: '#/components/schemas/Error' } } },
      handler: (input) => onDeleteClient(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/clients/:id/review-thresholds', operationId: 'setClientReviewThresholds',
      summary: 'Set the amounts from which a client’s payments are reviewed',
      description: 'USD-equivalent amounts (converted at the catalog’s rates): a payment of a BASIC payer, or of none, is reviewed from '
        + '`basicUsd`, one of a STANDARD payer from `standardUsd` (at least `basicUsd`); FULL payers never, INACTIVE ones fail at once. '
        + 'Recorded on the client’s stream; payments created after the answer use them. Without this, REVIEW_THRESHOLD_BASIC_USD and '
        + 'REVIEW_THRESHOLD_STANDARD_USD apply.',
      tags: ['Operator'], access: 'operator',
      schemas: { params: idParamSchema, body: reviewThresholdsBodySchema },
      responses: {
        200: { description: 'the client’s thresholds now', schema: reviewThresholdsSchema },
        400: { description: 'standardUsd below basicUsd', schema: errorSchema },
        404: { description: 'no such client', schema: errorSchema },
      },
      handler: (input) => setClientReviewThresholds(services, input),
    }),
    defineRoute({
      method: 'get', path: '/operator/clients/:id/review-thresholds', operationId: 'getClientReviewThresholds',
      summary: 'The amounts from which a client’s payments are reviewed',
      tags: ['Operator'], access: 'operator',
      schemas: { params: idParamSchema },
      responses: {
        200: { description: 'the client’s thresholds, or the defaults', schema: reviewThresholdsSchema },
        404: { description: 'no such client', schema: errorSchema },
      },
      handler: (input) => getClientReviewThresholds(services, input),
    }),
  ];
}

async function authenticate(services: Services, { body, req }: HandlerInput<{ body: typeof authBodySchema }>): Promise<HandlerResult> {
  // Verified first, whatever the clientId: a refusal takes as long for an unknown or foreign client.
  const matches = await services.clients.clientSecretMatches(body.clientId, body.clientSecret);
  if (!matches || req.caller.kind !== 'client' || req.caller.clientId !== body.clientId) {
    throw unauthorized('clientId and clientSecret do not match this API key');
  }
  const { accessToken, expiresIn } = services.tokens.issue(body.clientId);
  return { status: 200, body: { accessToken, tokenType: 'Bearer', expiresIn } };
}

async function currentClient(services: Services, { req }: { req: Request }): Promise<HandlerResult> {
  const client = await services.clients.byId(clientIdOf(req));
  if (!client) throw unauthorized();
  return { status: 200, body: { clientId: client.client_id, name: client.name } };
}

async function createClient(
  services: Services, { body, req }: HandlerInput<{ body: typeof createClientBodySchema }>,
): Promise<HandlerResult> {
  const { name } = body;
  const credentials = await registerClient(services, services.runtime, name, commandMetadata(req));
  return { status: 201, body: credentials };
}

async function onDeleteClient(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  await deleteClient(services, services.runtime, params.id, commandMetadata(req));
  return { status: 200 };
}

async function setClientReviewThresholds(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof reviewThresholdsBodySchema }>,
): Promise<HandlerResult> {
  await setReviewThresholds(services, services.runtime, params.id, body, commandMetadata(req));
  return { status: 200, body: await thresholdsOf(services, params.id) };
}

async function getClientReviewThresholds(
  services: Services, { params }: HandlerInput<{ params: typeof idParamSchema }>,
): Promise<HandlerResult> {
  return { status: 200, body: await thresholdsOf(services, params.id) };
}
