/**
 * The command handlers of payments, accounts and identities, run without HTTP: the platform alone (a store over
 * the test database, the projection daemon with every read model, the clock), as a job, a reactor or a CLI
 * would call them. What a route adds (authentication, validation, idempotency) is tested elsewhere.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/database.ts';
import { systemRuntime } from '../src/domain/runtime.ts';
import { DomainError } from '../src/domain/errors.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { silentLogger } from '../src/logging.ts';
import { createPlatform, type Platform } from '../src/platform.ts';
import { ProjectionDaemon } from '../src/projection/daemon.ts';
import { allProjectors } from '../src/contexts.ts';
import { accountStream } from '../src/accounts/events.ts';
import { adjustAccount, closeAccount, openAccount, updateAccount } from '../src/accounts/handlers.ts';
import { addChildren, createIdentity, deleteIdentity } from '../src/identities/handlers.ts';
import { createPayment, loadPayment, receivePayment } from '../src/payments/handlers.ts';
import { balancesOf } from '../projections/ledger.ts';
import { readModelsOf } from '../projections/readModels.ts';
import { databaseTargets } from './support/targets.ts';

async function refusal(work: Promise<unknown>): Promise<DomainError> {
  try {
    await work;
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    return error as DomainError;
  }
  return expect.fail('should have been refused');
}

for (const target of databaseTargets()) {
  describe(`command handlers without HTTP: ${target.name}`, function () {
    this.timeout(60_000);
    let database: Database;
    let store: PostgresEventStore;
    let projections: ProjectionDaemon;
    let platform: Platform;
    const clientId = `client-${randomUUID()}`;
    const metadata = { clientId, actor: 'test' };
    const tenant = { clientId };

    before(async () => {
      database = await target.open();
      store = new PostgresEventStore(database);
      projections = new ProjectionDaemon(database, store, { idlePollMs: 20 });
      for (const projector of allProjectors()) projections.addProjector(projector);
      projections.start();
      const config = loadConfig({ SANDBOX_AUTOPILOT: 'false' });
      platform = createPlatform({ config, logger: silentLogger, runtime: systemRuntime, projections,
        storage: { mode: 'embedded', database, store, describe: 'test', close: async () => store.close() } });
    });
    after(async () => {
      await projections?.stop();
      await store?.close();
      await database?.close();
    });

    it('identities: creates, links a child, refuses a cycle, deletes child then parent', async () => {
      const parent = await createIdentity(platform, clientId, { type: 'ORGANIZATION', name: 'Parent', country: 'CHL' }, metadata);
      const child = await createIdentity(platform, clientId, { type: 'USER', name: 'Child', country: 'CHL' }, metadata);
      await addChildren(platform, clientId, parent, [child], metadata);
      expect((await refusal(addChildren(platform, clientId, child, [parent], metadata))).message).to.match(/cycle/);
      expect((await refusal(deleteIdentity(platform, clientId, parent, metadata))).kind).to.equal('failedPrecondition');
      await deleteIdentity(platform, clientId, child, metadata);
      await deleteIdentity(platform, clientId, parent, metadata);
    });

    it('accounts: adjusts within the available funds, blocks, refuses to close while holding money', async () => {
      const identity = await createIdentity(platform, clientId, { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' }, metadata);
      const accountId = await openAccount(platform, clientId, { identityId: identity, type: 'CHECKING', currency: 'CLP', custody: 'PLATFORM' }, metadata);
      await adjustAccount(platform, tenant, accountId, '1500', 'seed', metadata);
      expect((await refusal(adjustAccount(platform, tenant, accountId, '-1501', 'too much', metadata))).message).to.match(/1500 CLP available/);
      await updateAccount(platform, tenant, accountId, { status: 'BLOCKED' }, metadata);
      expect((await refusal(adjustAccount(platform, tenant, accountId, '1', 'blocked', metadata))).message).to.match(/BLOCKED/);
      expect((await refusal(closeAccount(platform, tenant, accountId, metadata))).message).to.match(/holds 1500 CLP/);
      await adjustAccount(platform, tenant, accountId, '-1500', 'drain', metadata);
      await closeAccount(platform, tenant, accountId, metadata);
      const types = (await store.readStream(accountStream(accountId))).map((e) => e.type);
      expect(types).to.deep.equal(['AccountOpened', 'AccountAdjusted', 'AccountStatusChanged', 'AccountAdjusted', 'AccountClosed']);
    });

    it('payments: a push payment is created, received and settled into its account through the account stream', async () => {
      const identity = await createIdentity(platform, clientId, { type: 'ORGANIZATION', name: 'Merchant', country: 'CHL' }, metadata);
      const accountId = await openAccount(platform, clientId, { identityId: identity, type: 'CHECKING', currency: 'CLP', custody: 'PLATFORM' }, metadata);
      const { rows } = await database.query<{ account_number: string }>('SELECT account_number FROM accounts WHERE account_id = $1', [accountId]);
      const { row, readModels } = await createPayment(platform, clientId, {
        externalId: `order-${randomUUID()}`, identityId: identity, accountNumber: rows[0]!.account_number, totalAmount: '2500', currency: 'CLP', type: 'PURCHASE',
      }, metadata);
      await readModels;
      expect(row.status).to.equal('CREATED');
      await receivePayment(platform, 'any', row.payment_id, { ...metadata, actor: 'provider' });
      expect((await loadPayment(platform, row.payment_id)).status).to.equal('SETTLED');
      expect((await store.readStream(accountStream(accountId))).map((e) => e.type)).to.deep.equal(['AccountOpened', 'AccountCredited']);
      expect((await balancesOf(readModelsOf(database), [{ accountId, currency: 'CLP' }])).get(accountId)!.balance).to.equal('2500');
    });
  });
}
