/**
 * Finds the client behind an API key, on every request, and checks client secrets for POST /auth.
 *
 * scrypt is deliberately slow, so a key that verified once is remembered (by its SHA-256, never in clear) for
 * a few minutes; the client's status is still read on every request, so a deleted client is refused at once.
 * Only verified keys enter that cache, so wrong keys cannot evict a right one. Nothing is kept per key id:
 * wrong secrets sent for a key id never lock its right key out; abuse is bounded per source address by the
 * caller (`beforeVerifying`, see src/http/router.ts).
 *
 * A refusal costs the same whether the key id (or client id) exists or not: an unknown id, or a client that
 * is not active, is verified against a dummy hash of the same scrypt parameters.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hashSecret, parseApiKey, verifySecret } from './credentials.ts';
import { Coalescer } from '../db/coalescer.ts';
import { setBounded } from '../domain/boundedMap.ts';
import type { ClientReads, ClientView } from './ports.ts';

const VERIFIED_TTL_MS = 5 * 60_000;
/** Verified keys remembered at most (entries); past it the oldest goes. */
const MAX_VERIFIED = 10_000;
/** A wrong key is remembered for a minute, so repeating it costs no scrypt run; known and unknown ids alike. */
const REFUSED_TTL_MS = 60_000;
/** Refused keys remembered at most (entries), apart from the verified ones so that they cannot evict them. */
const MAX_REFUSED = 10_000;

/** Checks a secret against a stored hash (scrypt); injectable so tests can count verifications. */
export type SecretVerifier = (secret: string, storedHash: string) => Promise<boolean>;

export class ClientDirectory {
  private readonly verified = new Map<string, { clientId: string; until: number }>();
  private readonly refused = new Map<string, number>();
  /** What an unknown id's secret is verified against: a hash of a random secret, no secret ever matches it. */
  private readonly dummyHash: Promise<string>;

  /** Lookups of concurrent requests share one round trip (see Coalescer). */
  private readonly rowsByKeyId = new Coalescer<string, ClientView | undefined>(async (keyIds) => {
    const rows = await this.reads.byApiKeyIds([...new Set(keyIds)]);
    const byKeyId = new Map(rows.map((row) => [row.api_key_id, row]));
    return keyIds.map((keyId) => byKeyId.get(keyId));
  });

  constructor(private readonly reads: ClientReads, private readonly verify: SecretVerifier = verifySecret) {
    this.dummyHash = hashSecret(randomBytes(24).toString('base64url'));
  }

  /**
   * The active client owning this API key, or null. `beforeVerifying` runs before each scrypt verification
   * (not for a key verified before) and may throw to refuse the request instead.
   */
  async byApiKey(apiKey: string, beforeVerifying: () => void = () => undefined): Promise<ClientView | null> {
    const parsed = parseApiKey(apiKey);
    if (!parsed) return null; // the key format is public: refusing it at once tells nothing about any client
    const row = await this.rowsByKeyId.submit(parsed.keyId);
    const active = row?.status === 'ACTIVE' ? row : undefined;
    const fingerprint = createHash('sha256').update(apiKey).digest('base64');
    const now = Date.now();
    const cached = this.verified.get(fingerprint);
    if (active && cached && cached.clientId === active.client_id && cached.until > now) return active;
    if ((this.refused.get(fingerprint) ?? 0) > now) return null;
    beforeVerifying();
    const matches = await this.verify(parsed.secret, active?.api_key_hash ?? await this.dummyHash);
    if (!matches || !active) {
      setBounded(this.refused, MAX_REFUSED, fingerprint, Date.now() + REFUSED_TTL_MS);
      return null;
    }
    setBounded(this.verified, MAX_VERIFIED, fingerprint, { clientId: active.client_id, until: Date.now() + VERIFIED_TTL_MS });
    return active;
  }

  /**
   * Whether `secret` is the client secret of the active client `clientId`. Always one verification, against
   * the client's hash or the dummy one, so the answer's time does not tell whether the client exists.
   */
  async clientSecretMatches(clientId: string, secret: string): Promise<boolean> {
    const row = await this.byId(clientId);
    const active = row?.status === 'ACTIVE' ? row : undefined;
    const matches = await this.verify(secret, active?.secret_hash ?? await this.dummyHash);
    return matches && active !== undefined;
  }

  async byId(clientId: string): Promise<ClientView | null> {
    return (await this.reads.byId(clientId)) ?? null;
  }
}
