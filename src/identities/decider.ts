import type { AccessScope, AccessScopeToRemove } from '../../schemas/identities.ts';
import type { Decider } from '../domain/decider.ts';
import { domainConflict, domainNotFound, domainPrecondition } from '../domain/errors.ts';
import { refuseOtherTenants, type TenantScoped } from '../domain/tenancy.ts';
import { streamType } from '../eventstore/streams.ts';
import type {
  GraphLink, IdentityChanges, IdentityEvent, IdentityFields, IdentityGraphEvent, IdentityStatus, StoredAccessScope,
} from './events.ts';

/** Every command acts for a tenant (src/domain/tenancy.ts): another client's identity is not found. */
export type IdentityCommand = (
  /** `fields` and `changes` are already event data: the handler maps the request to them field by field. */
  | { type: 'CreateIdentity'; identityId: string; clientId: string; fields: IdentityFields; now: Date }
  | { type: 'UpdateIdentity'; changes: IdentityChanges; now: Date }
  | { type: 'ChangeIdentityStatus'; status: IdentityStatus; now: Date }
  | { type: 'AddAccessRule'; scope: AccessScope; now: Date }
  | { type: 'RemoveAccessRule'; scope: AccessScopeToRemove; now: Date }
  | { type: 'DeleteIdentity'; now: Date }
) & TenantScoped;

export interface IdentityState {
  exists: boolean;
  deleted: boolean;
  identityId: string | null;
  clientId: string | null;
  status: IdentityStatus;
  scopes: StoredAccessScope[];
}

const sameScope = (a: { resource: string; reference: string }, b: { resource: string; reference: string }) =>
  a.resource === b.resource && a.reference === b.reference;

const NOT_FOUND = 'identity not found';

function live(state: IdentityState): { identityId: string } {
  if (!state.exists || state.deleted) throw domainNotFound(NOT_FOUND);
  return { identityId: state.identityId! };
}

