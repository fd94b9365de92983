/**
 * The webhook retention's purge of ended deliveries alone in a process of its own, over the Postgres schema named by
 * DATABASE_URL and DATABASE_SCHEMA: test/webhooks.retention.test.ts runs two at once. It prints `ready` once
 * connected, waits for a line on stdin, purges in batches of PURGE_BATCH (rows) until a batch finds nothing, and
 * prints `{"deleted": n}`.
 */
import { createInterface } from 'node:readline';
import { openDatabase } from '../../src/db/database.ts';
import { purgeEndedDeliveries } from '../../src/webhooks/retention.ts';

const database = await openDatabase({ kind: 'postgres', connectionString: process.env.DATABASE_URL!, poolSize: 2 }, { schema: process.env.DATABASE_SCHEMA! });
const batch = Number(process.env.PURGE_BATCH ?? '50');
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once('line', () => resolve()));
// Stdin open would keep the process alive.
lines.close();
process.stdin.destroy();
let deleted = 0;
for (;;) {
  const n = await purgeEndedDeliveries(database, new Date(), batch);
  deleted += n;
  if (n === 0) break;
}
process.stdout.write(`${JSON.stringify({ deleted })}\n`);
await database.close();
