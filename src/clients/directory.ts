/**
 * Finds the client behind an API key, on every request. scrypt is deliberately slow, so a key that verified
 * once is remembered (by its SHA-256, never in clear) for a few minutes; the client's status is still read
 * on every request, so a deleted client is refused at once.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ClientRow } from '../../projections/clients.ts';
import { parseApiKey, verifySecret } from './credentials.ts';
import { RateLimiter } from '../http/rateLimit.ts';
import { Coalescer } from '../db/coalescer.ts';

const VERIFIED_TTL_MS = 5 * 60_000;
const MAX_VERIFIED = 10_000;
/** A wrong key is remembered for a minute, so repeating it costs no scrypt run. */
const REFUSED_TTL_MS = 60_000;
/** At most this many scrypt verifications per key id per second fail before further attempts are refused outright. */
const FAILURES_PER_SECOND = 2;
const FAILURE_BURST = 10;

export class ClientDirectory {
  private readonly verified = new Map<string, { clientId: string; until: number }>();
  private readonly refused = new Map<string, number>();
  private readonly failures = new RateLimiter(FAILURES_PER_SECOND, FAILURE_BURST);

  /** Lookups of concurrent requests share one round trip (see Coalescer). */
  private readonly rowsByKeyId = new Coalescer<string, ClientRow | undefined>(async (keyIds) => {
    const rows = await this.db.selectFrom('clients').selectAll().where('api_key_id', 'in', [...new Set(keyIds)]).execute() as ClientRow[];
    const byKeyId = new Map(rows.map((row) => [row.api_key_id, row]));
    return keyIds.map((keyId) => byKeyId.get(keyId));
  });

  constructor(private readonly db: Kysely<any>) {}

  /** The active client owning this API key, or null. */
  async byApiKey(apiKey: string): Promise<ClientRow | null> {
    const parsed = parseApiKey(apiKey);
    if (!parsed) return null;
    const row = await this.rowsByKeyId.submit(parsed.keyId);
    if (!row || row.status !== 'ACTIVE') return null;
    const fingerprint = createHash('sha256').update(apiKey).digest('base64');
    const cached = this.verified.get(fingerprint);
    if (cached && cached.clientId === row.client_id && cached.until > Date.now()) return row;
    if ((this.refused.get(fingerprint) ?? 0) > Date.now()) return null;
    // Guessing secrets for a known key id is bounded: past the failure budget, no scrypt run at all.
    if (!this.failures.available(parsed.keyId)) return null;
    if (!(await verifySecret(parsed.secret, row.api_key_hash))) {
      this.failures.consume(parsed.keyId);
      if (this.refused.size >= MAX_VERIFIED) this.refused.delete(this.refused.keys().next().value!);
      this.refused.set(fingerprint, Date.now() + REFUSED_TTL_MS);
      return null;
    }
    if (this.verified.size >= MAX_VERIFIED) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(fingerprint, { clientId: row.client_id, until: Date.now() + VERIFIED_TTL_MS });
    return row;
  }

  async byId(clientId: string): Promise<ClientRow | null> {
    const row = await this.db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    return (row as ClientRow | undefined) ?? null;
  }
}
