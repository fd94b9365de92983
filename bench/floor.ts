/**
 * The floor of an HTTP create on this machine, measured in the same run as the service: express parsing the
 * JSON body and one `INSERT … RETURNING` through a `pg` Pool of the service's size, answering the row. Nothing
 * the service does per request (authentication, validation, idempotency, an append, read-your-writes) can be
 * cheaper than this, so every write route's figure is reported as a share of it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import type { Database } from '../src/db/database.ts';

export interface Floor {
  baseUrl: string;
  close(): Promise<void>;
}

export async function startFloor(database: Database, poolSize: number): Promise<Floor> {
  // Postgres: a pool of its own, as the service has; PGlite: its one connection (through the service's query).
  const pool = database.connectionString
    ? new pg.Pool({ connectionString: database.connectionString, max: poolSize, options: `-c search_path=${database.schema},public` })
    : null;
  const query = pool ? (text: string, values: unknown[]) => pool.query(text, values) : (text: string, values: unknown[]) => database.query(text, values);
  await query('CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, data jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())', []);
  const app = express();
  app.use(express.json({ limit: '1mb' }));
  app.post('/floor', (req, res, next) => {
    query('INSERT INTO bench_floor (data) VALUES ($1) RETURNING id::text, data, created_at', [req.body])
      .then(({ rows }) => res.status(200).json(rows[0]), next);
  });
  const server: Server = createServer(app);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await pool?.end();
    },
  };
}
