import { defineContext } from '../module.ts';
import { depositPostings } from '../../projections/ledgerPostings.ts';
import { depositWebhookMappings } from '../../projections/webhookMappings.ts';
import { depositEvents } from './events.ts';
import { depositsProjector } from '../../projections/deposits.ts';
import { expireDueCompanions, expireUnassignedDeposits } from './jobs.ts';
import { assignmentReactor } from './reactor.ts';
import { depositRoutes } from './routes.ts';

/**
 * Deposits without a destination: the provider's notification, assignment to an account, the 48-hour expiry; and the
 * companions of underpaid deposits (the amount still due): paid by a further deposit, cancelled, or expired.
 */
export const depositsContext = defineContext({
  name: 'deposits',
  events: [depositEvents],
  webhooks: depositWebhookMappings,
  postings: depositPostings,
  routes: depositRoutes,
  projectors: [depositsProjector],
  reactors: (platform) => [assignmentReactor(platform)],
  jobs: (platform) => [
    { name: 'expire-deposits', schedule: platform.config.expiryCron, run: () => expireUnassignedDeposits(platform) },
    { name: 'expire-deposit-companions', schedule: platform.config.expiryCron, run: () => expireDueCompanions(platform) },
  ],
});
