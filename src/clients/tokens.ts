/**
 * Bearer tokens: `<payload>.<signature>`, both base64url; the payload is JSON {sub, iat, exp, jti} and the
 * signature an HMAC-SHA256 under the service's signing key. Verification is constant-time and checks expiry
 * against the injected clock.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

export interface TokenClaims {
  sub: string;
  iat: number;
  exp: number;
  jti: string;
}

export class TokenSigner {
  constructor(
    private readonly key: Buffer,
    private readonly ttlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {
    if (key.length < 32) throw new Error('token signing key must have at least 32 bytes');
  }

  issue(clientId: string): { accessToken: string; expiresIn: number } {
    const iat = Math.floor(this.now().getTime() / 1000);
    const claims: TokenClaims = { sub: clientId, iat, exp: iat + this.ttlSeconds, jti: randomUUID() };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return { accessToken: `${payload}.${this.sign(payload)}`, expiresIn: this.ttlSeconds };
  }

  /** The claims of a genuine, unexpired token; null for anything else. */
  verify(token: string): TokenClaims | null {
    if (token.length > 1024) return null;
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined) return null;
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let claims: TokenClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as TokenClaims;
    } catch {
      return null;
    }
    if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null;
    if (claims.exp <= Math.floor(this.now().getTime() / 1000)) return null;
    return claims;
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
