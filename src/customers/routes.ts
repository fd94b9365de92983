/** The Customers endpoints of the interface, plus the operator's document decisions and operation levels. */
import type { Request } from 'express';
import {
  addCustomerDocumentSchema, createCustomerSchema, customerDocumentParamsSchema, customerDocumentSchema, customerPageSchema,
  customerSchema, documentDecisionBodySchema, listCustomersQuerySchema, operationLevelBodySchema, updateCustomerSchema,
  uploadCustomerDocumentSchema,
} from '../../schemas/customers.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { customerDocument, customerDocumentRecord, customerRecords, customersPage, type CustomerRow } from '../../projections/customers.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { missingParam, notFound } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import {
  addCustomerDocument, changeCustomerOperationLevel, createCustomer, decideCustomerDocument, updateCustomer,
  uploadCustomerDocument,
} from './handlers.ts';
import { ownedCustomer } from '../../projections/customers.queries.ts';

const tags = ['Customers'];
const errorSchema = { $ref: '#/components/schemas/Error' } as const;
const notFoundResponse = { description: 'no such customer for this client; another client’s customer answers the same, and nothing changes', schema: errorSchema } as const;

/** A customer of this client, as the API shows it. */
async function recordOf(services: Services, clientId: string, customerId: string) {
  const db = services.readModels;
  return (await customerRecords(db, [await ownedCustomer(db, { clientId }, customerId)]))[0]!;
}

/** Operators act across clients: the customer is looked up by id alone, and its client recorded. */
function anyCustomer(services: Services, customerId: string): Promise<CustomerRow> {
  return ownedCustomer(services.readModels, 'any', customerId);
}

async function documentRecordOf(services: Services, customerId: string, documentId: string) {
  const row = await customerDocument(services.readModels, customerId, documentId);
  if (!row) throw notFound(`document ${documentId} not found`);
  return customerDocumentRecord(row);
}

const operatorMeta = (req: Request, row: CustomerRow) => (commandMetadata(req, { clientId: row.client_id }));

export function customerRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/customers', operationId: 'listCustomers', summary: 'List customers', tags, access: 'client',
      description: 'Newest first (createdAt, then id). Filters are exact matches (email case-insensitive).',
      schemas: { query: listCustomersQuerySchema },
      responses: { 200: { description: 'a page of customers', schema: customerPageSchema } },
      handler: (input) => listCustomers(services, input),
    }),
    defineRoute({
      method: 'post', path: '/customers', operationId: 'createCustomer', summary: 'Create a customer (payer)',
      description: 'Needs documentNumber or email. A documentNumber belongs to one customer of the client (409 otherwise). ' +
        'New customers are BASIC and not documented.',
      tags, access: 'client', schemas: { body: createCustomerSchema },
      responses: {
        201: { description: 'the customer', schema: customerSchema },
        409: { description: 'another customer of this client has this documentNumber', schema: errorSchema },
      },
      handler: (input) => onCreateCustomer(services, input),
    }),
    defineRoute({
      method: 'get', path: '/customers/:id', operationId: 'getCustomer', summary: 'Get a customer', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the customer', schema: customerSchema }, 404: notFoundResponse },
      handler: (input) => getCustomer(services, input),
    }),
    defineRoute({
      method: 'patch', path: '/customers/:id', operationId: 'updateCustomer', summary: 'Update a customer’s payer fields',
      tags, access: 'client', schemas: { params: idParamSchema, body: updateCustomerSchema },
      responses: {
        200: { description: 'the customer', schema: customerSchema },
        404: notFoundResponse,
        409: { description: 'another customer of this client has this documentNumber', schema: errorSchema },
      },
      handler: (input) => onUpdateCustomer(services, input),
    }),
    defineRoute({
      method: 'post', path: '/customers/:id/documents', operationId: 'addCustomerDocument', summary: 'Add a document to a customer',
      description: 'Without url the document is PENDING_UPLOAD; with one it is UPLOADED (uploadedAt set) and an operator can ' +
        'approve or reject it. The first approved document makes the customer documented.',
      tags, access: 'client', schemas: { params: idParamSchema, body: addCustomerDocumentSchema },
      responses: { 201: { description: 'the document', schema: customerDocumentSchema }, 404: notFoundResponse },
      handler: (input) => onAddCustomerDocument(services, input),
    }),
    defineRoute({
      method: 'patch', path: '/customers/:id/documents/:documentId', operationId: 'uploadCustomerDocument',
      summary: 'Upload the file of a customer’s document',
      description: 'For a document added without url (PENDING_UPLOAD), or an UPLOADED one not yet decided (a re-upload): ' +
        'it becomes UPLOADED with this url and contentType, uploadedAt set, and an operator can approve or reject it. ' +
        'An APPROVED or REJECTED document cannot change (422).',
      tags, access: 'client', schemas: { params: customerDocumentParamsSchema, body: uploadCustomerDocumentSchema },
      responses: {
        200: { description: 'the document', schema: customerDocumentSchema },
        404: { description: 'no such customer for this client, or no such document of it', schema: errorSchema },
        422: { description: 'the document is already APPROVED or REJECTED', schema: errorSchema },
      },
      handler: (input) => onUploadCustomerDocument(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/customers/:id/documents/:documentId/decision', operationId: 'decideCustomerDocument',
      summary: 'Approve or reject a customer’s uploaded document',
      description: 'Only an UPLOADED document can be decided (422 otherwise). The first approval makes the customer documented ' +
        'and records a level change (the customer.levelChanged webhook); a rejection changes nothing else.',
      tags: ['Operator'], access: 'operator', schemas: { params: customerDocumentParamsSchema, body: documentDecisionBodySchema },
      responses: {
        200: { description: 'the customer', schema: customerSchema },
        404: { description: 'no such customer or document', schema: errorSchema },
      },
      handler: (input) => onDecideCustomerDocument(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/customers/:id/operation-level', operationId: 'setCustomerOperationLevel',
      summary: 'Change a customer’s operation level',
      description: 'Each change records a level change (the customer.levelChanged webhook); setting the current level changes nothing.',
      tags: ['Operator'], access: 'operator', schemas: { params: idParamSchema, body: operationLevelBodySchema },
      responses: { 200: { description: 'the customer', schema: customerSchema }, 404: { description: 'no such customer', schema: errorSchema } },
      handler: (input) => setCustomerOperationLevel(services, input),
    }),
  ];
}

