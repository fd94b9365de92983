/** Commands on identities. Reads go through the tenant-scoped read model; writes through the decider. */
import type { Kysely } from 'kysely';
import type { AccessScope, AccessScopeToRemove, CreateIdentity, UpdateIdentity } from '../../schemas/identities.ts';
import { handleCommand } from '../eventstore/commandHandler.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import type { Position } from '../eventstore/position.ts';
import { domainPrecondition } from '../domain/errors.ts';
import { findOwned } from '../http/tenancy.ts';
import type { Services } from '../http/services.ts';
import type { IdentityRow } from '../../projections/identities.ts';
import { identityDecider, type IdentityCommand } from './decider.ts';
import { identityStream, type IdentityStatus } from './events.ts';

/** Bounds the walk up the hierarchy when checking for cycles. */
const MAX_DEPTH = 100;

export function ownedIdentity(db: Kysely<any>, clientId: string, identityId: string): Promise<IdentityRow> {
  return findOwned<IdentityRow>(db, 'identities', clientId, 'identity_id', identityId, 'identity');
}

async function run(services: Services, identityId: string, command: IdentityCommand, metadata: EventMetadata): Promise<Position | null> {
  const result = await handleCommand(services.storage.store, identityStream(identityId), identityDecider, command, metadata);
  return result.position;
}

export async function createIdentity(services: Services, clientId: string, fields: CreateIdentity, metadata: EventMetadata): Promise<string> {
  const identityId = services.runtime.newId();
  const position = await run(services, identityId, { type: 'CreateIdentity', identityId, clientId, fields, now: services.runtime.now() }, metadata);
  await services.readYourWrites(position);
  return identityId;
}

export async function updateIdentity(services: Services, identityId: string, changes: UpdateIdentity, metadata: EventMetadata): Promise<void> {
  await services.readYourWrites(await run(services, identityId, { type: 'UpdateIdentity', changes, now: services.runtime.now() }, metadata));
}

export async function changeIdentityStatus(services: Services, identityId: string, status: IdentityStatus, metadata: EventMetadata): Promise<void> {
  await services.readYourWrites(await run(services, identityId, { type: 'ChangeIdentityStatus', status, now: services.runtime.now() }, metadata));
}

export async function deleteIdentity(services: Services, clientId: string, identityId: string, metadata: EventMetadata): Promise<void> {
  const db = services.storage.database.db;
  const child = await db.selectFrom('identities').select('identity_id')
    .where('client_id', '=', clientId).where('parent_id', '=', identityId).executeTakeFirst();
  if (child) throw domainPrecondition(`identity ${identityId} has children; remove them first`);
  const parent = (await ownedIdentity(db, clientId, identityId)).parent_id;
  const now = services.runtime.now();
  if (parent) await run(services, identityId, { type: 'ClearParent', parentId: parent, now }, metadata);
  await services.readYourWrites(await run(services, identityId, { type: 'DeleteIdentity', now }, metadata));
}

/** Links children to a parent: same client only, one parent per child, never a cycle. */
export async function addChildren(services: Services, clientId: string, parentId: string, childIds: string[], metadata: EventMetadata): Promise<void> {
  const db = services.storage.database.db;
  await ownedIdentity(db, clientId, parentId);
  const ancestors = new Set<string>([parentId]);
  for (let id: string | null = parentId, depth = 0; id && depth < MAX_DEPTH; depth++) {
    const row: { parent_id: string | null } | undefined = await db.selectFrom('identities').select('parent_id')
      .where('client_id', '=', clientId).where('identity_id', '=', id).executeTakeFirst();
    id = row?.parent_id ?? null;
    if (id) ancestors.add(id);
  }
  const children = await Promise.all(childIds.map((id) => ownedIdentity(db, clientId, id)));
  for (const child of children) {
    if (ancestors.has(child.identity_id)) {
      throw domainPrecondition(`identity ${child.identity_id} cannot be a child of ${parentId}: it would make a cycle`);
    }
    if (child.parent_id && child.parent_id !== parentId) {
      throw domainPrecondition(`identity ${child.identity_id} already has parent ${child.parent_id}`);
    }
  }
  let last: Position | null = null;
  for (const child of children) {
    last = (await run(services, child.identity_id, { type: 'SetParent', parentId, now: services.runtime.now() }, metadata)) ?? last;
  }
  await services.readYourWrites(last);
}

export async function removeChildren(services: Services, clientId: string, parentId: string, childIds: string[], metadata: EventMetadata): Promise<void> {
  const db = services.storage.database.db;
  await ownedIdentity(db, clientId, parentId);
  const children = await Promise.all(childIds.map((id) => ownedIdentity(db, clientId, id)));
  for (const child of children) {
    if (child.parent_id !== parentId) throw domainPrecondition(`identity ${child.identity_id} is not a child of ${parentId}`);
  }
  let last: Position | null = null;
  for (const child of children) {
    last = (await run(services, child.identity_id, { type: 'ClearParent', parentId, now: services.runtime.now() }, metadata)) ?? last;
  }
  await services.readYourWrites(last);
}

export async function addAccessRule(services: Services, identityId: string, scope: AccessScope, metadata: EventMetadata): Promise<void> {
  await services.readYourWrites(await run(services, identityId, { type: 'AddAccessRule', scope, now: services.runtime.now() }, metadata));
}

export async function removeAccessRule(services: Services, identityId: string, scope: AccessScopeToRemove, metadata: EventMetadata): Promise<void> {
  await services.readYourWrites(await run(services, identityId, { type: 'RemoveAccessRule', scope, now: services.runtime.now() }, metadata));
}
