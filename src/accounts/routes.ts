/** The Accounts endpoints of the interface, plus the operator's test adjustment. */
import type { Request } from 'express';
import type { Kysely } from 'kysely';
import {
  accountPageSchema, accountSchema, adjustmentSchema, createAccountSchema, listAccountsQuerySchema, updateAccountSchema,
  type AccountRecord,
} from '../../schemas/accounts.ts';
import { idParamSchema } from '../../schemas/common.ts';
import type { AccountRow } from '../../projections/accounts.ts';
import { balancesOf } from '../../projections/ledger.ts';
import { formatAmount, parseAmount } from '../ledger/money.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, newestFirstPage, scopedTo, tenantOf } from '../http/tenancy.ts';
import { invalidParam } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { dayRange } from '../http/dates.ts';
import { adjustAccount, closeAccount, openAccount, ownedAccount, updateAccount } from './handlers.ts';
import type { ReadModels } from '../../projections/readModels.ts';

const tags = ['Accounts'];
const notFoundResponse = { description: 'no such account for this client; another client’s account answers the same, and nothing changes', schema: { $ref: '#/components/schemas/Error' } } as const;

async function accountRecords(db: Kysely<ReadModels>, rows: AccountRow[]): Promise<AccountRecord[]> {
  const balances = await balancesOf(db, rows.map((r) => ({ accountId: r.account_id, currency: r.currency })));
  return rows.map((row) => {
    const balance = balances.get(row.account_id)!;
    return {
      id: row.account_id, identityId: row.identity_id, externalId: row.external_id, type: row.type, custody: row.custody,
      balance: balance.balance, availableFunds: balance.availableFunds, currency: row.currency, name: row.name,
      accountNumber: row.account_number, accountHolder: row.account_holder, country: row.country, status: row.status,
      parentId: row.parent_id, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
    };
  });
}

export function accountRoutes(services: Services): AnyRoute[] {
  const db = services.readModels;
  const meta = (req: Request) => ({ clientId: clientIdOf(req), actor: `client:${clientIdOf(req)}`, correlationId: req.id });
  const recordOf = async (clientId: string, accountId: string) =>
    (await accountRecords(db, [await ownedAccount(db, { clientId }, accountId)]))[0]!;

  return [
    defineRoute({
      method: 'get', path: '/accounts', operationId: 'listAccounts', summary: 'List accounts', tags, access: 'client',
      description: 'Newest first. startDate and endDate bound the creation day (dd/mm/yyyy, UTC, inclusive).',
      schemas: { query: listAccountsQuerySchema },
      responses: { 200: { description: 'a page of accounts', schema: accountPageSchema } },
      async handler({ query, req }) {
        const { from, before } = dayRange(query.startDate, query.endDate);
        let filtered = scopedTo(db, 'accounts', clientIdOf(req));
        if (query.parentId) filtered = filtered.where('parent_id', '=', query.parentId);
        if (query.accountNumber) filtered = filtered.where('account_number', '=', query.accountNumber);
        if (query.externalId) filtered = filtered.where('external_id', '=', query.externalId);
        if (query.identityId) filtered = filtered.where('identity_id', '=', query.identityId);
        if (query.type) filtered = filtered.where('type', '=', query.type);
        if (query.country) filtered = filtered.where('country', '=', query.country);
        if (query.status) filtered = filtered.where('status', '=', query.status);
        if (from) filtered = filtered.where('created_at', '>=', from);
        if (before) filtered = filtered.where('created_at', '<', before);
        const page = pageRequest(query);
        const { rows, total } = await newestFirstPage(filtered, 'account_id', page);
        return { status: 200, body: pageOfResults(await accountRecords(db, rows), total, page) };
      },
    }),
    defineRoute({
      method: 'post', path: '/accounts', operationId: 'createAccount', summary: 'Open an account for an identity',
      description: 'Accounts start ACTIVE with a generated, never reused account number. A sub-account (parentId) ' +
        'must have its parent’s identity and currency.',
      tags, access: 'client', schemas: { body: createAccountSchema },
      responses: { 201: { description: 'the account', schema: accountSchema }, 404: { description: 'no such identity or parent account', schema: { $ref: '#/components/schemas/Error' } } },
      async handler({ body, req }) {
        const id = await openAccount(services, clientIdOf(req), body, meta(req));
        return { status: 201, body: await recordOf(clientIdOf(req), id) };
      },
    }),
    defineRoute({
      method: 'get', path: '/accounts/:id', operationId: 'getAccount', summary: 'Get an account', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the account', schema: accountSchema }, 404: notFoundResponse },
      async handler({ params, req }) {
        return { status: 200, body: await recordOf(clientIdOf(req), params.id) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/accounts/:id', operationId: 'updateAccount', summary: 'Rename, re-reference, block or unblock',
      tags, access: 'client', schemas: { params: idParamSchema, body: updateAccountSchema },
      responses: { 200: { description: 'the account', schema: accountSchema }, 404: notFoundResponse },
      async handler({ params, body, req }) {
        const { id } = params;
        await updateAccount(services, tenantOf(req), id, body, meta(req));
        return { status: 200, body: await recordOf(clientIdOf(req), id) };
      },
    }),
    defineRoute({
      method: 'delete', path: '/accounts/:id', operationId: 'deleteAccount', summary: 'Delete an account with zero balance',
      description: 'An account that holds funds answers 422.', tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted (no body)' }, 404: notFoundResponse },
      async handler({ params, req }) {
        const { id } = params;
        await closeAccount(services, tenantOf(req), id, meta(req));
        return { status: 200 };
      },
    }),
    defineRoute({
      method: 'post', path: '/operator/accounts/:id/adjustments', operationId: 'adjustAccount',
      summary: 'Test deposit or correction: a balanced ledger entry against the currency’s adjustments account',
      tags: ['Operator'], access: 'operator', schemas: { params: idParamSchema, body: adjustmentSchema },
      description: 'Operators act on the accounts of every client.',
      responses: { 201: { description: 'the account after the adjustment', schema: accountSchema }, 404: { description: 'no such account (of any client)', schema: { $ref: '#/components/schemas/Error' } } },
      async handler({ params, body, req }) {
        const { id } = params;
        const { amount, reason } = body;
        // Operators act across clients: the account of whichever client, whose id the events record.
        const row = await ownedAccount(db, 'any', id);
        let canonical: string;
        try {
          canonical = formatAmount(parseAmount(amount, row.currency), row.currency);
        } catch (error) {
          throw invalidParam(`body field amount: ${(error as Error).message}`);
        }
        await adjustAccount(services, 'any', id, canonical, reason, { actor: 'operator', correlationId: req.id, clientId: row.client_id });
        return { status: 201, body: await recordOf(row.client_id, id) };
      },
    }),
  ];
}
