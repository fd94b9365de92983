/** Everything a route needs, built once per process. */
import type { Config } from '../config.ts';
import type { Logger } from '../logging.ts';
import type { Runtime } from '../domain/runtime.ts';
import type { Storage } from '../storage.ts';
import type { ProjectionDaemon } from '../projection/daemon.ts';
import type { Position } from '../eventstore/position.ts';
import { ClientDirectory } from '../clients/directory.ts';
import { TokenSigner } from '../clients/tokens.ts';
import { loadSigningKey } from '../clients/signingKey.ts';
import { IdempotencyStore } from './idempotency.ts';
import { RateLimiter } from './rateLimit.ts';
import { Metrics } from './metrics.ts';
import type { ReadModelFreshness } from './readModelFreshness.ts';
import { loadCatalog, type Catalog } from '../catalog/catalog.ts';
import type { PaymentProvider } from '../payments/provider.ts';
import { SandboxProvider } from '../payments/sandbox/provider.ts';

export interface Services {
  config: Config;
  logger: Logger;
  runtime: Runtime;
  storage: Storage;
  projections: ProjectionDaemon;
  metrics: Metrics;
  /** Which requests in progress answer before the read models include their writes. */
  freshness: ReadModelFreshness;
  clients: ClientDirectory;
  tokens: TokenSigner;
  idempotency: IdempotencyStore;
  rateLimiter: RateLimiter;
  /** Per source address, for requests not authenticated as a client, operator or provider. */
  addressRateLimiter: RateLimiter;
  /** The payment catalog (node types, banks, FX rates), loaded and checked once. */
  catalog: Catalog;
  /** The payment rails; the sandbox provider until real adapters plug in behind the same port. */
  provider: PaymentProvider;
  /**
   * Waits (bounded, READ_YOUR_WRITES_TIMEOUT_MS) until the read models reflect a write that reached
   * `position`: those that handle one of `eventTypes`, or all of them when the types are not given. When
   * they do not in time, the request that wrote it answers with `X-Read-Models: stale`.
   */
  readYourWrites(position: Position | null, eventTypes?: readonly string[]): Promise<void>;
}

export async function createServices(deps: {
  config: Config; logger: Logger; runtime: Runtime; storage: Storage; projections: ProjectionDaemon; metrics: Metrics;
  freshness: ReadModelFreshness;
}): Promise<Services> {
  const { config, storage, projections, runtime } = deps;
  const key = await loadSigningKey(storage.database);
  return {
    ...deps,
    clients: new ClientDirectory(storage.database.db),
    tokens: new TokenSigner(key, config.tokenTtlSeconds, () => runtime.now()),
    idempotency: new IdempotencyStore(storage.database),
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst),
    addressRateLimiter: new RateLimiter(config.addressRateLimitPerSecond, config.addressRateLimitBurst),
    catalog: loadCatalog(),
    provider: new SandboxProvider(config.quoteTtlSeconds),
    // Best effort: the command is already recorded, so a failure to wait must not turn into an error answer
    // (a client retrying after a 5xx would run the command twice).
    async readYourWrites(position, eventTypes) {
      if (!position) return;
      const caughtUp = await projections.waitFor(position, config.readYourWritesTimeoutMs, eventTypes).catch((error: unknown) => {
        deps.logger.error({ err: error }, 'could not wait for the read models');
        return false;
      });
      if (!caughtUp) {
        deps.freshness.timedOut(position);
        deps.logger.warn({ position: `${position.commit}-${position.prepare}` },
          'read models did not catch up within READ_YOUR_WRITES_TIMEOUT_MS; answering anyway, marked stale');
      }
    },
  };
}
