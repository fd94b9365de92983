/**
 * Commands on identities. Reads go through the tenant-scoped read model; writes through the deciders: an
 * identity's own, and the client's identity graph for links and deletions.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { AccessScope, AccessScopeToRemove, CreateIdentity, UpdateIdentity } from '../../schemas/identities.ts';
import { definedOnly } from '../../schemas/events/common.ts';
import type { CommandResult } from '../eventstore/commandHandler.ts';
import { runCommand } from '../eventstore/streams.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { recordedAs } from '../eventstore/typedEvents.ts';
import type { StoredEventData } from '../storedEvents/registry.ts';
import type { Tenant } from '../domain/tenancy.ts';
import type { Platform } from '../platform.ts';
import {
  identityGraphStreamType, identityStreamType, type GraphMember, type IdentityGraphCommand, type IdentityGraphState,
} from './decider.ts';
import {
  identityGraphStream, identityStream, type GraphLink, type IdentityChanges, type IdentityFields, type IdentityGraphEvent,
  type IdentityStatus,
} from './events.ts';

/**
 * What the request's fields become in the stored event, field by field: a field added to the request schema
 * reaches no event until it is added to the event's contract (src/identities/events.ts) and here.
 */
function identityFieldsOf(input: CreateIdentity): IdentityFields {
  return definedOnly({
    type: input.type, name: input.name, nickname: input.nickname, email: input.email, phone: input.phone,
    documentNumber: input.documentNumber, documentType: input.documentType, idv: input.idv, country: input.country,
    externalId: input.externalId, lastname: input.lastname, rules: input.rules,
  });
}

function identityChangesOf(input: UpdateIdentity): IdentityChanges {
  return definedOnly({
    name: input.name, nickname: input.nickname, country: input.country, externalId: input.externalId,
    lastname: input.lastname, rules: input.rules, gender: input.gender,
  });
}

export async function createIdentity(platform: Platform, clientId: string, input: CreateIdentity, metadata: EventMetadata): Promise<string> {
  const identityId = createdId(platform.runtime, metadata, 'identity');
  const fields = identityFieldsOf(input);
  await runCommand(platform, identityStreamType, identityStream(identityId),
    { type: 'CreateIdentity', tenant: { clientId }, identityId, clientId, fields, now: platform.runtime.now() }, metadata);
  return identityId;
}

export async function updateIdentity(
  platform: Platform, tenant: Tenant, identityId: string, input: UpdateIdentity, metadata: EventMetadata,
): Promise<void> {
  const changes = identityChangesOf(input);
  await runCommand(platform, identityStreamType, identityStream(identityId), { type: 'UpdateIdentity', tenant, changes, now: platform.runtime.now() }, metadata);
}

export async function changeIdentityStatus(
  platform: Platform, tenant: Tenant, identityId: string, status: IdentityStatus, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, identityStreamType, identityStream(identityId), { type: 'ChangeIdentityStatus', tenant, status, now: platform.runtime.now() }, metadata);
}

/**
 * Deletes an identity. The graph decides first (refused while the identity has children; its link to its parent
 * goes; no later link can name it), then the identity's own stream records the deletion. Run again after a
 * failure in between, the graph has nothing more to decide and the identity is deleted then.
 */
export async function deleteIdentity(platform: Platform, clientId: string, identityId: string, metadata: EventMetadata): Promise<void> {
  const left = await decideOnGraph(platform, clientId, { type: 'LeaveGraph', identityId }, [identityId], metadata);
  const deleted = await runCommand(platform, identityStreamType, identityStream(identityId),
    { type: 'DeleteIdentity', tenant: { clientId }, now: platform.runtime.now() }, metadata);
  await platform.readYourWrites(deleted.position ?? left.position, [...left.events, ...deleted.events].map((e) => e.type));
}

/** Links children to a parent, as the client's graph decides: same client only, one parent per child, never a cycle. */
export async function addChildren(platform: Platform, clientId: string, parentId: string, childIds: string[], metadata: EventMetadata): Promise<void> {
  await decideOnGraph(platform, clientId, { type: 'LinkChildren', parentId, childIds }, [parentId, ...childIds], metadata);
}

