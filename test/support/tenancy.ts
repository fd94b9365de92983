/**
 * Decider tests write commands as the object's own client sends them: `asOwner` adds that tenant (client `c1`,
 * the client of every object those tests build) unless the command names one.
 */
import type { Tenant, TenantScoped, WithoutTenant } from '../../src/domain/tenancy.ts';

export const OWNER: Tenant = { clientId: 'c1' };
export const OTHER_CLIENT: Tenant = { clientId: 'c2' };

/** A command of type `Command`, its tenant optional. */
export type AsOwner<Command> = WithoutTenant<Command> & Partial<TenantScoped>;

export function asOwner<Command extends TenantScoped>(command: AsOwner<Command>): Command {
  return { tenant: OWNER, ...command } as unknown as Command;
}
