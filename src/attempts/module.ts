import { defineContext } from '../module.ts';
import { attemptEvents } from './events.ts';
import { attemptStreamType } from './decider.ts';
import { attemptsProjector } from '../../projections/attempts.ts';
import { attemptRoutes } from './routes.ts';

/** Payment attempts: a payment checked against the catalog and the account before it runs, kept with status ATTEMPT. */
export const attemptsContext = defineContext({
  name: 'attempts',
  events: [attemptEvents],
  streams: [attemptStreamType],
  routes: attemptRoutes,
  projectors: [attemptsProjector],
});
