/**
 * Events of an identity (user or organization), stream `identity-<identityId>`, and of the parent/child graph of
 * a client's identities, stream `identity-graph-<clientId>`.
 */
import type { AccessScope, CreateIdentity, UpdateIdentity } from '../../schemas/identities.ts';

export type IdentityStatus = 'PENDING' | 'PENDING_EMAIL_VALIDATION' | 'PENDING_PHONE_VALIDATION' | 'SCREENING' | 'ACTIVE';

export type IdentityEvent =
  | { type: 'IdentityCreated'; data: CreateIdentity & { identityId: string; clientId: string; createdAt: string } }
  | { type: 'IdentityUpdated'; data: { identityId: string; changes: UpdateIdentity; updatedAt: string } }
  | { type: 'IdentityStatusChanged'; data: { identityId: string; from: IdentityStatus; to: IdentityStatus; changedAt: string } }
  /**
   * Links recorded on the child's own stream before the graph had a stream of its own; no longer recorded (the
   * graph stream records links now), still read: the graph stream takes them over when it starts.
   */
  | { type: 'IdentityParentSet'; data: { identityId: string; parentId: string; at: string } }
  | { type: 'IdentityParentCleared'; data: { identityId: string; parentId: string; at: string } }
  | { type: 'IdentityAccessRuleAdded'; data: { identityId: string; scope: AccessScope; at: string } }
  | { type: 'IdentityAccessRuleRemoved'; data: { identityId: string; scope: AccessScope; at: string } }
  | { type: 'IdentityDeleted'; data: { identityId: string; deletedAt: string } };

export const identityStream = (identityId: string) => `identity-${identityId}`;

export interface GraphLink {
  parentId: string;
  childId: string;
}

/** The graph decides every link, unlink and the departure of a deleted identity, one decision after another. */
export type IdentityGraphEvent =
  /** The links made before the graph had a stream, taken over as its first event (see linksBeforeTheGraph). */
  | { type: 'IdentityGraphSeeded'; data: { clientId: string; links: GraphLink[]; at: string } }
  | { type: 'IdentityChildLinked'; data: { clientId: string; parentId: string; childId: string; at: string } }
  | { type: 'IdentityChildUnlinked'; data: { clientId: string; parentId: string; childId: string; at: string } }
  /** A deleted identity leaves the graph with its link to its parent (if any), and can never be linked again. */
  | { type: 'IdentityLeftGraph'; data: { clientId: string; identityId: string; parentId: string | null; at: string } };

export const identityGraphStream = (clientId: string) => `identity-graph-${clientId}`;
