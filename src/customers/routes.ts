/** The Customers endpoints of the interface, plus the operator's document decisions and operation levels. */
import type { Request } from 'express';
import {
  addCustomerDocumentSchema, createCustomerSchema, customerDocumentParamsSchema, customerDocumentSchema, customerPageSchema,
  customerSchema, documentDecisionBodySchema, listCustomersQuerySchema, operationLevelBodySchema, updateCustomerSchema,
  uploadCustomerDocumentSchema,
} from '../../schemas/customers.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { customerDocumentRecord, customerRecords, type CustomerRow } from '../../projections/customers.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, newestFirstPage, scopedTo, tenantOf, commandMetadata } from '../http/tenancy.ts';
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

export function customerRoutes(services: Services): AnyRoute[] {
  const db = services.readModels;
  const meta = (req: Request) => commandMetadata(req);
  const recordOf = async (clientId: string, customerId: string) =>
    (await customerRecords(db, [await ownedCustomer(db, { clientId }, customerId)]))[0]!;
  /** Operators act across clients: the customer is looked up by id alone, and its client recorded. */
  const anyCustomer = (customerId: string) => ownedCustomer(db, 'any', customerId);
  const documentRecordOf = async (customerId: string, documentId: string) => {
    const row = await db.selectFrom('customer_documents').selectAll()
      .where('customer_id', '=', customerId).where('document_id', '=', documentId).executeTakeFirst();
    if (!row) throw notFound(`document ${documentId} not found`);
    return customerDocumentRecord(row);
  };
  const operatorMeta = (req: Request, row: CustomerRow) => (commandMetadata(req, { clientId: row.client_id }));

  return [
    defineRoute({
      method: 'get', path: '/customers', operationId: 'listCustomers', summary: 'List customers', tags, access: 'client',
      description: 'Newest first (createdAt, then id). Filters are exact matches (email case-insensitive).',
      schemas: { query: listCustomersQuerySchema },
      responses: { 200: { description: 'a page of customers', schema: customerPageSchema } },
      async handler({ query, req }) {
        let filtered = scopedTo(db, 'customers', clientIdOf(req));
        if (query.documentNumber) filtered = filtered.where('document_number', '=', query.documentNumber);
        if (query.email) filtered = filtered.where('email', '=', query.email.toLowerCase());
        if (query.operationLevel) filtered = filtered.where('operation_level', '=', query.operationLevel);
        const page = pageRequest(query);
        const { rows, total } = await newestFirstPage(filtered, 'customer_id', page);
        return { status: 200, body: pageOfResults(await customerRecords(db, rows), total, page) };
      },
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
      async handler({ body, req }) {
        const fields = body;
        if (fields.documentNumber === undefined && fields.email === undefined) {
          throw missingParam('body field documentNumber or email is required');
        }
        const id = await createCustomer(services, clientIdOf(req), fields, meta(req));
        return { status: 201, body: await recordOf(clientIdOf(req), id) };
      },
    }),
    defineRoute({
      method: 'get', path: '/customers/:id', operationId: 'getCustomer', summary: 'Get a customer', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the customer', schema: customerSchema }, 404: notFoundResponse },
      async handler({ params, req }) {
        return { status: 200, body: await recordOf(clientIdOf(req), params.id) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/customers/:id', operationId: 'updateCustomer', summary: 'Update a customer’s payer fields',
      tags, access: 'client', schemas: { params: idParamSchema, body: updateCustomerSchema },
      responses: {
        200: { description: 'the customer', schema: customerSchema },
        404: notFoundResponse,
        409: { description: 'another customer of this client has this documentNumber', schema: errorSchema },
      },
      async handler({ params, body, req }) {
        const { id } = params;
        await updateCustomer(services, clientIdOf(req), id, body, meta(req));
        return { status: 200, body: await recordOf(clientIdOf(req), id) };
      },
    }),
    defineRoute({
      method: 'post', path: '/customers/:id/documents', operationId: 'addCustomerDocument', summary: 'Add a document to a customer',
      description: 'Without url the document is PENDING_UPLOAD; with one it is UPLOADED (uploadedAt set) and an operator can ' +
        'approve or reject it. The first approved document makes the customer documented.',
      tags, access: 'client', schemas: { params: idParamSchema, body: addCustomerDocumentSchema },
      responses: { 201: { description: 'the document', schema: customerDocumentSchema }, 404: notFoundResponse },
      async handler({ params, body, req }) {
        const { id } = params;
        const documentId = await addCustomerDocument(services, tenantOf(req), id, body, meta(req));
        return { status: 201, body: await documentRecordOf(id, documentId) };
      },
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
      async handler({ params, body, req }) {
        const { id, documentId } = params;
        await uploadCustomerDocument(services, tenantOf(req), id, documentId, body, meta(req));
        return { status: 200, body: await documentRecordOf(id, documentId) };
      },
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
      async handler({ params, body, req }) {
        const { id, documentId } = params;
        const row = await anyCustomer(id);
        await decideCustomerDocument(services, 'any', id, documentId, body.decision, operatorMeta(req, row));
        return { status: 200, body: await recordOf(row.client_id, id) };
      },
    }),
    defineRoute({
      method: 'post', path: '/operator/customers/:id/operation-level', operationId: 'setCustomerOperationLevel',
      summary: 'Change a customer’s operation level',
      description: 'Each change records a level change (the customer.levelChanged webhook); setting the current level changes nothing.',
      tags: ['Operator'], access: 'operator', schemas: { params: idParamSchema, body: operationLevelBodySchema },
      responses: { 200: { description: 'the customer', schema: customerSchema }, 404: { description: 'no such customer', schema: errorSchema } },
      async handler({ params, body, req }) {
        const { id } = params;
        const row = await anyCustomer(id);
        await changeCustomerOperationLevel(services, 'any', id, body.operationLevel, operatorMeta(req, row));
        return { status: 200, body: await recordOf(row.client_id, id) };
      },
    }),
  ];
}
