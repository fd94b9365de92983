import { defineContext } from '../module.ts';
import { paymentPostings } from '../../projections/ledgerPostings.ts';
import { paymentWebhookMappings } from '../../projections/webhookMappings.ts';
import { paymentEvents } from './events.ts';
import { refundEvents } from './refunds/events.ts';
import { paymentStreamType } from './stream.ts';
import { refundStreamType } from './refunds/decider.ts';
import { paymentsProjector } from '../../projections/payments.ts';
import { expireDuePayments, runSettlementBatch } from './jobs.ts';
import { paymentRoutes } from './routes.ts';
import { sandboxAutopilot } from './sandbox/autopilot.ts';
import { settlementReactor } from './settlementReactor.ts';
import { refundsProjector } from '../../projections/refunds.ts';
import { refundRoutes } from './refunds/routes.ts';
import { refundAutopilot, refundReactor } from './refunds/reactor.ts';

/** Payments: the state machine, settlement through the destination account, refunds, the sandbox provider. */
export const paymentsContext = defineContext({
  name: 'payments',
  events: [paymentEvents, refundEvents],
  webhooks: paymentWebhookMappings,
  postings: paymentPostings,
  streams: [paymentStreamType, refundStreamType],
  routes: (services) => [...paymentRoutes(services), ...refundRoutes(services)],
  projectors: [paymentsProjector, refundsProjector],
  reactors: (platform) => [
    settlementReactor(platform), refundReactor(platform),
    ...(platform.config.sandboxAutopilot ? [sandboxAutopilot(platform), refundAutopilot(platform)] : []),
  ],
  jobs: (platform) => [
    { name: 'settlement-batch', schedule: platform.config.settlementCron, run: () => runSettlementBatch(platform) },
    { name: 'expire-payments', schedule: platform.config.expiryCron, run: () => expireDuePayments(platform) },
  ],
});
