/**
 * Read model of clients (tenants): what authentication looks up on every request. Holds hashes only.
 */
import type { Kysely, Selectable } from 'kysely';
import { defineProjector } from '../src/projection/projector.ts';
import type { StoredEventData } from '../src/storedEvents/registry.ts';
import type { Instant, NullableInstant } from './columns.ts';

export interface ClientsTable {
  client_id: string;
  name: string;
  status: 'ACTIVE' | 'DELETED';
  api_key_id: string;
  api_key_hash: string;
  secret_hash: string;
  created_at: Instant;
  deleted_at: NullableInstant;
  /** The client's review thresholds in USD, or null where the environment's defaults apply. */
  review_threshold_basic_usd: string | null;
  review_threshold_standard_usd: string | null;
}
export type ClientTables = { clients: ClientsTable };
export type ClientRow = Selectable<ClientsTable>;

export const clientsProjector = defineProjector<ClientTables, StoredEventData>({
  name: 'clients',
  // 2: the client's review thresholds.
  version: 2,
  tables: ['clients'],
  async setup(trx) {
    await trx.schema.createTable('clients')
      .addColumn('client_id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('api_key_id', 'text', (c) => c.notNull().unique())
      .addColumn('api_key_hash', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('deleted_at', 'timestamptz')
      .addColumn('review_threshold_basic_usd', 'text')
      .addColumn('review_threshold_standard_usd', 'text')
      .execute();
  },
  handlers: {
    async ClientRegistered(trx, event) {
      const data = event.data;
      await trx.insertInto('clients').values({
        client_id: data.clientId, name: data.name, status: 'ACTIVE', api_key_id: data.apiKeyId,
        api_key_hash: data.apiKeyHash, secret_hash: data.secretHash, created_at: data.registeredAt,
      }).execute();
    },
    async ClientDeleted(trx, event) {
      const data = event.data;
      await trx.updateTable('clients').set({ status: 'DELETED', deleted_at: data.deletedAt })
        .where('client_id', '=', data.clientId).execute();
    },
    async ClientReviewThresholdsSet(trx, event) {
      const data = event.data;
      await trx.updateTable('clients').set({ review_threshold_basic_usd: data.basicUsd, review_threshold_standard_usd: data.standardUsd })
        .where('client_id', '=', data.clientId).execute();
    },
  },
});

/** An ACTIVE client's own review thresholds (null where it set none), if there is such a client. */
export async function activeClientThresholds<DB extends ClientTables>(
  db: Kysely<DB>, clientId: string,
): Promise<Pick<ClientRow, 'client_id' | 'review_threshold_basic_usd' | 'review_threshold_standard_usd'> | undefined> {
  return (db as unknown as Kysely<ClientTables>).selectFrom('clients')
    .select(['client_id', 'review_threshold_basic_usd', 'review_threshold_standard_usd'])
    .where('client_id', '=', clientId).where('status', '=', 'ACTIVE').executeTakeFirst();
}