export async function removeChildren(platform: Platform, clientId: string, parentId: string, childIds: string[], metadata: EventMetadata): Promise<void> {
  await decideOnGraph(platform, clientId, { type: 'UnlinkChildren', parentId, childIds }, [parentId, ...childIds], metadata);
}

type GraphDecision = DistributiveOmit<IdentityGraphCommand, 'clientId' | 'members' | 'linksBefore' | 'now'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Runs a command on the client's identity graph, the one stream that decides links, with the facts it needs:
 * the identities it names as their own streams tell, and, while the graph has no stream yet, the links made
 * before it had one.
 */
async function decideOnGraph(
  platform: Platform, clientId: string, decision: GraphDecision, identityIds: readonly string[], metadata: EventMetadata,
): Promise<CommandResult<IdentityGraphEvent, IdentityGraphState>> {
  const store = platform.storage.store;
  const stream = identityGraphStream(clientId);
  const [members, linksBefore] = await Promise.all([
    membersOf(platform, identityIds),
    store.readStream(stream, { limit: 1 }).then((first) => (first.length > 0 ? null : linksBeforeTheGraph(platform, clientId))),
  ]);
  // Every link, unlink and deletion of a client contends for this one stream: in one process they queue, and a
  // writer of another process that got there first is retried by the command handler (then 409, never a 5xx).
  return runCommand(platform, identityGraphStreamType, stream,
    { ...decision, clientId, members, linksBefore, now: platform.runtime.now() } as IdentityGraphCommand, metadata);
}

/**
 * What each identity's own stream says of it: its client, from its first event (IdentityCreated; it never
 * changes), and whether it was deleted, from its last (the decider records nothing after IdentityDeleted). A
 * deletion is decided by the graph before the identity's stream records it, so the graph itself knows of every
 * deletion that could race with a link.
 */
async function membersOf(platform: Platform, identityIds: readonly string[]): Promise<Record<string, GraphMember>> {
  const store = platform.storage.store;
  const unique = [...new Set(identityIds)];
  const members = await Promise.all(unique.map(async (identityId): Promise<GraphMember> => {
    const [[first], [last]] = await Promise.all([
      store.readStream(identityStream(identityId), { limit: 1 }),
      store.readStream(identityStream(identityId), { direction: 'backwards', limit: 1 }),
    ]);
    const created = first ? recordedAs<StoredEventData>(first) : null;
    return { clientId: created?.type === 'IdentityCreated' ? created.data.clientId : null, deleted: last?.type === 'IdentityDeleted' };
  }));
  return Object.fromEntries(unique.map((identityId, n) => [identityId, members[n]!]));
}

/**
 * The links made before the graph had a stream of its own: IdentityParentSet events on the children's streams,
 * which nothing records any more, so they are a closed set. The identities read model is their only index by
 * client; it is read here once per client, after it has passed the whole feed (so it holds every one of them),
 * and what it lists becomes the graph stream's first event. From then on only the graph stream decides. Links
 * to a parent deleted meanwhile (possible before, when deletion checked for children in the read model) are
 * left out: they could never be removed.
 */
async function linksBeforeTheGraph(platform: Platform, clientId: string): Promise<GraphLink[]> {
  const head = await platform.storage.store.headPosition();
  if (head && !(await platform.projections.waitFor(head, platform.config.readYourWritesTimeoutMs, identityLinkEventTypes))) {
    throw new Error(`the identities read model did not reach the head of the feed within ${platform.config.readYourWritesTimeoutMs} ms; ` +
      `the identity graph of client ${clientId} cannot start without the links made before it`);
  }
  return platform.reads.identities.linksBeforeTheGraph(clientId);
}

/** The events that made links before the graph had a stream. */
const identityLinkEventTypes = ['IdentityParentSet', 'IdentityParentCleared'] as const;

export async function addAccessRule(
  platform: Platform, tenant: Tenant, identityId: string, scope: AccessScope, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, identityStreamType, identityStream(identityId), { type: 'AddAccessRule', tenant, scope, now: platform.runtime.now() }, metadata);
}

export async function removeAccessRule(
  platform: Platform, tenant: Tenant, identityId: string, scope: AccessScopeToRemove, metadata: EventMetadata,
): Promise<void> {
  await runCommand(platform, identityStreamType, identityStream(identityId), { type: 'RemoveAccessRule', tenant, scope, now: platform.runtime.now() }, metadata);
}
