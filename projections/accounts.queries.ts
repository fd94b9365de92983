/**
 * Queries of the accounts read model: the rows routes answer with, and the accounts' port
 * (src/accounts/ports.ts), which `accountReads` implements.
 */
import type { Kysely } from 'kysely';
import { findOwned } from '../src/db/owned.ts';
import type { Tenant } from '../src/domain/tenancy.ts';
import type { AccountRow } from './accounts.ts';
import type { ReadModels } from './readModels.ts';

/** The account's read-model row, if `tenant` may see it (notFound otherwise). */
export function ownedAccount(db: Kysely<ReadModels>, tenant: Tenant, accountId: string): Promise<AccountRow> {
  return findOwned(db, 'accounts', tenant, 'account_id', accountId, 'account');
}

/** The accounts' port (src/accounts/ports.ts) over the read models. */
export function accountReads(db: Kysely<ReadModels>) {
  return {
    owned: (tenant: Tenant, accountId: string) => ownedAccount(db, tenant, accountId),
    open: (accountId: string) => db.selectFrom('accounts').select(['account_id', 'client_id', 'currency'])
      .where('account_id', '=', accountId).executeTakeFirst(),
  };
}
