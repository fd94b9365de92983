/** The clients' port (src/clients/ports.ts) over the read models. */
import type { Kysely } from 'kysely';
import type { ReadModels } from './readModels.ts';

export function clientReads(db: Kysely<ReadModels>) {
  return {
    byApiKeyIds: (keyIds: readonly string[]) => db.selectFrom('clients').selectAll().where('api_key_id', 'in', [...keyIds]).execute(),
    byId: (clientId: string) => db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst(),
  };
}
