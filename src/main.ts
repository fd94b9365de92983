/**
 * Boot: configuration → storage → projections and reactors → HTTP. Stops gracefully on SIGTERM/SIGINT:
 * stop accepting, drain requests in flight, stop consumers, close the stores.
 */
import type { AddressInfo } from 'node:net';
import { allProjectors, allReactors } from '../projections/index.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError } from './db/dataDirLock.ts';
import { createApp } from './http/app.ts';
import { createLogger } from './logging.ts';
import { ProjectionDaemon } from './projection/daemon.ts';
import { openStorage } from './storage.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(`configuration error: ${error.message}`);
    throw error;
  }
  const logger = createLogger(config.logLevel);

  let storage;
  try {
    storage = await openStorage(config);
  } catch (error) {
    if (error instanceof DataDirLockedError) fail(error.message);
    throw error;
  }

  const projections = new ProjectionDaemon(storage.database, storage.store, {
    logger, batchSize: config.projectionBatchSize,
  });
  for (const projector of allProjectors()) projections.addProjector(projector);
  for (const reactor of allReactors()) projections.addReactor(reactor);
  projections.start();

  const app = createApp({ storage, projections });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  logger.info({ mode: storage.mode, storage: storage.describe, port },
    `payments-ledger listening on http://${shownHost}:${port} (${storage.mode} mode, ${storage.describe})`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: draining requests');
    const forced = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
    forced.unref();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await projections.stop();
    await storage.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

function fail(message: string): never {
  process.stderr.write(`payments-ledger: ${message}\n`);
  process.exit(1);
}

main().catch((error: unknown) => {
  process.stderr.write(`payments-ledger failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
