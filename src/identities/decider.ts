import type { AccessScope, AccessScopeToRemove, CreateIdentity, UpdateIdentity } from '../../schemas/identities.ts';
import type { Decider } from '../domain/decider.ts';
import { domainConflict, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import type { IdentityEvent, IdentityStatus } from './events.ts';

export type IdentityCommand =
  | { type: 'CreateIdentity'; identityId: string; clientId: string; fields: CreateIdentity; now: Date }
  | { type: 'UpdateIdentity'; changes: UpdateIdentity; now: Date }
  | { type: 'ChangeIdentityStatus'; status: IdentityStatus; now: Date }
  | { type: 'SetParent'; parentId: string; now: Date }
  | { type: 'ClearParent'; parentId: string; now: Date }
  | { type: 'AddAccessRule'; scope: AccessScope; now: Date }
  | { type: 'RemoveAccessRule'; scope: AccessScopeToRemove; now: Date }
  | { type: 'DeleteIdentity'; now: Date };

export interface IdentityState {
  exists: boolean;
  deleted: boolean;
  identityId: string | null;
  clientId: string | null;
  status: IdentityStatus;
  parentId: string | null;
  scopes: AccessScope[];
}

const sameScope = (a: { resource: string; reference: string }, b: { resource: string; reference: string }) =>
  a.resource === b.resource && a.reference === b.reference;

function live(state: IdentityState): { identityId: string } {
  if (!state.exists || state.deleted) throw domainNotFound('identity not found');
  return { identityId: state.identityId! };
}

export const identityDecider: Decider<IdentityCommand, IdentityEvent, IdentityState> = {
  initialState: { exists: false, deleted: false, identityId: null, clientId: null, status: 'PENDING', parentId: null, scopes: [] },

  decide(command, state) {
    const at = command.now.toISOString();
    switch (command.type) {
      case 'CreateIdentity':
        if (state.exists) throw domainConflict(`identity ${command.identityId} already exists`);
        return [{ type: 'IdentityCreated', data: {
          ...command.fields, identityId: command.identityId, clientId: command.clientId, createdAt: at } }];
      case 'UpdateIdentity': {
        const { identityId } = live(state);
        return [{ type: 'IdentityUpdated', data: { identityId, changes: command.changes, updatedAt: at } }];
      }
      case 'ChangeIdentityStatus': {
        const { identityId } = live(state);
        if (state.status === command.status) return [];
        return [{ type: 'IdentityStatusChanged', data: { identityId, from: state.status, to: command.status, changedAt: at } }];
      }
      case 'SetParent': {
        const { identityId } = live(state);
        if (state.parentId === command.parentId) return [];
        if (state.parentId) throw domainPrecondition(`identity ${identityId} already has parent ${state.parentId}`);
        if (command.parentId === identityId) throw domainPrecondition('an identity cannot be its own child');
        return [{ type: 'IdentityParentSet', data: { identityId, parentId: command.parentId, at } }];
      }
      case 'ClearParent': {
        const { identityId } = live(state);
        if (state.parentId !== command.parentId) {
          throw domainPrecondition(`identity ${identityId} is not a child of ${command.parentId}`);
        }
        return [{ type: 'IdentityParentCleared', data: { identityId, parentId: command.parentId, at } }];
      }
      case 'AddAccessRule': {
        const { identityId } = live(state);
        const existing = state.scopes.find((s) => sameScope(s, command.scope));
        const permissions = [...new Set([...(existing?.permissions ?? []), ...command.scope.permissions])].sort();
        if (existing && permissions.length === existing.permissions.length) return [];
        return [{ type: 'IdentityAccessRuleAdded', data: { identityId, scope: { ...command.scope, permissions }, at } }];
      }
      case 'RemoveAccessRule': {
        const { identityId } = live(state);
        const existing = state.scopes.find((s) => sameScope(s, command.scope));
        if (!existing) throw domainNotFound(`no access rule for ${command.scope.resource} ${command.scope.reference}`);
        const removed = command.scope.permissions ?? existing.permissions;
        return [{ type: 'IdentityAccessRuleRemoved', data: { identityId,
          scope: { resource: existing.resource, reference: existing.reference,
            permissions: existing.permissions.filter((p) => removed.includes(p)) }, at } }];
      }
      case 'DeleteIdentity': {
        const { identityId } = live(state);
        return [{ type: 'IdentityDeleted', data: { identityId, deletedAt: at } }];
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'IdentityCreated':
        return { ...state, exists: true, identityId: event.data.identityId, clientId: event.data.clientId };
      case 'IdentityUpdated':
        return state;
      case 'IdentityStatusChanged':
        return { ...state, status: event.data.to };
      case 'IdentityParentSet':
        return { ...state, parentId: event.data.parentId };
      case 'IdentityParentCleared':
        return { ...state, parentId: null };
      case 'IdentityAccessRuleAdded':
        return { ...state, scopes: [...state.scopes.filter((s) => !sameScope(s, event.data.scope)), event.data.scope] };
      case 'IdentityAccessRuleRemoved': {
        const scopes = state.scopes.flatMap((s) => {
          if (!sameScope(s, event.data.scope)) return [s];
          const permissions = s.permissions.filter((p) => !event.data.scope.permissions.includes(p));
          return permissions.length > 0 ? [{ ...s, permissions }] : [];
        });
        return { ...state, scopes };
      }
      case 'IdentityDeleted':
        return { ...state, deleted: true };
    }
  },
};
