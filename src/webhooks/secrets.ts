/**
 * Endpoint secrets. A delivery is signed with HMAC-SHA256 under the endpoint's secret, so the service must be
 * able to read it again: it cannot be kept as a one-way hash as client secrets are. It is sealed instead
 * (AES-256-GCM, the endpoint id as associated data, so a sealed secret copied onto another endpoint does not
 * open) under the webhook key:
 * - WEBHOOK_SECRETS_KEY (base64 of 32 bytes), when set: kept outside the database, so the database alone (a
 *   backup, a replica, an export of the event log) reveals no secret;
 * - otherwise a key the service generates on first start and keeps in `service_secrets`, like the token signing
 *   key: secrets stay out of the event log and the read models, but whoever can read that table can open them.
 * A secret is answered once, when it is set (registration, rotation), never again, and never logged.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Database } from '../db/database.ts';
import type { SealedSecret } from './events.ts';
import { STANDARD_SECRET_PREFIX } from './signing.ts';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const WEBHOOK_KEY_BYTES = 32;
/** Random bytes in a generated endpoint secret. */
const GENERATED_SECRET_BYTES = 32;

/** A secret in the Standard Webhooks form: `whsec_` and standard base64 of random bytes (see signing.ts). */
export function generateWebhookSecret(): string {
  return `${STANDARD_SECRET_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}

export class SecretBox {
  constructor(private readonly key: Buffer, readonly keyId: string) {
    if (key.length !== WEBHOOK_KEY_BYTES) throw new Error(`the webhook key must be ${WEBHOOK_KEY_BYTES} bytes`);
  }

  seal(endpointId: string, secret: string): SealedSecret {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(endpointId));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return { keyId: this.keyId, sealed: Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64') };
  }

  open(endpointId: string, sealed: SealedSecret): string {
    if (sealed.keyId !== this.keyId) {
      throw new Error(`webhook secret of endpoint ${endpointId} was sealed with key "${sealed.keyId}", not the configured "${this.keyId}"`);
    }
    const bytes = Buffer.from(sealed.sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(endpointId));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

const boxes = new WeakMap<Database, Promise<SecretBox>>();

/** The webhook key: WEBHOOK_SECRETS_KEY when given, else the one kept in the database (made on first use). */
export function webhookSecretBox(database: Database, configuredKey: Buffer | null): Promise<SecretBox> {
  if (configuredKey) return Promise.resolve(new SecretBox(configuredKey, 'env'));
  let box = boxes.get(database);
  if (!box) {
    box = (async () => {
      await database.query(
        `INSERT INTO service_secrets (name, value) VALUES ('webhook_secrets_key', $1) ON CONFLICT (name) DO NOTHING`,
        [randomBytes(WEBHOOK_KEY_BYTES)]);
      const { rows } = await database.query<{ value: Buffer }>(`SELECT value FROM service_secrets WHERE name = 'webhook_secrets_key'`);
      return new SecretBox(rows[0]!.value, 'db');
    })();
    // The caller gets the failure from `box`; here it only makes the next call try again.
    box.catch(() => boxes.delete(database));
    boxes.set(database, box);
  }
  return box;
}
