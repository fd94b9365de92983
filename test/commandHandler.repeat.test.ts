/**
 * A process that runs a step another process already recorded (the same deterministic event ids) from a stale
 * folded state: the store answers the append as the earlier one, and the handler must then hold the stream as
 * recorded (what was answered under those ids, and every event before them), not what its stale state decided.
 * Two stores over one database stand for two processes (each has its own cache of folded states).
 */
import { expect } from 'chai';
import type { Database } from '../src/db/database.ts';
import { PostgresEventStore } from '../src/eventstore/postgres/postgresEventStore.ts';
import { handleCommand } from '../src/eventstore/commandHandler.ts';
import type { EventStore } from '../src/eventstore/port.ts';
import { accountDecider, holdOf, type AccountCommand } from '../src/accounts/decider.ts';
import { accountStream } from '../src/accounts/events.ts';
import { databaseTargets } from './support/targets.ts';

for (const target of databaseTargets()) {
  describe(`command handler, a step repeated from a stale state: ${target.name}`, () => {
    let database: Database;
    let one: PostgresEventStore;
    let two: PostgresEventStore;

    before(async () => {
      database = await target.open();
      one = new PostgresEventStore(database);
      two = new PostgresEventStore(database);
    });
    after(async () => {
      await one?.close();
      await two?.close();
      await database?.close();
    });

    it('answers with the stream as recorded: the refusal another process recorded, and the block before it', async () => {
      const stream = accountStream('a-repeat');
      const now = new Date();
      const run = (store: PostgresEventStore, command: AccountCommand) => handleCommand(store, stream, accountDecider, command, { actor: 'test' });
      await run(one, { type: 'OpenAccount', tenant: 'any', now, account: { accountId: 'a-repeat', clientId: 'c1', identityId: 'i1', externalId: null,
        type: 'CHECKING', custody: 'PLATFORM', currency: 'CLP', name: null, accountNumber: '100000000009', accountHolder: null, country: 'CHL', parentId: null } });
      await run(one, { type: 'AdjustAccount', tenant: 'any', amount: '100', reason: 'seed', adjustmentId: 'adj-1', now });
      // The second process folds the account (ACTIVE, 100 available) and decides a hold; before its append lands,
      // the first blocks the account and, asked for the same hold, records its refusal.
      let race: (() => Promise<void>) | null = async () => {
        await run(one, { type: 'UpdateAccount', tenant: 'any', changes: { status: 'BLOCKED' }, now });
        const refused = await run(one, { type: 'RequestHold', tenant: 'any', holdId: 'h1', amount: '50', reason: 'refund', now });
        expect(holdOf(refused.state, 'h1')?.state).to.equal('REFUSED');
      };
      const late = {
        readStream: (name: string, options?: Parameters<EventStore['readStream']>[1]) => two.readStream(name, options),
        async append(...args: Parameters<EventStore['append']>) {
          const before = race;
          race = null;
          await before?.();
          return two.append(...args);
        },
      } as unknown as EventStore;
      const runLate = (command: AccountCommand) => handleCommand(late, stream, accountDecider, command, { actor: 'test' });

      // The same step from the stale state decides a hold under the same id; the store answers the recorded refusal.
      const repeated = await runLate({ type: 'RequestHold', tenant: 'any', holdId: 'h1', amount: '50', reason: 'refund', now });
      expect(holdOf(repeated.state, 'h1')?.state).to.equal('REFUSED');
      expect(repeated.state.status).to.equal('BLOCKED');
      expect(repeated.state.held).to.equal('0');
      // And the next command decides on the whole stream: a blocked account is not credited.
      const credit = await runLate({ type: 'CreditSettlement', tenant: 'any', paymentId: 'p1', totalAmount: '10', feeAmount: '0', netAmount: '10',
        fundsFrom: 'clearing', settlementBatchId: null, now });
      expect(credit.events.map((e) => e.type)).to.deep.equal(['AccountCreditRefused']);
      expect((await one.readStream(stream)).map((e) => e.type)).to.deep.equal(
        ['AccountOpened', 'AccountAdjusted', 'AccountStatusChanged', 'AccountHoldRefused', 'AccountCreditRefused']);
    });
  });
}
