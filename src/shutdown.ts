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

/** How a stop went: `drained` is false when the grace period ran out with requests still being answered. */
export interface StopOutcome {
  drained: boolean;
  /** Requests whose connections were cut when the grace period ran out (0 when drained). */
  requestsCut: number;
}

/**
 * Counts the requests `server` is answering: from the moment their headers are read until their response ends
 * or their connection closes. Attach it before the server takes requests, so that none is missed.
 */
export function countRequestsInFlight(server: Server): () => number {
  let inFlight = 0;
  server.on('request', (_request, response) => {
    inFlight += 1;
    response.once('close', () => { inFlight -= 1; });
  });
  return () => inFlight;
}

export async function stopService(service: RunningService, graceMs: number, requestsInFlight?: () => number): Promise<StopOutcome> {
  const { server } = service;
  let requestsCut = 0;
  const forced = setTimeout(() => {
    requestsCut = requestsInFlight?.() ?? 0;
    server.closeAllConnections();
  }, graceMs);
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
  return { drained: requestsCut === 0, requestsCut };
}