async function listCustomers(
  services: Services, { query, req }: HandlerInput<{ query: typeof listCustomersQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const page = pageRequest(query);
  const filters = { ...query, ...(query.email ? { email: query.email.toLowerCase() } : {}) };
  const { rows, total } = await customersPage(db, clientIdOf(req), filters, page);
  return { status: 200, body: pageOfResults(await customerRecords(db, rows), total, page) };
}

async function onCreateCustomer(
  services: Services, { body, req }: HandlerInput<{ body: typeof createCustomerSchema }>,
): Promise<HandlerResult> {
  const fields = body;
  if (fields.documentNumber === undefined && fields.email === undefined) {
    throw missingParam('body field documentNumber or email is required');
  }
  const id = await createCustomer(services, clientIdOf(req), fields, commandMetadata(req));
  return { status: 201, body: await recordOf(services, clientIdOf(req), id) };
}

async function getCustomer(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  return { status: 200, body: await recordOf(services, clientIdOf(req), params.id) };
}

async function onUpdateCustomer(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof updateCustomerSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await updateCustomer(services, clientIdOf(req), id, body, commandMetadata(req));
  return { status: 200, body: await recordOf(services, clientIdOf(req), id) };
}

async function onAddCustomerDocument(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof addCustomerDocumentSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  const documentId = await addCustomerDocument(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 201, body: await documentRecordOf(services, id, documentId) };
}

async function onUploadCustomerDocument(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof customerDocumentParamsSchema; body: typeof uploadCustomerDocumentSchema }>,
): Promise<HandlerResult> {
  const { id, documentId } = params;
  await uploadCustomerDocument(services, tenantOf(req), id, documentId, body, commandMetadata(req));
  return { status: 200, body: await documentRecordOf(services, id, documentId) };
}

async function onDecideCustomerDocument(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof customerDocumentParamsSchema; body: typeof documentDecisionBodySchema }>,
): Promise<HandlerResult> {
  const { id, documentId } = params;
  const row = await anyCustomer(services, id);
  await decideCustomerDocument(services, 'any', id, documentId, body.decision, operatorMeta(req, row));
  return { status: 200, body: await recordOf(services, row.client_id, id) };
}

async function setCustomerOperationLevel(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof operationLevelBodySchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  const row = await anyCustomer(services, id);
  await changeCustomerOperationLevel(services, 'any', id, body.operationLevel, operatorMeta(req, row));
  return { status: 200, body: await recordOf(services, row.client_id, id) };
}
