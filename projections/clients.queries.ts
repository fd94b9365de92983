/** The clients' port (src/clients/ports.ts) over the read models. */
import { sql, type Kysely } from 'kysely';
import { PREPARED } from '../src/db/preparedStatements.ts';
import type { ClientRow } from './clients.ts';
import type { ReadModels } from './readModels.ts';

/** What authentication reads of a client. */
type KeyHolder = Pick<ClientRow, 'client_id' | 'name' | 'status' | 'api_key_id' | 'api_key_hash' | 'secret_hash'>;

export function clientReads(db: Kysely<ReadModels>) {
  return {
    // On every authenticated request: one text whatever the number of keys, planned once per connection; its columns
    // named, as a prepared statement's must be (src/db/preparedStatements.ts).
    byApiKeyIds: async (keyIds: readonly string[]) => (await sql<KeyHolder>`${sql.raw(PREPARED)}
      SELECT client_id, name, status, api_key_id, api_key_hash, secret_hash FROM clients WHERE api_key_id = ANY(${[...keyIds]}::text[])`
      .execute(db)).rows,
    byId: (clientId: string) => db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst(),
  };
}
