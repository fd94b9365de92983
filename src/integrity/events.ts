/** Events of the history's seal. Stream: `integrity-digests`, one event per digest, in sequence. */
import type { FromSchema } from 'json-schema-to-ts';
import { closed, instantSchema } from '../../schemas/events/common.ts';
import type { ContextEvents } from '../eventstore/upcasting.ts';

const positionSchema = { type: 'string', pattern: '^\\d+-\\d+$' } as const;
const digestSchema = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;

/** The stored contract of each event's data (see the events section of README.md before changing one). */
export const integrityEventSchemas = {
  FeedDigestRecorded: closed({
    /** 1 for the genesis digest, which covers every event recorded before it (those before the chain too). */
    sequence: { type: 'integer', minimum: 1 },
    /** Feed position after which the digest starts (`<commit>-<prepare>`); null for the genesis digest. */
    fromPosition: { oneOf: [positionSchema, { type: 'null' }] },
    /** Feed position of the last event covered. */
    toPosition: positionSchema,
    events: { type: 'integer', minimum: 1 },
    /** Hex sha256 over the previous digest and the content digest of each event covered, in feed order. */
    digest: digestSchema,
    previousDigest: { oneOf: [digestSchema, { type: 'null' }] },
    recordedAt: instantSchema,
  }),
} as const;

export type FeedDigestRecordedData = FromSchema<typeof integrityEventSchemas['FeedDigestRecorded']>;

export interface FeedDigestRecorded {
  type: 'FeedDigestRecorded';
  data: FeedDigestRecordedData;
}

export type IntegrityEvent = FeedDigestRecorded;

export const integrityEvents = { schemas: integrityEventSchemas } satisfies ContextEvents;

export const DIGEST_STREAM = 'integrity-digests';
