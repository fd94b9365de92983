import { defineContext } from '../module.ts';
import { testClockWebhookMappings } from '../../projections/webhookMappings.ts';
import { testClockEvents } from './events.ts';
import { testClockSlotsStreamType, testClockStreamType } from './decider.ts';
import { testClocksProjector } from '../../projections/testClocks.ts';
import { testClockReactor } from './reactor.ts';
import { testClockRoutes } from './routes.ts';

/** Test clocks (sandbox): clocks a client advances, the objects bound to them, and the simulated deposit. */
export const testClocksContext = defineContext({
  name: 'testClocks',
  events: [testClockEvents],
  webhooks: testClockWebhookMappings,
  streams: [testClockStreamType, testClockSlotsStreamType],
  routes: testClockRoutes,
  projectors: [testClocksProjector],
  reactors: (platform) => [testClockReactor(platform)],
});
