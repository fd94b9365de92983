/** The clients' port (src/clients/ports.ts) over the read models. */
import { sql, type Kysely } from 'kysely';
import { PREPARED } from '../src/db/preparedStatements.ts';
import type { ClientRow } from './clients.ts';
import type { ReadModels } from './readModels.ts';

export function clientReads(db: Kysely<ReadModels>) {
  return {
    // On every authenticated request: one text whatever the number of keys, planned once per connection.
    byApiKeyIds: async (keyIds: readonly string[]) =>
      (await sql<ClientRow>`${sql.raw(PREPARED)} SELECT * FROM clients WHERE api_key_id = ANY(${[...keyIds]}::text[])`.execute(db)).rows,
    byId: (clientId: string) => db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst(),
  };
}
