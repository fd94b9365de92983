/**
 * What the client directory (./directory.ts) reads of the clients read model: a client by its API key's id or
 * its own id, with the hashes its credentials are verified against (projections/clients.queries.ts implements
 * it; the composition root wires it into `Platform.reads`).
 */

/** A client as the directory authenticates it. */
export interface ClientView {
  client_id: string;
  name: string;
  status: 'ACTIVE' | 'DELETED';
  api_key_id: string;
  api_key_hash: string;
  secret_hash: string;
}

export interface ClientReads {
  /** The clients of these API key ids (those that exist), in any order. */
  byApiKeyIds(keyIds: readonly string[]): Promise<ClientView[]>;
  byId(clientId: string): Promise<ClientView | undefined>;
}
