/**
 * Idempotency-Key on POST: the first request with a key runs and its answer is kept for 24 hours per caller;
 * the same key with the same request replays that answer (`Idempotent-Replayed: true`), with another
 * request is a 422, and while the first is still running is a 409. Server errors are not kept, so a retry
 * after one runs again. A request whose process died mid-way stops blocking its key after a minute.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { Coalescer } from '../db/coalescer.ts';

export type IdempotencyOutcome =
  | { kind: 'proceed'; owner: string }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'inFlight' }
  | { kind: 'mismatch' };

export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * JSON with every object's keys in code-unit order, so that a body resent with its keys in another order is
 * the same request; array order is kept (it is meaning). Linear in the body, but for sorting each object's
 * keys (keys already in order, the usual case, sort in one pass).
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + (value[i] === undefined ? 'null' : canonicalJson(value[i]));
    return `${text}]`;
  }
  const keys = Object.keys(value).sort();
  let text = '{';
  for (const key of keys) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue;
    text += (text.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(member);
  }
  return `${text}}`;
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonicalJson(body ?? null)}`).digest('hex');
}

interface Claim {
  scope: string;
  key: string;
  hash: string;
  owner: string;
}

interface Completion {
  scope: string;
  key: string;
  owner: string;
  status: number;
  body: unknown;
}

export class IdempotencyStore {
  /** Claims and completions of concurrent requests share round trips (see Coalescer). */
  private readonly claims: Coalescer<Claim, boolean>;
  private readonly completions: Coalescer<Completion, void>;

  constructor(
    private readonly database: Database,
    private readonly ttlSeconds = 24 * 3600,
    private readonly abandonedAfterSeconds = 60,
  ) {
    this.claims = new Coalescer((batch) => this.claimAll(batch));
    this.completions = new Coalescer((batch) => this.completeAll(batch));
  }

  async begin(scope: string, key: string, fingerprint: string): Promise<IdempotencyOutcome> {
    const owner = randomUUID();
    if (await this.claims.submit({ scope, key, hash: fingerprint, owner })) return { kind: 'proceed', owner };
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
    await this.completions.submit({ scope, key, owner, status, body: body ?? null });
  }

  /**
   * One INSERT for the batch; a key taken earlier (and not expired or abandoned) stays as it is. A key twice in
   * one batch is claimed by its first request only (ON CONFLICT cannot touch a row twice in a statement): the
   * others find it in flight, as they would one statement later.
   */
  private async claimAll(batch: Claim[]): Promise<boolean[]> {
    const seen = new Set<string>();
    const distinct = batch.filter((claim) => {
      const id = JSON.stringify([claim.scope, claim.key]);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    const { rows } = await this.database.query<{ owner: string }>(
      `INSERT INTO idempotency_keys (scope, key, request_hash, state, expires_at, owner)
       SELECT x.scope, x.key, x.hash, 'in_flight', now() + make_interval(secs => $2), x.owner
         FROM jsonb_to_recordset($1::jsonb) AS x(scope text, key text, hash text, owner text)
       ON CONFLICT (scope, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, state = 'in_flight', status_code = NULL,
              response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at, owner = EXCLUDED.owner
        WHERE idempotency_keys.expires_at < now()
           OR (idempotency_keys.state = 'in_flight'
               AND idempotency_keys.created_at < now() - make_interval(secs => $3))
       RETURNING owner`,
      [JSON.stringify(distinct), this.ttlSeconds, this.abandonedAfterSeconds]);
    const claimed = new Set(rows.map((row) => row.owner));
    return batch.map((claim) => claimed.has(claim.owner));
  }

  private async completeAll(batch: Completion[]): Promise<void[]> {
    await this.database.query(
      `UPDATE idempotency_keys AS k SET state = 'done', status_code = x.status, response_body = x.body
         FROM jsonb_to_recordset($1::jsonb) AS x(scope text, key text, owner text, status integer, body jsonb)
        WHERE k.scope = x.scope AND k.key = x.key AND k.owner = x.owner`,
      [JSON.stringify(batch)]);
    return batch.map(() => undefined);
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
