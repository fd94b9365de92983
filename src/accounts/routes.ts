/** The Accounts endpoints of the interface, plus the operator's test adjustment. */
import type { Kysely } from 'kysely';
import {
  accountPageSchema, accountSchema, adjustmentSchema, balanceAsOfQuerySchema, balanceAsOfSchema, createAccountSchema,
  listAccountsQuerySchema, statementQuerySchema, statementSchema, updateAccountSchema, type AccountRecord,
} from '../../schemas/accounts.ts';
import { once } from 'node:events';
import type { Response } from 'express';
import { balanceAt, STATEMENT_CSV_COLUMNS, statementCsvRow, writeStatement } from '../../projections/statements.ts';
import { idParamSchema } from '../../schemas/common.ts';
import { accountsPage, type AccountRow } from '../../projections/accounts.ts';
import { balancesOf } from '../../projections/ledger.ts';
import { formatAmount, parseAmount } from '../domain/money.ts';
import { defineRoute, type AnyRoute, type HandlerInput, type HandlerResult } from '../http/route.ts';
import type { Services } from '../http/services.ts';
import { clientIdOf, tenantOf, commandMetadata } from '../http/tenancy.ts';
import { invalidParam } from '../http/errors.ts';
import { pageOfResults, pageRequest } from '../http/pagination.ts';
import { dayRange } from '../http/dates.ts';
import { accountWithHistory, adjustAccount, closeAccount, openAccount, updateAccount } from './handlers.ts';
import type { ReadModels } from '../../projections/readModels.ts';
import { ownedAccount } from '../../projections/accounts.queries.ts';

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

/** An account of this client, as the API shows it. */
async function recordOf(services: Services, clientId: string, accountId: string): Promise<AccountRecord> {
  const db = services.readModels;
  return (await accountRecords(db, [await ownedAccount(db, { clientId }, accountId)]))[0]!;
}

