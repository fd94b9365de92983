/**
 * Client secrets and API keys: random, shown once, stored as scrypt hashes. An API key is
 * `pl_<keyId>_<secret>`: the key id finds the client, the secret is verified against its hash.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const SCRYPT = { N: 16_384, r: 8, p: 1, keyLength: 32 };

function scryptAsync(secret: string, salt: Buffer, options: ScryptOptions, keyLength: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p }, SCRYPT.keyLength);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return false;
  const expectedKey = Buffer.from(expected, 'base64url');
  const key = await scryptAsync(secret, Buffer.from(salt, 'base64url'),
    { N: Number(n), r: Number(r), p: Number(p), maxmem: 64 * 1024 * 1024 }, expectedKey.length);
  return key.length === expectedKey.length && timingSafeEqual(key, expectedKey);
}

export function generateClientSecret(): string {
  return `cs_${randomBytes(32).toString('base64url')}`;
}

export interface GeneratedApiKey {
  apiKey: string;
  keyId: string;
  secret: string;
}

export function generateApiKey(): GeneratedApiKey {
  const keyId = randomBytes(8).toString('hex');
  const secret = randomBytes(24).toString('base64url').replace(/[-_]/g, 'x');
  return { apiKey: `pl_${keyId}_${secret}`, keyId, secret };
}

export function parseApiKey(apiKey: string): { keyId: string; secret: string } | null {
  const match = /^pl_([0-9a-f]{16})_([A-Za-z0-9]{32})$/.exec(apiKey);
  return match ? { keyId: match[1]!, secret: match[2]! } : null;
}
