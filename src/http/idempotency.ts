/**
 * Idempotency-Key on POST: the first request with a key runs and its answer is kept for 24 hours per caller;
 * the same key with the same request replays that answer (`Idempotent-Replayed: true`), with another
 * request is a 422, and while the first is still running is a 409. Server errors are not kept, so a retry
 * after one runs again. A request whose process died mid-way stops blocking its key after a minute.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';

export type IdempotencyOutcome =
  | { kind: 'proceed'; owner: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'inFlight' }
  | { kind: 'mismatch' };

export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${JSON.stringify(body ?? null)}`).digest('hex');
}

export class IdempotencyStore {
  constructor(
    private readonly database: Database,
    private readonly ttlSeconds = 24 * 3600,
    private readonly abandonedAfterSeconds = 60,
  ) {}

  async begin(scope: string, key: string, fingerprint: string): Promise<IdempotencyOutcome> {
    const owner = randomUUID();
    const claimed = await this.database.query(
      `INSERT INTO idempotency_keys (scope, key, request_hash, state, expires_at, owner)
       VALUES ($1, $2, $3, 'in_flight', now() + make_interval(secs => $4), $6)
       ON CONFLICT (scope, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, state = 'in_flight', status_code = NULL,
              response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at, owner = EXCLUDED.owner
        WHERE idempotency_keys.expires_at < now()
           OR (idempotency_keys.state = 'in_flight'
               AND idempotency_keys.created_at < now() - make_interval(secs => $5))
       RETURNING 1`,
      [scope, key, fingerprint, this.ttlSeconds, this.abandonedAfterSeconds, owner]);
    if (claimed.rowCount === 1) return { kind: 'proceed', owner };
    const { rows } = await this.database.query<{ request_hash: string; state: string; status_code: number | null; response_body: unknown }>(
      `SELECT request_hash, state, status_code, response_body FROM idempotency_keys WHERE scope = $1 AND key = $2`,
      [scope, key]);
    const row = rows[0];
    if (!row) return this.begin(scope, key, fingerprint); // purged between the two statements
    if (row.request_hash !== fingerprint) return { kind: 'mismatch' };
    if (row.state === 'in_flight') return { kind: 'inFlight' };
    return { kind: 'replay', status: row.status_code!, body: row.response_body };
  }

  /** Only the request that claimed the key (its owner) may record the answer. */
  async complete(scope: string, key: string, owner: string, status: number, body: unknown): Promise<void> {
    await this.database.query(
      `UPDATE idempotency_keys SET state = 'done', status_code = $4, response_body = $5::jsonb
        WHERE scope = $1 AND key = $2 AND owner = $3`,
      [scope, key, owner, status, JSON.stringify(body ?? null)]);
  }

  async abandon(scope: string, key: string, owner: string): Promise<void> {
    await this.database.query(`DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND owner = $3`, [scope, key, owner]);
  }

  /** Bounded: deletes at most `limit` expired keys per call (run from a job). */
  async purgeExpired(limit = 10_000): Promise<number> {
    const { rowCount } = await this.database.query(
      `DELETE FROM idempotency_keys WHERE ctid IN (
         SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT $1)`, [limit]);
    return rowCount ?? 0;
  }
}
