/**
 * Events of an identity (user or organization), stream `identity-<identityId>`, and of the parent/child graph of
 * a client's identities, stream `identity-graph-<clientId>`.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema, nullableTextSchema, textSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

export const identityStatusValues = ['PENDING', 'PENDING_EMAIL_VALIDATION', 'PENDING_PHONE_VALIDATION', 'SCREENING', 'ACTIVE'] as const;
const identityStatusSchema = { type: 'string', enum: identityStatusValues } as const;
export type IdentityStatus = (typeof identityStatusValues)[number];

/** Rules are free-form (their bounds are the request's); stored as given. */
const rulesSchema = { type: 'object' } as const;

/** An identity's own fields as recorded at its creation. */
const identityFieldsProperties = {
  type: { type: 'string', enum: ['ORGANIZATION', 'USER'] },
  name: textSchema,
  nickname: textSchema,
  email: textSchema,
  phone: textSchema,
  documentNumber: textSchema,
  documentType: textSchema,
  idv: textSchema,
  country: textSchema,
  externalId: textSchema,
  lastname: textSchema,
  rules: rulesSchema,
} as const;
const optionalIdentityFields = [
  'nickname', 'email', 'phone', 'documentNumber', 'documentType', 'idv', 'country', 'externalId', 'lastname', 'rules',
] as const;
const identityFieldsSchema = closed(identityFieldsProperties, optionalIdentityFields);
export type IdentityFields = FromSchema<typeof identityFieldsSchema>;

/** The fields an update changes (only those that were sent). */
const identityChangesSchema = closed({
  name: textSchema, nickname: textSchema, country: textSchema, externalId: textSchema, lastname: textSchema,
  rules: rulesSchema, gender: textSchema,
}, ['name', 'nickname', 'country', 'externalId', 'lastname', 'rules', 'gender']);
export type IdentityChanges = FromSchema<typeof identityChangesSchema>;

const accessScopeSchema = closed({ resource: textSchema, reference: textSchema, permissions: { type: 'array', items: textSchema } });
export type StoredAccessScope = FromSchema<typeof accessScopeSchema>;

const parentLinkSchema = closed({ identityId: textSchema, parentId: textSchema, at: instantSchema });
const graphLinkSchema = closed({ parentId: textSchema, childId: textSchema });
const childLinkSchema = closed({ clientId: textSchema, parentId: textSchema, childId: textSchema, at: instantSchema });

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const identityEventSchemas = {
  IdentityCreated: closed({
    ...identityFieldsProperties, identityId: textSchema, clientId: textSchema, createdAt: instantSchema,
  }, optionalIdentityFields),
  IdentityUpdated: closed({ identityId: textSchema, changes: identityChangesSchema, updatedAt: instantSchema }),
  IdentityStatusChanged: closed({ identityId: textSchema, from: identityStatusSchema, to: identityStatusSchema, changedAt: instantSchema }),
  IdentityParentSet: parentLinkSchema,
  IdentityParentCleared: parentLinkSchema,
  IdentityAccessRuleAdded: closed({ identityId: textSchema, scope: accessScopeSchema, at: instantSchema }),
  IdentityAccessRuleRemoved: closed({ identityId: textSchema, scope: accessScopeSchema, at: instantSchema }),
  IdentityDeleted: closed({ identityId: textSchema, deletedAt: instantSchema }),
} as const;

export const identityGraphEventSchemas = {
  IdentityGraphSeeded: closed({ clientId: textSchema, links: { type: 'array', items: graphLinkSchema }, at: instantSchema }),
  IdentityChildLinked: childLinkSchema,
  IdentityChildUnlinked: childLinkSchema,
  IdentityLeftGraph: closed({ clientId: textSchema, identityId: textSchema, parentId: nullableTextSchema, at: instantSchema }),
} as const;

type Data<K extends keyof typeof identityEventSchemas> = FromSchema<(typeof identityEventSchemas)[K]>;
type GraphData<K extends keyof typeof identityGraphEventSchemas> = FromSchema<(typeof identityGraphEventSchemas)[K]>;

export type IdentityEvent =
  | { type: 'IdentityCreated'; data: Data<'IdentityCreated'> }
  | { type: 'IdentityUpdated'; data: Data<'IdentityUpdated'> }
  | { type: 'IdentityStatusChanged'; data: Data<'IdentityStatusChanged'> }
  /**
   * Links recorded on the child's own stream before the graph had a stream of its own; no longer recorded (the
   * graph stream records links now), still read: the graph stream takes them over when it starts.
   */
  | { type: 'IdentityParentSet'; data: Data<'IdentityParentSet'> }
  | { type: 'IdentityParentCleared'; data: Data<'IdentityParentCleared'> }
  | { type: 'IdentityAccessRuleAdded'; data: Data<'IdentityAccessRuleAdded'> }
  | { type: 'IdentityAccessRuleRemoved'; data: Data<'IdentityAccessRuleRemoved'> }
  | { type: 'IdentityDeleted'; data: Data<'IdentityDeleted'> };

export const identityStream = (identityId: string) => `identity-${identityId}`;

export type GraphLink = FromSchema<typeof graphLinkSchema>;

/** The graph decides every link, unlink and the departure of a deleted identity, one decision after another. */
export type IdentityGraphEvent =
  /** The links made before the graph had a stream, taken over as its first event (see linksBeforeTheGraph). */
  | { type: 'IdentityGraphSeeded'; data: GraphData<'IdentityGraphSeeded'> }
  | { type: 'IdentityChildLinked'; data: GraphData<'IdentityChildLinked'> }
  | { type: 'IdentityChildUnlinked'; data: GraphData<'IdentityChildUnlinked'> }
  /** A deleted identity leaves the graph with its link to its parent (if any), and can never be linked again. */
  | { type: 'IdentityLeftGraph'; data: GraphData<'IdentityLeftGraph'> };

export const identityGraphStream = (clientId: string) => `identity-graph-${clientId}`;

export const identityEvents = { schemas: { ...identityEventSchemas, ...identityGraphEventSchemas } } satisfies ContextEvents;