export function accountRoutes(services: Services): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/accounts', operationId: 'listAccounts', summary: 'List accounts', tags, access: 'client',
      description: 'Newest first. startDate and endDate bound the creation day (dd/mm/yyyy, UTC, inclusive).',
      schemas: { query: listAccountsQuerySchema },
      responses: { 200: { description: 'a page of accounts', schema: accountPageSchema } },
      handler: (input) => listAccounts(services, input),
    }),
    defineRoute({
      method: 'post', path: '/accounts', operationId: 'createAccount', summary: 'Open an account for an identity',
      description: 'Accounts start ACTIVE with a generated, never reused account number. A sub-account (parentId) ' +
        'must have its parent’s identity and currency.',
      tags, access: 'client', schemas: { body: createAccountSchema },
      responses: { 201: { description: 'the account', schema: accountSchema }, 404: { description: 'no such identity or parent account', schema: { $ref: '#/components/schemas/Error' } } },
      handler: (input) => createAccount(services, input),
    }),
    defineRoute({
      method: 'get', path: '/accounts/:id', operationId: 'getAccount', summary: 'Get an account', tags, access: 'client',
      schemas: { params: idParamSchema },
      responses: { 200: { description: 'the account', schema: accountSchema }, 404: notFoundResponse },
      handler: (input) => getAccount(services, input),
    }),
    defineRoute({
      method: 'patch', path: '/accounts/:id', operationId: 'updateAccount', summary: 'Rename, re-reference, block or unblock',
      tags, access: 'client', schemas: { params: idParamSchema, body: updateAccountSchema },
      responses: { 200: { description: 'the account', schema: accountSchema }, 404: notFoundResponse },
      handler: (input) => onUpdateAccount(services, input),
    }),
    defineRoute({
      method: 'delete', path: '/accounts/:id', operationId: 'deleteAccount', summary: 'Delete an account with zero balance',
      description: 'An account that holds funds answers 422.', tags, access: 'client', schemas: { params: idParamSchema },
      responses: { 200: { description: 'deleted (no body)' }, 404: notFoundResponse },
      handler: (input) => deleteAccount(services, input),
    }),
    defineRoute({
      method: 'get', path: '/accounts/:id/statement', operationId: 'getAccountStatement',
      summary: 'The account’s statement over a range: opening balance, every movement, closing balance',
      description: 'The range is [from, to): movements at `from` count, those at `to` belong to the next statement, so ' +
        'consecutive statements join exactly. Each line is one posting of the ledger, dated by the event that caused it, ' +
        'with the balance after it, its payment (when it belongs to one) and the stored event it came from. JSON by ' +
        'default; `Accept: text/csv` answers CSV (RFC 4180: a header row, then an "opening balance" row, the lines, and ' +
        'a "closing balance" row, the balances in the balanceAfter column). The body is streamed, a range of any length ' +
        'read in pages; a failure half way cuts the connection, so a truncated statement never looks complete. A closed (deleted) ' +
        'account’s statement stays readable to its owner.',
      tags, access: 'client', raw: true, schemas: { params: idParamSchema, query: statementQuerySchema },
      responses: {
        200: { description: 'the statement (JSON, or CSV with Accept: text/csv)', schema: statementSchema },
        400: { description: '`from` is not before `to`', schema: { $ref: '#/components/schemas/Error' } },
        404: notFoundResponse,
      },
      handler: (input) => getAccountStatement(services, input),
    }),
    defineRoute({
      method: 'get', path: '/accounts/:id/balance', operationId: 'getAccountBalanceAsOf',
      summary: 'The account’s balance at an instant',
      description: 'The sum of the account’s ledger movements up to and including `asOf` (an instant in the past or ' +
        'now; a future instant answers today’s balance plus nothing). Holds are not movements: see availableFunds on ' +
        'the account for funds held now. A closed (deleted) account’s balances stay readable to its owner.',
      tags, access: 'client', schemas: { params: idParamSchema, query: balanceAsOfQuerySchema },
      responses: { 200: { description: 'the balance', schema: balanceAsOfSchema }, 404: notFoundResponse },
      handler: (input) => getAccountBalanceAsOf(services, input),
    }),
    defineRoute({
      method: 'post', path: '/operator/accounts/:id/adjustments', operationId: 'adjustAccount',
      summary: 'Test deposit or correction: a balanced ledger entry against the currency’s adjustments account',
      tags: ['Operator'], access: 'operator', schemas: { params: idParamSchema, body: adjustmentSchema },
      description: 'Operators act on the accounts of every client.',
      responses: { 201: { description: 'the account after the adjustment', schema: accountSchema }, 404: { description: 'no such account (of any client)', schema: { $ref: '#/components/schemas/Error' } } },
      handler: (input) => onAdjustAccount(services, input),
    }),
  ];
}

/**
 * A streamed answer that fails half way cannot change its status any more: the connection is cut, so the client
 * sees a truncated body (no closing balance), never a statement that looks complete.
 */
/**
 * Resolves when `res` takes more again; rejects when its connection closed first, so a statement whose reader went
 * away stops there instead of waiting for a 'drain' that never comes.
 */
async function drained(res: Response): Promise<void> {
  if (res.destroyed) throw new Error('the client closed the connection');
  const stop = new AbortController();
  try {
    await Promise.race([
      once(res, 'drain', { signal: stop.signal }),
      once(res, 'close', { signal: stop.signal }).then(() => { throw new Error('the client closed the connection'); }),
    ]);
  } finally {
    stop.abort();
  }
}

function abandon(res: Response, error: unknown): undefined {
  res.destroy(error instanceof Error ? error : new Error(String(error)));
  return undefined;
}

