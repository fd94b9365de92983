/**
 * The history's seal, as its stream (`integrity-digests`) decides it, pure: digests follow each other in sequence,
 * each naming the one before. A digest computed on a stale view (another instance recorded the next one first)
 * records nothing.
 */
import type { Decider } from '../domain/decider.ts';
import { streamType } from '../eventstore/streams.ts';
import { DIGEST_STREAM, type FeedDigestRecordedData, type IntegrityEvent } from './events.ts';

export type DigestCommand = { type: 'RecordDigest'; digest: FeedDigestRecordedData };

export interface DigestState {
  /** The last digest's sequence (0: none yet) and value. */
  sequence: number;
  digest: string | null;
}

export const digestDecider: Decider<DigestCommand, IntegrityEvent, DigestState> = {
  initialState: { sequence: 0, digest: null },

  decide(command, state) {
    const { digest } = command;
    if (digest.sequence !== state.sequence + 1) return [];
    if (digest.previousDigest !== state.digest) {
      throw new Error(`digest ${digest.sequence} names ${digest.previousDigest ?? 'no digest'} before it; the stream's last is ${state.digest ?? 'none'}`);
    }
    return [{ type: 'FeedDigestRecorded', data: digest }];
  },

  evolve(_state, event) {
    return { sequence: event.data.sequence, digest: event.data.digest };
  },
};

/** The job's and the CLI's, which read no read model after it. */
export const digestStreamType = streamType(DIGEST_STREAM, { decider: digestDecider, readModels: { RecordDigest: 'none' } });
