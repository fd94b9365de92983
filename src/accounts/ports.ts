/**
 * What the account commands read of the accounts read model (projections/accounts.queries.ts implements it; the
 * composition root wires it into `Platform.reads`). The account's stream decides every write.
 */
import type { Tenant } from '../domain/tenancy.ts';
import type { AccountStatus } from './events.ts';

/** An open account as the commands read it: whose it is, its currency and status. */
export interface AccountView {
  account_id: string;
  client_id: string;
  identity_id: string;
  account_number: string;
  currency: string;
  status: AccountStatus;
}

export interface AccountReads {
  /** The open account, if `tenant` may see it (notFound otherwise). */
  owned(tenant: Tenant, accountId: string): Promise<AccountView>;
  /** The open account of this id, whichever client's; undefined when none is open (a closed one has no row). */
  open(accountId: string): Promise<Pick<AccountView, 'account_id' | 'client_id' | 'currency'> | undefined>;
}
