import { defineContext } from '../module.ts';
import { checkoutEvents } from './events.ts';
import { linkStreamType, sessionStreamType } from './decider.ts';
import { checkoutProjector } from '../../projections/checkout.ts';
import { expireDueSessions, releaseStalledReservations, RELEASE_CRON } from './jobs.ts';
import { checkoutReactor } from './reactor.ts';
import { checkoutRoutes } from './routes.ts';

/** Checkout sessions, payment links and the hosted pages a payer uses. */
export const checkoutContext = defineContext({
  name: 'checkout',
  events: [checkoutEvents],
  streams: [sessionStreamType, linkStreamType],
  routes: checkoutRoutes,
  projectors: [checkoutProjector],
  reactors: (platform) => [checkoutReactor(platform)],
  jobs: (platform) => [
    { name: 'expire-checkout-sessions', schedule: platform.config.expiryCron, run: () => expireDueSessions(platform) },
    { name: 'release-checkout-reservations', schedule: RELEASE_CRON, run: () => releaseStalledReservations(platform) },
  ],
});
