/**
 * `npm run events:snapshot`: records the schema of every stored event type's current version in snapshot.json.
 * It adds new types and versions only; a recorded version's schema is never overwritten (it exits 1 naming the
 * type: that change needs a new version and an upcaster).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { storedEvents } from '../contexts.ts';
import { compareWithSnapshot, formatSnapshot, readSnapshot, SNAPSHOT_FILE } from './snapshot.ts';

const { refused, unrecorded, next } = compareWithSnapshot(storedEvents, existsSync(SNAPSHOT_FILE) ? readSnapshot() : {});
if (refused.length > 0) {
  process.stderr.write(`snapshot not updated:\n${refused.map((line) => `  ${line}`).join('\n')}\n`);
  process.exit(1);
}
writeFileSync(SNAPSHOT_FILE, formatSnapshot(next));
process.stdout.write(unrecorded.length > 0 ? `recorded: ${unrecorded.join(', ')}\n` : 'snapshot up to date\n');
