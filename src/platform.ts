/**
 * What the contexts' command handlers, jobs and reactors are given: the platform's parts, and nothing of HTTP.
 * Built once per process by the composition root (src/assemble.ts); the HTTP edge's own parts (credentials,
 * idempotency, rate limits, metrics) are added on top of it in src/http/services.ts.
 */
import type { Config } from './config.ts';
import type { Logger } from './logging.ts';
import type { Runtime } from './domain/runtime.ts';
import type { Storage } from './storage.ts';
import type { ProjectionDaemon } from './projection/daemon.ts';
import type { Position } from './eventstore/position.ts';
import { InFlight } from './projection/inFlight.ts';
import { loadCatalog, type Catalog } from './catalog/catalog.ts';
import type { PaymentProvider } from './payments/provider.ts';
import { SandboxProvider } from './payments/sandbox/provider.ts';
import type { AccountReads } from './accounts/ports.ts';
import type { AttemptReads } from './attempts/ports.ts';
import type { CheckoutReads } from './checkout/ports.ts';
import type { ClientReads } from './clients/ports.ts';
import type { DepositReads } from './deposits/ports.ts';
import type { IdentityReads } from './identities/ports.ts';
import type { PaymentReads } from './payments/ports.ts';
import type { WebhookReads } from './webhooks/ports.ts';
import { readModelsOf } from '../projections/readModels.ts';
import { accountReads } from '../projections/accounts.queries.ts';
import { attemptReads } from '../projections/attempts.queries.ts';
import { checkoutReads } from '../projections/checkout.queries.ts';
import { clientReads } from '../projections/clients.queries.ts';
import { depositReads } from '../projections/deposits.queries.ts';
import { identityReads } from '../projections/identities.queries.ts';
import { paymentReads } from '../projections/payments.queries.ts';
import { webhookReads } from '../projections/webhooks.queries.ts';

/**
 * The read models as the contexts' commands, jobs and reactors may ask them: the narrow port each context
 * declares (src/<context>/ports.ts: typed lookups in its own terms, never a table), implemented beside the tables
 * it reads (projections/<context>.queries.ts). A read model answers questions; it never judges a write.
 */
export interface Reads {
  accounts: AccountReads;
  attempts: AttemptReads;
  checkout: CheckoutReads;
  clients: ClientReads;
  deposits: DepositReads;
  identities: IdentityReads;
  payments: PaymentReads;
  webhooks: WebhookReads;
}

export interface Platform {
  config: Config;
  logger: Logger;
  runtime: Runtime;
  storage: Storage;
  /** The read models, through each context's port. */
  reads: Reads;
  projections: ProjectionDaemon;
  /** The payment catalog (node types, banks, FX rates), loaded and checked once. */
  catalog: Catalog;
  /** The payment rails; the sandbox provider until real adapters plug in behind the same port. */
  provider: PaymentProvider;
  /** The process-manager steps this process is running now, that its reactors wait for rather than repeat. */
  inFlight: InFlight;
  /**
   * Waits (bounded, READ_YOUR_WRITES_TIMEOUT_MS) until the read models reflect a write that reached
   * `position`: those that handle one of `eventTypes`, or all of them when the types are not given; never the
   * webhook events feed and outbox (their reads wait for the emitter instead, src/webhooks/routes.ts). When they do not in time, `onStale`
   * hears of it (the HTTP edge then answers the request with `X-Read-Models: stale`). Reactors are given a
   * platform where this answers at once: their commands answer nobody.
   */
  readYourWrites(position: Position | null, eventTypes?: readonly string[]): Promise<void>;
}

export function createPlatform(deps: {
  config: Config; logger: Logger; runtime: Runtime; storage: Storage; projections: ProjectionDaemon;
  onStale?(position: Position): void;
}): Platform {
  const { config, logger, projections } = deps;
  return {
    config, logger, runtime: deps.runtime, storage: deps.storage, projections,
    reads: readsOf(deps.storage),
    catalog: loadCatalog(),
    provider: new SandboxProvider(config.quoteTtlSeconds),
    inFlight: new InFlight(),
    // Best effort: the command is already recorded, so a failure to wait must not turn into an error answer
    // (a client retrying after a 5xx would run the command twice).
    async readYourWrites(position, eventTypes) {
      if (!position) return;
      const caughtUp = await projections.waitFor(position, config.readYourWritesTimeoutMs, eventTypes, { forWrite: true }).catch((error: unknown) => {
        logger.error({ err: error }, 'could not wait for the read models');
        return false;
      });
      if (!caughtUp) {
        deps.onStale?.(position);
        logger.warn({ position: `${position.commit}-${position.prepare}` },
          'read models did not catch up within READ_YOUR_WRITES_TIMEOUT_MS; answering anyway, marked stale');
      }
    },
  };
}

/** Each context's port over the read models of `storage`'s database. */
export function readsOf(storage: Storage): Reads {
  const db = readModelsOf(storage.database);
  return {
    accounts: accountReads(db),
    attempts: attemptReads(),
    checkout: checkoutReads(db),
    clients: clientReads(db),
    deposits: depositReads(db),
    identities: identityReads(db),
    payments: paymentReads(db),
    webhooks: webhookReads(db),
  };
}
