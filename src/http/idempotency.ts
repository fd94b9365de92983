/**
 * Idempotency-Key on POST: the first request with a key runs and its answer is kept for 24 hours per caller;
 * the same key with the same request replays that answer (`Idempotent-Replayed: true`), with another
 * request is a 422, and while the first is still running is a 409 with Retry-After.
 *
 * The kept answer is a cache, not the guard: what a request's commands create takes ids derived from the request
 * (src/eventstore/deterministicId.ts), so running the same request twice applies it once, and its second run
 * answers from what the first recorded. That is what lets a key whose request was abandoned (its process died,
 * or lost the database before it could record the answer) be taken over at once by the next try:
 * - on Postgres, the process running a request holds a liveness lock (src/db/liveness.ts); a key whose owner's
 *   lock is no longer held by anyone is taken over by the claim itself, in the same statement;
 * - a request that ended without its key released (the database unreachable then) is remembered here, and released
 *   as soon as the database answers again, or taken over by a retry in this process at once;
 * - on PGlite (one process) a key left in flight by an earlier run of the process is taken over;
 * - a key held by a process without a liveness lock (it could not take one) is taken over after a minute.
 * Server errors are not remembered: a retry after one runs again.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { Coalescer } from '../db/coalescer.ts';
import { LIVENESS_LOCK_CLASS } from '../db/liveness.ts';
import { deterministicId } from '../eventstore/deterministicId.ts';

/** Keys whose release waits for the database to answer again; past it the oldest is forgotten (then the key stays in flight until this process stops or the key expires). */
const MAX_PENDING_RELEASES = 10_000;
/** How often pending releases are tried while the database does not answer. */
const RELEASE_RETRY_MS = 1_000;
/** Seconds a client is told to wait before sending again a request whose key is in flight. */
export const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;

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

/**
 * The request's key as its commands record it: a digest of who sent it, the key and the request, so that only the
 * same request of the same caller derives the same ids (another request under the same key, a day later when the
 * key has expired, creates anew).
 */
