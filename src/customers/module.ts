import { defineContext } from '../module.ts';
import { customerWebhookMappings } from '../../projections/webhookMappings.ts';
import { customerEvents } from './events.ts';
import { customerStreamType, documentNumberStreamType } from './decider.ts';
import { customersProjector } from '../../projections/customers.ts';
import { documentNumbersReactor } from './reactor.ts';
import { customerRoutes } from './routes.ts';

/** Customers (payers), their documents and operation levels; document numbers reserved for creations that never came are given back. */
export const customersContext = defineContext({
  name: 'customers',
  events: [customerEvents],
  streams: [customerStreamType, documentNumberStreamType],
  webhooks: customerWebhookMappings,
  routes: customerRoutes,
  projectors: [customersProjector],
  reactors: (platform) => [documentNumbersReactor(platform)],
});
