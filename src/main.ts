/**
 * Boot: configuration → storage → projections and reactors → HTTP. Stops gracefully on SIGTERM/SIGINT:
 * stop accepting, drain requests in flight, stop consumers, close the stores; exits 0 when every request in
 * flight was answered, 1 when the grace period (SHUTDOWN_GRACE_MS) ran out first.
 */
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError } from './db/dataDirLock.ts';
import { createApp } from './http/app.ts';
import { createLogger } from './logging.ts';
import { openStorage } from './storage.ts';
import { storedEvents } from './contexts.ts';
import { assembleService } from './assemble.ts';
import { countRequestsInFlight, stopService } from './shutdown.ts';
import { systemRuntime } from './domain/runtime.ts';
import { DEMO_CLIENT_ID, describeCredentials, ensureDemoClient } from './clients/demoClient.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(`configuration error: ${error.message}`);
    throw error;
  }
  const logger = createLogger(config.logLevel);

  let opened;
  try {
    opened = await openStorage(config, storedEvents.upcasters);
  } catch (error) {
    if (error instanceof DataDirLockedError) fail(error.message);
    throw error;
  }

  const { services, projections, scheduler, storage } = await assembleService({ config, logger, runtime: systemRuntime, storage: opened });
  const { app } = createApp(services);
  const server = app.listen(config.port, config.host);
  const requestsInFlight = countRequestsInFlight(server);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;

  // Installed before the service says it listens, so that a signal from then on always drains and stops it
  // (without them, node's default for SIGTERM and SIGINT ends the process at once).
  let stopping = false;
  let startingUp: Promise<void> = Promise.resolve();
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: draining requests');
    // The demo client's creation (one append, then a bounded wait for the read models) ends before the storage
    // it writes to is closed; should it fail, main() reports that.
    await startingUp.catch(() => undefined);
    const outcome = await stopService(
      { server, scheduler, projections, closeStorage: () => storage.close() }, config.shutdownGraceMs, requestsInFlight);
    if (!outcome.drained) {
      // A supervisor reads the exit code: the clients of these requests got no answer, so this stop was not
      // a clean one.
      logger.error({ requestsCut: outcome.requestsCut, graceMs: config.shutdownGraceMs },
        'stopped, but the grace period ran out with requests still in flight: their connections were cut');
      process.exit(1);
    }
    logger.info('stopped');
    process.exit(0);
  };
  const stop = (signal: string) => shutdown(signal).catch((error: unknown) => {
    logger.error({ err: error }, 'shutdown failed');
    process.exit(1);
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  storage.announcePort?.(port);
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  logger.info({ mode: storage.mode, storage: storage.describe, port },
    `payments-ledger listening on http://${shownHost}:${port} (${storage.mode} mode, ${storage.describe})`);
  if (!config.operatorApiKey) logger.info('operator routes are disabled: set OPERATOR_API_KEY to enable them');

  // After listening, as on every later start the read models catch up while the service already answers: on
  // a new data directory the projectors are still creating their tables. The credentials are printed once
  // the clients read model has the demo client, so they work from the moment they are shown.
  startingUp = (async () => {
    const demo = storage.mode === 'embedded' ? await ensureDemoClient(services, systemRuntime) : null;
    if (demo) {
      // Printed, not logged: the secret must not end up in log collectors.
      process.stdout.write(`\n${describeCredentials(demo)}\n\n`);
    } else if (storage.mode === 'embedded') {
      logger.info(`demo client ${DEMO_CLIENT_ID} exists (its credentials were shown at the first start)`);
    }
  })();
  await startingUp;
}

function fail(message: string): never {
  process.stderr.write(`payments-ledger: ${message}\n`);
  process.exit(1);
}

main().catch((error: unknown) => {
  process.stderr.write(`payments-ledger failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
