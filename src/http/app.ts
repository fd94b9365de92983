/**
 * The HTTP edge. Liveness and readiness for now; the platform (auth, validation, idempotency, OpenAPI)
 * mounts here.
 */
import express, { type Express } from 'express';
import type { Storage } from '../storage.ts';
import type { ProjectionDaemon } from '../projection/daemon.ts';
import { comparePositions } from '../eventstore/position.ts';

export interface AppDependencies {
  storage: Storage;
  projections: ProjectionDaemon;
}

export function createApp({ storage, projections }: AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');

  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Ready when the database answers and no active projection lags behind the head of the feed for long.
  app.get('/ready', async (_req, res) => {
    try {
      const [head, states] = await Promise.all([storage.store.headPosition(), projections.status()]);
      const lagging = states
        .filter((s) => s.status === 'active' && head !== null && (s.checkpoint === null || comparePositions(s.checkpoint, head) < 0))
        .filter((s) => Date.now() - s.updatedAt.getTime() > 5_000)
        .map((s) => s.name);
      const ready = lagging.length === 0;
      res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'catchingUp', lagging });
    } catch {
      res.status(503).json({ status: 'databaseUnreachable', lagging: [] });
    }
  });

  return app;
}
