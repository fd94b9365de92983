import { randomBytes } from 'node:crypto';
import type { Database } from '../db/database.ts';

/**
 * The key that signs bearer tokens: generated on first start and kept in the database, so tokens survive
 * restarts and every instance sharing the database accepts them.
 */
export async function loadSigningKey(database: Database): Promise<Buffer> {
  await database.query(
    `INSERT INTO service_secrets (name, value) VALUES ('token_signing_key', $1) ON CONFLICT (name) DO NOTHING`,
    [randomBytes(32)]);
  const { rows } = await database.query<{ value: Buffer }>(
    `SELECT value FROM service_secrets WHERE name = 'token_signing_key'`);
  return rows[0]!.value;
}