async function listAccounts(
  services: Services, { query, req }: HandlerInput<{ query: typeof listAccountsQuerySchema }>,
): Promise<HandlerResult> {
  const { from, before } = dayRange(query.startDate, query.endDate);
  const page = pageRequest(query);
  const { rows, total } = await accountsPage(services.readModels, clientIdOf(req), { ...query, from, before }, page);
  return { status: 200, body: pageOfResults(await accountRecords(services.readModels, rows), total, page) };
}

async function createAccount(
  services: Services, { body, req }: HandlerInput<{ body: typeof createAccountSchema }>,
): Promise<HandlerResult> {
  const id = await openAccount(services, clientIdOf(req), body, commandMetadata(req));
  return { status: 201, body: await recordOf(services, clientIdOf(req), id) };
}

async function getAccount(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  return { status: 200, body: await recordOf(services, clientIdOf(req), params.id) };
}

async function onUpdateAccount(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof updateAccountSchema }>,
): Promise<HandlerResult> {
  const { id } = params;
  await updateAccount(services, tenantOf(req), id, body, commandMetadata(req));
  return { status: 200, body: await recordOf(services, clientIdOf(req), id) };
}

async function deleteAccount(services: Services, { params, req }: HandlerInput<{ params: typeof idParamSchema }>): Promise<HandlerResult> {
  const { id } = params;
  await closeAccount(services, tenantOf(req), id, commandMetadata(req));
  return { status: 200 };
}

async function getAccountStatement(
  services: Services, { params, query, req, res }: HandlerInput<{ params: typeof idParamSchema; query: typeof statementQuerySchema }>,
): Promise<void> {
  const db = services.readModels;
  const from = new Date(query.from);
  const to = new Date(query.to);
  if (!(from < to)) throw invalidParam('query parameter from must be before to');
  const { accountId, currency } = await accountWithHistory(services, tenantOf(req), params.id);
  const csv = req.accepts(['application/json', 'text/csv']) === 'text/csv';
  const write = async (chunk: string) => { if (!res.write(chunk)) await drained(res); };
  res.status(200).type(csv ? 'text/csv' : 'application/json');
  let first = true;
  const closing = await writeStatement(db, accountId, currency, from, to, {
    header: (header) => csv
      ? write(`${STATEMENT_CSV_COLUMNS.join(',')}\r\n${statementCsvRow({ entryId: '', lineNo: 0, occurredAt: header.from,
        description: 'opening balance', amount: '', balanceAfter: header.openingBalance, paymentId: null, eventId: '' })}`)
      : write(`${JSON.stringify(header).slice(0, -1)},"lines":[`),
    line: (line) => {
      const text = csv ? statementCsvRow(line) : `${first ? '' : ','}${JSON.stringify(line)}`;
      first = false;
      return write(text);
    },
  }).catch((error: unknown) => abandon(res, error));
  if (closing === undefined) return;
  res.end(csv
    ? statementCsvRow({ entryId: '', lineNo: 0, occurredAt: to.toISOString(), description: 'closing balance', amount: '',
      balanceAfter: closing, paymentId: null, eventId: '' })
    : `],"closingBalance":${JSON.stringify(closing)}}`);
}

async function getAccountBalanceAsOf(
  services: Services, { params, query, req }: HandlerInput<{ params: typeof idParamSchema; query: typeof balanceAsOfQuerySchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
  const asOf = new Date(query.asOf);
  const { accountId, currency } = await accountWithHistory(services, tenantOf(req), params.id);
  const balance = await balanceAt(db, accountId, currency, asOf, true);
  return { status: 200, body: { accountId, currency, asOf: asOf.toISOString(), balance } };
}

async function onAdjustAccount(
  services: Services, { params, body, req }: HandlerInput<{ params: typeof idParamSchema; body: typeof adjustmentSchema }>,
): Promise<HandlerResult> {
  const db = services.readModels;
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
  await adjustAccount(services, 'any', id, canonical, reason, commandMetadata(req, { clientId: row.client_id }));
  return { status: 201, body: await recordOf(services, row.client_id, id) };
}
