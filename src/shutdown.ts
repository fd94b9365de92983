/**
 * The order a running service stops in, wherever it runs (the process, tests, benchmarks): stop taking
 * requests and let those in progress finish (forcing their connections closed after `graceMs`), then the
 * scheduled jobs, then the projections (each stores its checkpoint), and only then the storage they all use.
 */
import type { Server } from 'node:http';

export interface RunningService {
  server: Server;
  scheduler: { stop(): Promise<void> };
  projections: { stop(): Promise<void> };
  closeStorage(): Promise<void>;
}

export async function stopService(service: RunningService, graceMs: number): Promise<void> {
  const { server } = service;
  const forced = setTimeout(() => server.closeAllConnections(), graceMs);
  forced.unref();
  try {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      if (graceMs <= 0) server.closeAllConnections();
    });
  } finally {
    clearTimeout(forced);
  }
  await service.scheduler.stop();
  await service.projections.stop();
  await service.closeStorage();
}
