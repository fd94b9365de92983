import { defineContext } from '../module.ts';
import { clientsProjector } from '../../projections/clients.ts';
import { clientRoutes } from './routes.ts';

/** Clients (tenants): provisioning, credentials, tokens. */
export const clientsContext = defineContext({ name: 'clients', routes: clientRoutes, projectors: [clientsProjector] });
