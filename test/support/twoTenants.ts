/**
 * The service with two clients, Alice and Bob, each with the headers of an authenticated call: the setup of every
 * suite that checks what one client may see or do with another's objects.
 */
import type { Database } from '../../src/db/database.ts';
import type { DatabaseTarget } from './targets.ts';
import { startTestService, type Credentials, type TestService } from './testService.ts';

export interface TwoTenants {
  database: Database;
  service: TestService;
  alice: Credentials;
  bob: Credentials;
  asAlice: Record<string, string>;
  asBob: Record<string, string>;
  close(): Promise<void>;
}

export async function startTwoTenants(
  target: DatabaseTarget, options: Parameters<typeof startTestService>[1] = {},
): Promise<TwoTenants> {
  const database = await target.open();
  let service: TestService | undefined;
  try {
    service = await startTestService(database, options);
    const [alice, bob] = [await service.createClient('Alice'), await service.createClient('Bob')];
    const [asAlice, asBob] = await Promise.all([service.as(alice), service.as(bob)]);
    return {
      database, service, alice, bob, asAlice, asBob,
      async close() {
        await service!.close();
        await database.close();
      },
    };
  } catch (error) {
    await service?.close();
    await database.close();
    throw error;
  }
}