export function requestKeyFor(scope: string, key: string, fingerprint: string): string {
  return deterministicId('request', scope, key, fingerprint);
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

/**
 * One per opened database, shared by the stores over it (tests run several services on one database in one
 * process): on PGlite, a key in flight under another incarnation was left by an earlier run of the process.
 */
const incarnations = new WeakMap<Database, string>();

/**
 * The claims' and the completions' statements, named: parsed once per connection and planned once Postgres finds
 * its generic plan as good (their planning cost the database more than running them).
 */
const CLAIM_STATEMENT = {
  name: 'idempotency_claim',
  text: `INSERT INTO idempotency_keys (scope, key, request_hash, state, expires_at, owner, owner_lock)
     SELECT x.scope, x.key, x.hash, 'in_flight', now() + make_interval(secs => $2), x.owner, $4::integer
       FROM jsonb_to_recordset($1::jsonb) AS x(scope text, key text, hash text, owner text)
     ON CONFLICT (scope, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, state = 'in_flight', status_code = NULL, response_body = NULL,
            created_at = now(), expires_at = EXCLUDED.expires_at, owner = EXCLUDED.owner, owner_lock = EXCLUDED.owner_lock
      WHERE idempotency_keys.expires_at < now()
         OR (idempotency_keys.state = 'in_flight' AND (
              idempotency_keys.owner = ANY($5::text[])
           OR (idempotency_keys.owner_lock IS NULL AND $6::boolean AND split_part(idempotency_keys.owner, '/', 1) <> $7)
           OR (idempotency_keys.owner_lock IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'advisory' AND l.classid = $8::integer::oid AND l.objid = idempotency_keys.owner_lock::oid
                    AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
           OR (idempotency_keys.owner_lock IS NULL AND NOT $6::boolean
               AND idempotency_keys.created_at < now() - make_interval(secs => $3))))
     RETURNING owner`,
};
/**
 * Each completion finds its row through the primary key, one probe per key, and updates it by its tuple id. Joined
 * directly, a plan made while the table was small (a new deployment's first minutes, before statistics exist) hashes
 * the keys and scans the whole table on every completion, and a named statement keeps that plan: in one 10 s run it
 * cost Postgres more than every other statement together. `OFFSET 0` keeps the probe a subquery of its own, whose
 * one-row lookup is an index scan whatever the table's size, and the update reaches the row by its tuple id (a key
 * compared outside with `=` would let the planner hash the table again). The owner is compared again outside, with
 * IS NOT DISTINCT FROM, which no join can hash: Postgres re-evaluates it on a row changed meanwhile, so a claim
 * taken over by another owner is left alone whatever the server's release does about re-checking a tuple id.
 */
export const COMPLETE_STATEMENT = {
  name: 'idempotency_complete',
  text: `UPDATE idempotency_keys AS k SET state = 'done', status_code = x.status, response_body = x.body
           FROM jsonb_to_recordset($1::jsonb) AS x(scope text, key text, owner text, status integer, body jsonb)
          CROSS JOIN LATERAL (
                SELECT i.ctid AS at FROM idempotency_keys i
                 WHERE i.scope = x.scope AND i.key = x.key AND i.owner = x.owner OFFSET 0) AS found
          WHERE k.ctid = found.at AND k.owner IS NOT DISTINCT FROM x.owner`,
};

/**
 * Completions and claims that wait at the same moment, in one statement: under load a request's claim and an earlier
 * request's completion share a round trip. Its claim part answers the claimed owners, as CLAIM_STATEMENT does; every
 * data-modifying part of a WITH runs to its end, read or not. Parameters: the claim's $1 … $8, then the completions.
 */
export const CLAIM_AND_COMPLETE_STATEMENT = {
  name: 'idempotency_claim_and_complete',
  text: `WITH done AS (${renumbered(COMPLETE_STATEMENT.text, '$1::jsonb', '$9::jsonb')} RETURNING 1),
claimed AS (${CLAIM_STATEMENT.text})
SELECT owner FROM claimed`,
};

function renumbered(text: string, from: string, to: string): string {
  if (text.split(from).length !== 2) throw new Error(`expected ${from} once in the statement`);
  return text.replace(from, to);
}

/** A claim or a completion, waiting for the next statement. */
type KeyWrite = { claim: Claim; completion?: never } | { completion: Completion; claim?: never };
/** What became of a write: whether a claim claimed its key (a completion: true), or its own error. */
type Settled = { claimed: boolean } | { failed: unknown };

export class IdempotencyStore {
  /** Claims and completions of concurrent requests share round trips (see Coalescer): one statement for both. */
  private readonly writes: Coalescer<KeyWrite, Settled>;
  /** This process's use of the database: the first part of every owner it writes. */
  private readonly incarnation: string;
  /** Keys whose request ended here but whose release the database did not take, by scope and key: their owner. */
  private readonly pendingReleases = new Map<string, { scope: string; key: string; owner: string }>();
  private releaseTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly database: Database,
    private readonly ttlSeconds = 24 * 3600,
    private readonly abandonedAfterSeconds = 60,
  ) {
    this.writes = new Coalescer((batch) => this.writeAll(batch));
    let incarnation = incarnations.get(database);
    if (!incarnation) incarnations.set(database, incarnation = randomUUID());
    this.incarnation = incarnation;
  }

  /** Holds this process's liveness lock before the first key is claimed (see the module's comment). */
  async start(): Promise<void> {
    await this.database.liveness?.start();
  }

  async begin(scope: string, key: string, fingerprint: string): Promise<IdempotencyOutcome> {
    const owner = `${this.incarnation}/${randomUUID()}`;
    if (settled(await this.writes.submit({ claim: { scope, key, hash: fingerprint, owner } }))) {
      this.pendingReleases.delete(pendingId(scope, key));
      return { kind: 'proceed', owner };
    }
    const { rows } = await this.database.query<{ request_hash: string; state: string; status_code: number | null; response_body: unknown }>(
      `SELECT request_hash, state, status_code, response_body FROM idempotency_keys WHERE scope = $1 AND key = $2`,
      [scope, key]);
    const row = rows[0];
    if (!row) return this.begin(scope, key, fingerprint); // purged between the two statements
    if (row.request_hash !== fingerprint) return { kind: 'mismatch' };
    if (row.state === 'in_flight') return { kind: 'inFlight' };
    return { kind: 'replay', status: row.status_code!, body: row.response_body };
  }

  /**
   * Only the request that claimed the key (its owner) may record the answer. When the database does not take it,
   * the key is released later instead (a retry then runs again, and answers what this run did).
   *
   * `lazy`: the answer rides with the next claims' statement, or goes when `sendWaiting` is called (the caller
   * must call it): a request recording its answer while it waits for the read models lets it join the claims of
   * the requests arriving meanwhile, a round trip less, and sends it on its own only once the wait is over.
   */
  async complete(scope: string, key: string, owner: string, status: number, body: unknown, options: { lazy?: boolean } = {}): Promise<void> {
    try {
      settled(await this.writes.submit({ completion: { scope, key, owner, status, body: body ?? null } }, options));
    } catch (error) {
      this.releaseLater(scope, key, owner);
      throw error;
    }
  }

  /**
   * The claims and completions that waited together: one statement (two when a key is both completed and claimed, since
   * one statement cannot change a row twice: its claim goes second, and finds the answer). A statement that fails is
   * tried again as its claims alone and its completions alone, so that each write fails only with its own error.
   */
  private async writeAll(batch: KeyWrite[]): Promise<Settled[]> {
    const completions = batch.flatMap((write) => write.completion ?? []);
    const completed = new Set(completions.map((completion) => pendingId(completion.scope, completion.key)));
    const claims = batch.flatMap((write) => write.claim ?? []);
    const now = claims.filter((claim) => !completed.has(pendingId(claim.scope, claim.key)));
    const after = claims.filter((claim) => completed.has(pendingId(claim.scope, claim.key)));
    const outcome = new Map<Claim | Completion, Settled>();
    const settle = async (claimsOf: Claim[], completionsOf: Completion[]) => {
      try {
        const claimed = await this.claimAndComplete(claimsOf, completionsOf);
        for (const claim of claimsOf) outcome.set(claim, { claimed: claimed.has(claim.owner) });
        for (const completion of completionsOf) outcome.set(completion, { claimed: true });
      } catch (error) {
        if (claimsOf.length > 0 && completionsOf.length > 0) {
          await settle(claimsOf, []);
          await settle([], completionsOf);
        } else {
          for (const write of [...claimsOf, ...completionsOf]) outcome.set(write, { failed: error });
        }
      }
    };
    await settle(now, completions);
    if (after.length > 0) await settle(after, []);
    return batch.map((write) => outcome.get(write.claim ?? write.completion)!);
  }

  /**
   * One statement: the completions, and one INSERT for the claims. A key taken earlier stays as it is unless it
   * expired or its request was abandoned (see the module's comment). A key twice among the claims is claimed by its
   * first request only (ON CONFLICT cannot touch a row twice in a statement): the others find it in flight, as they
   * would one statement later. Answers the owners that claimed their key.
   */
  private async claimAndComplete(claims: Claim[], completions: Completion[]): Promise<Set<string>> {
    if (claims.length === 0) {
      if (completions.length > 0) await this.database.query(COMPLETE_STATEMENT, [JSON.stringify(completions)]);
      return new Set();
    }
    const seen = new Set<string>();
    const distinct = claims.filter((claim) => {
      const id = pendingId(claim.scope, claim.key);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    const ended = distinct.flatMap((claim) => this.pendingReleases.get(pendingId(claim.scope, claim.key))?.owner ?? []);
    const lock = this.database.liveness?.key ?? null;
    const params = [JSON.stringify(distinct), this.ttlSeconds, this.abandonedAfterSeconds, lock, ended,
      this.database.kind === 'pglite', this.incarnation, LIVENESS_LOCK_CLASS];
    const { rows } = completions.length === 0
      ? await this.database.query<{ owner: string }>(CLAIM_STATEMENT, params)
      : await this.database.query<{ owner: string }>(CLAIM_AND_COMPLETE_STATEMENT, [...params, JSON.stringify(completions)]);
    return new Set(rows.map((row) => row.owner));
  }

  /** The answers recorded lazily go now (with the claims waiting, if any). */
  sendWaiting(): void {
    this.writes.sendWaiting();
  }

  /** Gives the key back (the request failed with nothing to replay); later, when the database does not answer. */
  async abandon(scope: string, key: string, owner: string): Promise<void> {
    try {
      await this.release(scope, key, owner);
    } catch {
      // The database is unreachable: the key is released once it answers again (or taken over by a retry here).
      this.releaseLater(scope, key, owner);
    }
  }

  private release(scope: string, key: string, owner: string): Promise<unknown> {
    return this.database.query(`DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND owner = $3`, [scope, key, owner]);
  }

  private releaseLater(scope: string, key: string, owner: string): void {
    const id = pendingId(scope, key);
    this.pendingReleases.delete(id);
    this.pendingReleases.set(id, { scope, key, owner });
    if (this.pendingReleases.size > MAX_PENDING_RELEASES) this.pendingReleases.delete(this.pendingReleases.keys().next().value!);
    this.scheduleReleases();
  }

  private scheduleReleases(): void {
    if (this.releaseTimer || this.pendingReleases.size === 0) return;
    this.releaseTimer = setTimeout(() => {
      this.releaseTimer = null;
      void this.releasePending();
    }, RELEASE_RETRY_MS);
    this.releaseTimer.unref();
  }

  private async releasePending(): Promise<void> {
    for (const [id, { scope, key, owner }] of [...this.pendingReleases]) {
      try {
        await this.release(scope, key, owner);
        if (this.pendingReleases.get(id)?.owner === owner) this.pendingReleases.delete(id);
      } catch {
        break; // still unreachable: try again later
      }
    }
    this.scheduleReleases();
  }

  /** Bounded: deletes at most `limit` expired keys per call (run from a job). */
  async purgeExpired(limit = 10_000): Promise<number> {
    const { rowCount } = await this.database.query(
      `DELETE FROM idempotency_keys WHERE ctid IN (
         SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT $1)`, [limit]);
    return rowCount ?? 0;
  }
}

/** Whether a claim claimed its key; throws a write's own error. */
function settled(outcome: Settled): boolean {
  if ('failed' in outcome) throw outcome.failed;
  return outcome.claimed;
}

function pendingId(scope: string, key: string): string {
  return JSON.stringify([scope, key]);
}
