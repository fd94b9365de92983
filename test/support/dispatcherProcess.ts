/**
 * A webhook dispatcher alone in a process of its own, over the Postgres schema named by DATABASE_URL and
 * DATABASE_SCHEMA: what test/webhooks.outbox.test.ts kills with SIGKILL in the middle of a delivery. It prints
 * `started` once it claims.
 */
import { openDatabase } from '../../src/db/database.ts';
import { silentLogger } from '../../src/logging.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { webhookSecretBox } from '../../src/webhooks/secrets.ts';

const database = await openDatabase({ kind: 'postgres', connectionString: process.env.DATABASE_URL!, poolSize: 4 }, { schema: process.env.DATABASE_SCHEMA! });
const dispatcher = new WebhookDispatcher({
  database, secrets: () => webhookSecretBox(database, null), logger: silentLogger, now: () => new Date(),
  owner: `child:${process.pid}`, allowPrivate: true, maxConcurrent: 4, maxPerEndpoint: 4, idlePollMs: 20,
});
dispatcher.start();
process.stdout.write('started\n');
