import { hostname } from 'node:os';
import { defineContext } from '../module.ts';
import { createWebhooksProjector, WEBHOOKS_PROJECTOR, WEBHOOKS_PROJECTOR_VERSION } from '../../projections/webhooks.ts';
import { webhookEvents } from './events.ts';
import { webhookStreamType } from './decider.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { secretBoxOf } from './handlers.ts';
import { webhookRoutes } from './routes.ts';
import { purgeWebhookHistory } from './retention.ts';

/**
 * Webhooks (DESIGN section 16): endpoints, the emitter (a projector writing the outbox from the feed), the
 * dispatcher (a worker sending the outbox), the delivery log and the events feed. The emitter follows what every
 * context's manifest maps to webhook events (`webhooks`).
 */
export const webhooksContext = defineContext({
  name: 'webhooks',
  events: [webhookEvents],
  streams: [webhookStreamType],
  routes: webhookRoutes,
  projectors: ({ webhookMappings }) => [createWebhooksProjector(WEBHOOKS_PROJECTOR_VERSION, webhookMappings)],
  jobs: (platform) => [{
    name: 'purge-webhook-history', schedule: platform.config.retentionCron,
    run: () => purgeWebhookHistory(platform.storage.database, platform.runtime.now(), platform.config.webhookDeliveryRetentionDays),
  }],
  workers: (services) => {
    const { config } = services;
    const dispatcher = new WebhookDispatcher({
      database: services.storage.database, secrets: () => secretBoxOf(services), logger: services.logger.child({ worker: 'webhooks' }),
      now: () => services.runtime.now(), owner: `${hostname()}:${process.pid}`, allowPrivate: config.webhookAllowPrivate,
      maxConcurrent: config.webhookMaxConcurrent, maxPerEndpoint: config.webhookMaxPerEndpoint,
      metrics: {
        attempted: (outcome, seconds) => services.metrics.observeWebhookAttempt(outcome, seconds),
        outbox: (pending, age) => services.metrics.setWebhookOutbox(pending, age),
      },
    });
    // New deliveries written in this process are sent at once; those of other processes at the next poll.
    for (const runner of services.projections.projectionRunners) {
      if (runner.name === WEBHOOKS_PROJECTOR) runner.on('advanced', () => dispatcher.nudge());
    }
    return [dispatcher];
  },
});
