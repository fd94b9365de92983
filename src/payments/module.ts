import { defineContext } from '../module.ts';
import { paymentsProjector } from '../../projections/payments.ts';
import { expireDuePayments, runSettlementBatch } from './jobs.ts';
import { paymentRoutes } from './routes.ts';
import { sandboxAutopilot } from './sandbox/autopilot.ts';
import { settlementReactor } from './settlementReactor.ts';

/** Payments: the state machine, settlement through the destination account, the sandbox provider. */
export const paymentsContext = defineContext({
  name: 'payments',
  routes: paymentRoutes,
  projectors: [paymentsProjector],
  reactors: (platform) => [settlementReactor(platform), ...(platform.config.sandboxAutopilot ? [sandboxAutopilot(platform)] : [])],
  jobs: (platform) => [
    { name: 'settlement-batch', schedule: platform.config.settlementCron, run: () => runSettlementBatch(platform) },
    { name: 'expire-payments', schedule: platform.config.expiryCron, run: () => expireDuePayments(platform) },
  ],
});
