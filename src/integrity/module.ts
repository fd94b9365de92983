import { defineContext } from '../module.ts';
import { integrityEvents } from './events.ts';
import { digestStreamType } from './decider.ts';
import { recordFeedDigest } from './integrity.ts';

/**
 * The history's seal: every few minutes a digest over the events recorded since the previous one (tamper
 * evidence; `npm run cli -- verify integrity` checks it). The chain and the digests live in the Postgres event
 * stores; with EventStoreDB as the store there is nothing to seal here.
 */
export const integrityContext = defineContext({
  name: 'integrity',
  events: [integrityEvents],
  streams: [digestStreamType],
  jobs: (platform) => platform.storage.mode === 'eventstoredb' ? [] : [{
    name: 'feed-digest',
    schedule: platform.config.integrityDigestCron,
    run: () => recordFeedDigest(platform.storage.database, platform.storage.store, platform.runtime.now()),
  }],
});
