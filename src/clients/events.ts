/** Events of a client (tenant). Stream: `client-<clientId>`. Secrets appear only as hashes. */
export interface ClientRegistered {
  type: 'ClientRegistered';
  data: {
    clientId: string;
    name: string;
    /** Public part of the API key, used to find the client; the secret part is only stored hashed. */
    apiKeyId: string;
    apiKeyHash: string;
    secretHash: string;
    registeredAt: string;
  };
}

export interface ClientDeleted {
  type: 'ClientDeleted';
  data: { clientId: string; deletedAt: string };
}

export type ClientEvent = ClientRegistered | ClientDeleted;

export const clientStream = (clientId: string) => `client-${clientId}`;
