import { identityDecider, type IdentityCommand as TenantCommand } from '../src/identities/decider.ts';
import type { IdentityEvent } from '../src/identities/events.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';
import { asOwner, OTHER_CLIENT, type AsOwner } from './support/tenancy.ts';

/** Commands of the identity's own client unless they name another tenant. */
type IdentityCommand = AsOwner<TenantCommand>;

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const created: IdentityEvent = { type: 'IdentityCreated', data: { identityId: 'i1', clientId: 'c1', type: 'USER', name: 'Ana', createdAt: at } };

const { given } = DeciderSpecification.for(identityDecider, asOwner<TenantCommand>);

describe('identity decider', () => {
  it('creates once', () => {
    given([]).when({ type: 'CreateIdentity', identityId: 'i1', clientId: 'c1', fields: { type: 'USER', name: 'Ana' }, now }).then([created]);
    given([created]).when({ type: 'CreateIdentity', identityId: 'i1', clientId: 'c1', fields: { type: 'USER', name: 'Ana' }, now })
      .thenThrows('alreadyExists', /already exists/);
  });

  it('refuses every change to an identity that does not exist or was deleted', () => {
    const deleted: IdentityEvent = { type: 'IdentityDeleted', data: { identityId: 'i1', deletedAt: at } };
    for (const history of [[], [created, deleted]]) {
      given(history).when({ type: 'UpdateIdentity', changes: { name: 'B' }, now }).thenThrows('notFound', /not found/);
      given(history).when({ type: 'DeleteIdentity', now }).thenThrows('notFound', /not found/);
    }
  });

  it('answers another client\'s identity as not found, exactly as a missing one, and lets an operator (any tenant) act on it', () => {
    const changes: IdentityCommand[] = [
      { type: 'UpdateIdentity', changes: { name: 'B' }, now }, { type: 'ChangeIdentityStatus', status: 'ACTIVE', now },
      { type: 'AddAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ'] }, now },
      { type: 'RemoveAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1' }, now }, { type: 'DeleteIdentity', now },
    ];
    for (const command of changes) {
      given([created]).when({ ...command, tenant: OTHER_CLIENT }).thenThrows('notFound', /^identity not found$/);
      given([]).when(command).thenThrows('notFound', /^identity not found$/);
    }
    given([created]).when({ type: 'ChangeIdentityStatus', tenant: 'any', status: 'ACTIVE', now })
      .then([{ type: 'IdentityStatusChanged', data: { identityId: 'i1', from: 'PENDING', to: 'ACTIVE', changedAt: at } }]);
  });

  it('changes status only when it differs', () => {
    given([created]).when({ type: 'ChangeIdentityStatus', status: 'ACTIVE', now })
      .then([{ type: 'IdentityStatusChanged', data: { identityId: 'i1', from: 'PENDING', to: 'ACTIVE', changedAt: at } }]);
    given([created]).when({ type: 'ChangeIdentityStatus', status: 'PENDING', now }).then([]);
  });

  it('merges access-rule permissions and removes them', () => {
    const granted: IdentityEvent = { type: 'IdentityAccessRuleAdded', data: { identityId: 'i1', at,
      scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ'] } } };
    given([created]).when({ type: 'AddAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ'] }, now }).then([granted]);
    given([created, granted]).when({ type: 'AddAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ'] }, now }).then([]);
    given([created, granted]).when({ type: 'AddAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['WRITE'] }, now })
      .then([{ type: 'IdentityAccessRuleAdded', data: { identityId: 'i1', at, scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ', 'WRITE'] } } }]);
    given([created, granted]).when({ type: 'RemoveAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1' }, now })
      .then([{ type: 'IdentityAccessRuleRemoved', data: { identityId: 'i1', at, scope: { resource: 'ACCOUNT', reference: 'a1', permissions: ['READ'] } } }]);
    given([created]).when({ type: 'RemoveAccessRule', scope: { resource: 'ACCOUNT', reference: 'a1' }, now }).thenThrows('notFound', /no access rule/);
  });
});
