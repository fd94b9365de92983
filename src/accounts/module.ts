import { defineContext } from '../module.ts';
import { accountNumberStreamType, accountStreamType } from './decider.ts';
import { accountsProjector } from '../../projections/accounts.ts';
import { accountPostings } from '../../projections/ledgerPostings.ts';
import { accountEvents } from './events.ts';
import { accountRoutes } from './routes.ts';

/** Internal accounts: the ledger's write side for each client account (DESIGN section 8). */
export const accountsContext = defineContext({
  name: 'accounts',
  events: [accountEvents],
  streams: [accountStreamType, accountNumberStreamType],
  routes: accountRoutes,
  projectors: [accountsProjector],
  postings: accountPostings,
});
