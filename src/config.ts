/**
 * Every setting, read once from the environment, with the defaults of the embedded mode. A bad value
 * stops the start with a message naming the variable.
 */
import { resolve } from 'node:path';

export type StorageMode = 'embedded' | 'postgres' | 'eventstoredb';

export interface Config {
  port: number;
  host: string;
  storageMode: StorageMode;
  dataDir: string;
  databaseUrl: string | null;
  databaseSchema: string;
  databasePoolSize: number;
  eventStoreConnectionString: string | null;
  logLevel: string;
  tokenTtlSeconds: number;
  operatorApiKey: string | null;
  providerSecret: string;
  sandboxAutopilot: boolean;
  readYourWritesTimeoutMs: number;
  projectionBatchSize: number;
  /** How long a projection's lease lasts unrenewed, and how often its holder renews it (standbys look as often). */
  projectionLeaseMs: number;
  projectionHeartbeatMs: number;
  shutdownGraceMs: number;
  /** Requests per second per caller (0 = no limit), and the burst allowed above it. */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /**
   * Requests per second per source address that are not authenticated as a client, operator or provider
   * (public routes, POST /auth, failed authentication; 0 = no limit), and the burst allowed above it.
   */
  addressRateLimitPerSecond: number;
  addressRateLimitBurst: number;
  /**
   * Requests per second per checkout token to the hosted page's status poll (0 = no limit), and the burst allowed
   * above it: the poll draws on this budget instead of its address's.
   */
  checkoutStatusRateLimitPerSecond: number;
  checkoutStatusRateLimitBurst: number;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  /** USD-equivalent amounts from which a payment of a BASIC / STANDARD payer is reviewed. */
  reviewThresholdBasicUsd: string;
  reviewThresholdStandardUsd: string;
  /** How long an exchange quote (purchaseCurrency ≠ currency) stays payable. */
  quoteTtlSeconds: number;
  /** When settlement batches and payment expiry run (cron, seconds field optional). */
  settlementCron: string;
  expiryCron: string;
  /** When the feed digest (tamper evidence, src/integrity/) is recorded. */
  integrityDigestCron: string;
  /**
   * How long a checkout session stays reserved for a payment that does not appear (its pay call's process died or
   * stalled between the reservation and the payment), in seconds, before the release job gives it back.
   */
  checkoutReservationTimeoutSeconds: number;
  /** Days a delivered or dropped webhook delivery, and a webhook event of GET /events, is kept before it is purged. */
  webhookDeliveryRetentionDays: number;
  /** When the retention job purges what is past its retention (cron, seconds field optional). */
  retentionCron: string;
  /** Whether webhook URLs may point at loopback and private addresses (development, tests, the embedded demo). */
  webhookAllowPrivate: boolean;
  /** The key that seals webhook secrets (32 bytes), or null to use the one kept in the database. */
  webhookSecretsKey: Buffer | null;
  /** Webhook attempts in flight per process, and per endpoint within them. */
  webhookMaxConcurrent: number;
  webhookMaxPerEndpoint: number;
  /**
   * How long a document number reserved for a customer being created waits for that customer's creation: past
   * it, the creation is given up and the number released (src/customers/reactor.ts).
   */
  abandonedReservationMs: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function decimal(env: Env, name: string, fallback: string): string {
  const raw = text(env, name);
  if (raw === null) return fallback;
  if (!/^\d{1,15}(\.\d{1,6})?$/.test(raw)) throw new ConfigError(`${name} must be a non-negative decimal like 1000 or 2500.50, got ${JSON.stringify(raw)}`);
  return raw;
}

function cronExpression(env: Env, name: string, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  const fields = raw.split(/\s+/);
  if (fields.length < 5 || fields.length > 6 || !fields.every((f) => /^[\d*/,\-A-Za-z?]+$/.test(f))) {
    throw new ConfigError(`${name} must be a cron expression of 5 or 6 fields, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase() ?? null;
  if (raw === null) return fallback;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

/** base64 of exactly 32 bytes. */
function secretsKey(env: Env, name: string): Buffer | null {
  const raw = text(env, name);
  if (raw === null) return null;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(raw)) {
    throw new ConfigError(`${name} must be 32 bytes in base64 (e.g. from \`openssl rand -base64 32\`)`);
  }
  return key;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = text(env, 'DATABASE_URL');
  const eventStoreConnectionString = text(env, 'EVENTSTORE_CONNECTION_STRING');
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// connection string');
  }
  if (eventStoreConnectionString && !/^(esdb|esdb\+discover|kurrentdb|kurrentdb\+discover):\/\//.test(eventStoreConnectionString)) {
    throw new ConfigError('EVENTSTORE_CONNECTION_STRING must be an esdb:// connection string');
  }
  const schema = text(env, 'DATABASE_SCHEMA') ?? 'payments_ledger';
  if (!/^[a-z_][a-z0-9_]{0,23}$/.test(schema)) {
    throw new ConfigError('DATABASE_SCHEMA must be lower-case letters, digits and _, at most 24 characters');
  }
  const projectionLeaseMs = integer(env, 'PROJECTION_LEASE_MS', 5_000, 500, 600_000);
  const projectionHeartbeatMs = integer(env, 'PROJECTION_HEARTBEAT_MS', 1_000, 50, 300_000);
  // A holder gets at least one more try to renew before its lease runs out.
  if (projectionHeartbeatMs * 2 > projectionLeaseMs) {
    throw new ConfigError(`PROJECTION_HEARTBEAT_MS (${projectionHeartbeatMs}) must be at most half of PROJECTION_LEASE_MS (${projectionLeaseMs})`);
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    storageMode: eventStoreConnectionString ? 'eventstoredb' : databaseUrl ? 'postgres' : 'embedded',
    dataDir: resolve(text(env, 'DATA_DIR') ?? './data'),
    databaseUrl,
    databaseSchema: schema,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 16, 1, 200),
    eventStoreConnectionString,
    logLevel,
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 3600, 60, 86_400),
    operatorApiKey: text(env, 'OPERATOR_API_KEY'),
    providerSecret: text(env, 'PROVIDER_SECRET') ?? 'sandbox-provider-secret',
    sandboxAutopilot: boolean(env, 'SANDBOX_AUTOPILOT', true),
    readYourWritesTimeoutMs: integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5_000, 0, 60_000),
    projectionBatchSize: integer(env, 'PROJECTION_BATCH_SIZE', 1_000, 1, 10_000),
    projectionLeaseMs,
    projectionHeartbeatMs,
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 120_000),
    rateLimitPerSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 100, 0, 1_000_000),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', 200, 1, 1_000_000),
    addressRateLimitPerSecond: integer(env, 'ADDRESS_RATE_LIMIT_PER_SECOND', 20, 0, 1_000_000),
    addressRateLimitBurst: integer(env, 'ADDRESS_RATE_LIMIT_BURST', 100, 1, 1_000_000),
    checkoutStatusRateLimitPerSecond: integer(env, 'CHECKOUT_STATUS_RATE_LIMIT_PER_SECOND', 2, 0, 1_000_000),
    checkoutStatusRateLimitBurst: integer(env, 'CHECKOUT_STATUS_RATE_LIMIT_BURST', 20, 1, 1_000_000),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1_048_576, 1_024, 16_777_216),
    reviewThresholdBasicUsd: decimal(env, 'REVIEW_THRESHOLD_BASIC_USD', '1000'),
    reviewThresholdStandardUsd: decimal(env, 'REVIEW_THRESHOLD_STANDARD_USD', '10000'),
    quoteTtlSeconds: integer(env, 'QUOTE_TTL_SECONDS', 900, 0, 604_800),
    settlementCron: cronExpression(env, 'SETTLEMENT_CRON', '* * * * *'),
    expiryCron: cronExpression(env, 'EXPIRY_CRON', '* * * * *'),
    integrityDigestCron: cronExpression(env, 'INTEGRITY_DIGEST_CRON', '*/5 * * * *'),
    checkoutReservationTimeoutSeconds: integer(env, 'CHECKOUT_RESERVATION_TIMEOUT_SECONDS', 120, 1, 86_400),
    webhookDeliveryRetentionDays: integer(env, 'WEBHOOK_DELIVERY_RETENTION_DAYS', 30, 0, 3_650),
    retentionCron: cronExpression(env, 'RETENTION_CRON', '0 * * * *'),
    // The embedded mode is for development and demos, where the receiver usually runs on the same machine.
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE', !eventStoreConnectionString && !databaseUrl),
    webhookSecretsKey: secretsKey(env, 'WEBHOOK_SECRETS_KEY'),
    webhookMaxConcurrent: integer(env, 'WEBHOOK_MAX_CONCURRENT', 32, 1, 1_000),
    webhookMaxPerEndpoint: integer(env, 'WEBHOOK_MAX_PER_ENDPOINT', 4, 1, 100),
    abandonedReservationMs: integer(env, 'ABANDONED_RESERVATION_MS', 60_000, 1_000, 86_400_000),
  };
}
