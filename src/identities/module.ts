import { defineContext } from '../module.ts';
import { identityEvents } from './events.ts';
import { identityGraphStreamType, identityStreamType } from './decider.ts';
import { identitiesProjector } from '../../projections/identities.ts';
import { identityRoutes } from './routes.ts';

/** Identities (users and organizations) and their parent/child graph. */
export const identitiesContext = defineContext({
  name: 'identities',
  events: [identityEvents],
  streams: [identityStreamType, identityGraphStreamType],
  routes: identityRoutes,
  projectors: [identitiesProjector],
});
