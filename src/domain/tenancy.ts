/**
 * Who a command acts for. Every object belongs to one client, and a client's command may act only on that
 * client's objects: a decider answers another client's object as not found (never as forbidden), exactly as
 * if there were none, so the ids of other tenants cannot even be probed. Operators and the payment provider
 * (and the service's own jobs and reactors) act on any client's objects, and say so with `'any'`.
 */
import { domainNotFound } from './errors.ts';

export type Tenant = { readonly clientId: string } | 'any';

/** What every command on an existing object carries. */
export interface TenantScoped {
  tenant: Tenant;
}

export const clientTenant = (clientId: string): Tenant => ({ clientId });

/** True when `tenant` may see an object of the client `owner`. */
export function visibleTo(tenant: Tenant, owner: string): boolean {
  return tenant === 'any' || tenant.clientId === owner;
}

/**
 * Refuses, as not found (`message`, the same as for no object at all), an object that belongs to another client
 * than `tenant`'s. An object not yet created (`owner` null) is left to the command: creating it is its business.
 */
export function refuseOtherTenants(tenant: Tenant, owner: string | null, message: string): void {
  if (owner !== null && !visibleTo(tenant, owner)) throw domainNotFound(message);
}

/** A command type without its tenant, for code that builds commands before it knows whom they act for. */
export type WithoutTenant<Command> = Command extends unknown ? Omit<Command, 'tenant'> : never;
