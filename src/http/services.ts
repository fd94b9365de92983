/** Everything a route needs, built once per process: the platform and the HTTP edge's parts. */
import type { Kysely } from 'kysely';
import type { Platform } from '../platform.ts';
import { readModelsOf, type ReadModels } from '../../projections/readModels.ts';
import { ClientDirectory } from '../clients/directory.ts';
import { TokenSigner } from '../clients/tokens.ts';
import { loadSigningKey } from '../clients/signingKey.ts';
import { IdempotencyStore } from './idempotency.ts';
import { RateLimiter } from './rateLimit.ts';
import { Metrics } from './metrics.ts';
import type { ReadModelFreshness } from './readModelFreshness.ts';

/** The platform (src/platform.ts) and the HTTP edge's own parts. */
export interface Services extends Platform {
  /**
   * The read models' tables, for the routes' answers (lists, records: what a GET shows). Commands never get them:
   * they ask their context's port (`Platform.reads`).
   */
  readModels: Kysely<ReadModels>;
  metrics: Metrics;
  /** Which requests in progress answer before the read models include their writes. */
  freshness: ReadModelFreshness;
  clients: ClientDirectory;
  tokens: TokenSigner;
  idempotency: IdempotencyStore;
  rateLimiter: RateLimiter;
  /** Per source address, for requests not authenticated as a client, operator or provider. */
  addressRateLimiter: RateLimiter;
  /** Per key a route names (`budgetKey`): the hosted checkout's status poll, per checkout token. */
  budgetRateLimiter: RateLimiter;
}

export async function createServices(platform: Platform, edge: { metrics: Metrics; freshness: ReadModelFreshness }): Promise<Services> {
  const { config, storage, runtime } = platform;
  const key = await loadSigningKey(storage.database);
  const idempotency = new IdempotencyStore(storage.database);
  await idempotency.start();
  return {
    ...platform,
    ...edge,
    readModels: readModelsOf(storage.database),
    clients: new ClientDirectory(platform.reads.clients),
    tokens: new TokenSigner(key, config.tokenTtlSeconds, () => runtime.now()),
    idempotency,
    rateLimiter: new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst),
    addressRateLimiter: new RateLimiter(config.addressRateLimitPerSecond, config.addressRateLimitBurst),
    budgetRateLimiter: new RateLimiter(config.checkoutStatusRateLimitPerSecond, config.checkoutStatusRateLimitBurst),
  };
}
