import { defineContext } from '../module.ts';
import { identityGraphStreamType, identityStreamType } from './decider.ts';
import { identitiesProjector } from '../../projections/identities.ts';
import { identityRoutes } from './routes.ts';

/** Identities (users and organizations) and their parent/child graph. */
export const identitiesContext = defineContext({ name: 'identities', streams: [identityStreamType, identityGraphStreamType], routes: identityRoutes, projectors: [identitiesProjector] });
