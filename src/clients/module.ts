import { defineContext } from '../module.ts';
import { clientEvents } from './events.ts';
import { clientStreamType } from './decider.ts';
import { clientsProjector } from '../../projections/clients.ts';
import { clientRoutes } from './routes.ts';

/** Clients (tenants): provisioning, credentials, tokens. */
export const clientsContext = defineContext({
  name: 'clients', events: [clientEvents], streams: [clientStreamType], routes: clientRoutes, projectors: [clientsProjector],
});
