/** Events of an identity (user or organization). Stream: `identity-<identityId>`. */
import type { AccessScope, CreateIdentity, UpdateIdentity } from '../../schemas/identities.ts';

export type IdentityStatus = 'PENDING' | 'PENDING_EMAIL_VALIDATION' | 'PENDING_PHONE_VALIDATION' | 'SCREENING' | 'ACTIVE';

export type IdentityEvent =
  | { type: 'IdentityCreated'; data: CreateIdentity & { identityId: string; clientId: string; createdAt: string } }
  | { type: 'IdentityUpdated'; data: { identityId: string; changes: UpdateIdentity; updatedAt: string } }
  | { type: 'IdentityStatusChanged'; data: { identityId: string; from: IdentityStatus; to: IdentityStatus; changedAt: string } }
  /** The child's own stream records its parent; the parent's children are derived in the read model. */
  | { type: 'IdentityParentSet'; data: { identityId: string; parentId: string; at: string } }
  | { type: 'IdentityParentCleared'; data: { identityId: string; parentId: string; at: string } }
  | { type: 'IdentityAccessRuleAdded'; data: { identityId: string; scope: AccessScope; at: string } }
  | { type: 'IdentityAccessRuleRemoved'; data: { identityId: string; scope: AccessScope; at: string } }
  | { type: 'IdentityDeleted'; data: { identityId: string; deletedAt: string } };

export const identityStream = (identityId: string) => `identity-${identityId}`;