export const identityDecider: Decider<IdentityCommand, IdentityEvent, IdentityState> = {
  initialState: { exists: false, deleted: false, identityId: null, clientId: null, status: 'PENDING', scopes: [] },

  decide(command, state) {
    const at = command.now.toISOString();
    refuseOtherTenants(command.tenant, state.clientId, NOT_FOUND);
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
      case 'AddAccessRule': {
        const { identityId } = live(state);
        const existing = state.scopes.find((s) => sameScope(s, command.scope));
        const permissions = [...new Set([...(existing?.permissions ?? []), ...command.scope.permissions])].sort();
        if (existing && permissions.length === existing.permissions.length) return [];
        const { resource, reference } = command.scope;
        return [{ type: 'IdentityAccessRuleAdded', data: { identityId, scope: { resource, reference, permissions }, at } }];
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
      // Links are the graph's (identityGraphDecider): these events, recorded here before the graph had a stream
      // of its own, change nothing the identity itself decides on.
      case 'IdentityParentSet':
      case 'IdentityParentCleared':
        return state;
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

/** What an identity's own stream says of it: its client (null when there is no such identity), and whether it was deleted. */
export interface GraphMember {
  clientId: string | null;
  deleted: boolean;
}

/** The facts a graph command carries, gathered by its handler from the streams that own them. */
interface GraphFacts {
  clientId: string;
  /** Every identity the command names, as its own stream tells. */
  members: Readonly<Record<string, GraphMember>>;
  /** The links made before the graph had a stream: given when the stream had no events when the handler looked. */
  linksBefore: readonly GraphLink[] | null;
  now: Date;
}

export type IdentityGraphCommand =
  | ({ type: 'LinkChildren'; parentId: string; childIds: readonly string[] } & GraphFacts)
  | ({ type: 'UnlinkChildren'; parentId: string; childIds: readonly string[] } & GraphFacts)
  /** Before an identity is deleted: refused while it has children; drops its link to its parent. */
  | ({ type: 'LeaveGraph'; identityId: string } & GraphFacts);

/**
 * The parent/child graph of one client's identities. Its stream is read whole for every decision, and each event
 * folded copies `parentOf`: a decision costs (events × links), small for hundreds of each, not for a graph of
 * tens of thousands (which would want a snapshot of the state).
 */
export interface IdentityGraphState {
  /** The client whose graph this is (null before the stream has events): another client's command finds nothing here. */
  clientId: string | null;
  /** The stream has events, so the links made before it are part of `parentOf`. */
  started: boolean;
  /** Child → parent. */
  parentOf: ReadonlyMap<string, string>;
  /** Identities deleted since the graph has a stream: never linked again. */
  left: ReadonlySet<string>;
}

/** An identity and its ancestors. The visited set ends the walk even on a cycle made before the graph had a stream. */
function lineageOf(state: IdentityGraphState, identityId: string): Set<string> {
  const lineage = new Set<string>();
  for (let id: string | undefined = identityId; id !== undefined && !lineage.has(id); id = state.parentOf.get(id)) lineage.add(id);
  return lineage;
}

export const identityGraphDecider: Decider<IdentityGraphCommand, IdentityGraphEvent, IdentityGraphState> = {
  initialState: { clientId: null, started: false, parentOf: new Map(), left: new Set() },

  decide(command, current) {
    const at = command.now.toISOString();
    const { clientId } = command;
    refuseOtherTenants({ clientId }, current.clientId, `identity graph of client ${clientId} not found`);
    const seed: IdentityGraphEvent[] = [];
    if (!current.started) {
      if (command.linksBefore === null) throw new Error(`identity graph of client ${clientId}: starting it needs the links made before it`);
      if (command.linksBefore.length > 0) seed.push({ type: 'IdentityGraphSeeded', data: { clientId, links: [...command.linksBefore], at } });
    }
    const state = seed.reduce(identityGraphDecider.evolve, current);
    const member = (identityId: string) => {
      const known = command.members[identityId];
      if (!known || known.clientId !== clientId || known.deleted || state.left.has(identityId)) {
        throw domainNotFound(`identity ${identityId} not found`);
      }
    };
    const decided: IdentityGraphEvent[] = [];
    switch (command.type) {
      case 'LinkChildren': {
        const { parentId } = command;
        member(parentId);
        const lineage = lineageOf(state, parentId);
        for (const childId of new Set(command.childIds)) {
          member(childId);
          if (childId === parentId) throw domainPrecondition('an identity cannot be its own child');
          const current = state.parentOf.get(childId);
          if (current === parentId) continue;
          if (current !== undefined) throw domainPrecondition(`identity ${childId} already has parent ${current}`);
          if (lineage.has(childId)) throw domainPrecondition(`identity ${childId} cannot be a child of ${parentId}: it would make a cycle`);
          decided.push({ type: 'IdentityChildLinked', data: { clientId, parentId, childId, at } });
        }
        break;
      }
      case 'UnlinkChildren': {
        const { parentId } = command;
        member(parentId);
        for (const childId of new Set(command.childIds)) {
          member(childId);
          if (state.parentOf.get(childId) !== parentId) throw domainPrecondition(`identity ${childId} is not a child of ${parentId}`);
          decided.push({ type: 'IdentityChildUnlinked', data: { clientId, parentId, childId, at } });
        }
        break;
      }
      case 'LeaveGraph': {
        const { identityId } = command;
        // A deletion run again after it left: nothing more to decide here.
        if (state.left.has(identityId)) return [];
        member(identityId);
        for (const parentId of state.parentOf.values()) {
          if (parentId === identityId) throw domainPrecondition(`identity ${identityId} has children; remove them first`);
        }
        decided.push({ type: 'IdentityLeftGraph', data: { clientId, identityId, parentId: state.parentOf.get(identityId) ?? null, at } });
        break;
      }
    }
    return decided.length > 0 ? [...seed, ...decided] : [];
  },

  evolve(state, event) {
    const parentOf = new Map(state.parentOf);
    const { clientId } = event.data;
    switch (event.type) {
      case 'IdentityGraphSeeded':
        for (const link of event.data.links) parentOf.set(link.childId, link.parentId);
        return { ...state, clientId, started: true, parentOf };
      case 'IdentityChildLinked':
        parentOf.set(event.data.childId, event.data.parentId);
        return { ...state, clientId, started: true, parentOf };
      case 'IdentityChildUnlinked':
        parentOf.delete(event.data.childId);
        return { ...state, clientId, started: true, parentOf };
      case 'IdentityLeftGraph':
        parentOf.delete(event.data.identityId);
        return { clientId, started: true, parentOf, left: new Set(state.left).add(event.data.identityId) };
    }
  },
};

/** `identity-<identityId>`: a request waits for every read model after a change (a deletion: its flow, after the graph's step). */
export const identityStreamType = streamType('identity-', { decider: identityDecider, readModels: {
  CreateIdentity: 'all', UpdateIdentity: 'all', ChangeIdentityStatus: 'all', AddAccessRule: 'all', RemoveAccessRule: 'all',
  DeleteIdentity: 'none',
} });

/** `identity-graph-<clientId>`: links wait for the read models they touch; leaving is a step of a deletion. */
export const identityGraphStreamType = streamType('identity-graph-', { decider: identityGraphDecider, readModels: {
  LinkChildren: 'written', UnlinkChildren: 'written', LeaveGraph: 'none',
} });
