/**
 * What the commands read of the identities read model (projections/identities.queries.ts implements it; the
 * composition root wires it into `Platform.reads`). Never the judge of a write: the identity's and the graph's
 * streams decide.
 */
import type { Tenant } from '../domain/tenancy.ts';
import type { GraphLink } from './events.ts';

/** An identity as other commands copy it: an account takes its holder's name and country from it. */
export interface IdentityView {
  identity_id: string;
  client_id: string;
  name: string;
  lastname: string | null;
  country: string | null;
}

export interface IdentityReads {
  /** The identity, if `tenant` may see it (notFound otherwise). */
  owned(tenant: Tenant, identityId: string): Promise<IdentityView>;
  /**
   * The client's parent links recorded before the identity graph had a stream (IdentityParentSet on the
   * children's streams), both ends still the client's, by child id.
   */
  linksBeforeTheGraph(clientId: string): Promise<GraphLink[]>;
}
