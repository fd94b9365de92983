/**
 * The append is one statement, so one round trip: it reads the stream's current revision (and chain hash),
 * checks the expectation, and inserts the events numbered and chained from there. Two writers racing on the same expectation both
 * pass the check; the unique (stream, revision) constraint lets only one of them commit.
 */
const EXPECTATION = `
WITH RECURSIVE last AS (
  SELECT revision, chain_hash FROM events WHERE stream = $1 ORDER BY revision DESC LIMIT 1
), expectation AS (
  SELECT last.revision, last.chain_hash,
         CASE $2::text
           WHEN 'any' THEN true
           WHEN 'no_stream' THEN last.revision IS NULL
           WHEN 'stream_exists' THEN last.revision IS NOT NULL
           ELSE last.revision IS NOT DISTINCT FROM $3::bigint
         END AS met
    FROM (SELECT) AS one LEFT JOIN last ON true
)`;

/**
 * The chain hash of an event, from its predecessor's in the stream (NULL: the stream's first event, or one
 * appended before the chain existed) and its columns as stored. The content is hashed exactly as
 * `contentDigest` in src/integrity/integrity.ts hashes it when verifying: the fields joined by U+001F, the JSON as Postgres
 * prints jsonb (keys in its canonical order), the time in microseconds since the epoch.
 */
export function chainHash(
  previous: string,
  e: { id: string; stream: string; revision: string; type: string; version: string; data: string; metadata: string; recordedAtMicros: string },
): string {
  return `sha256(coalesce(${previous}, ''::bytea) || sha256(convert_to(concat_ws(E'\\x1f', ${e.id}::text, ${e.stream}::text,
    (${e.revision})::text, ${e.type}, (${e.version})::text, (${e.data})::text, (${e.metadata})::text,
    ${e.recordedAtMicros}::text), 'UTF8')))`;
}

/** `recorded_at` is the transaction's start time, written explicitly so that the hash covers the stored value. */
const RECORDED_AT_MICROS = `(extract(epoch FROM now()) * 1000000)::bigint`;

const APPEND_RESULT = `
SELECT (SELECT met FROM expectation) AS met,
       (SELECT revision::text FROM expectation) AS current_revision,
       max(revision)::text AS last_revision,
       max(global_position)::text AS last_position,
       pg_current_xact_id()::text AS transaction_id
  FROM inserted`;

/**
 * The append statements, with the chain hash computed (the service always) or left NULL (see `hashChain`).
 * `one` and `many` append to one stream; `group` to several at once (group commit, below).
 */
export function appendStatements(chained: boolean): { many: string; one: string; group: string } {
  const hash = (previous: string, e: Omit<Parameters<typeof chainHash>[1], 'recordedAtMicros'>) =>
    (chained ? chainHash(previous, { ...e, recordedAtMicros: RECORDED_AT_MICROS }) : 'NULL::bytea');
  return {
    // Parameters: stream, expectation kind, exact revision, events as a JSON array. The chain runs through the
    // batch in order (a recursive step per event).
    many: `${EXPECTATION}, batch AS (
  SELECT e.id, coalesce(x.revision, -1) + e.ordinal AS revision, e.ordinal, e.type, e.schema_version, e.data, e.metadata
    FROM expectation x,
         ROWS FROM (jsonb_to_recordset($4::jsonb)
           AS (id uuid, type text, schema_version integer, data jsonb, metadata jsonb)) WITH ORDINALITY
           AS e(id, type, schema_version, data, metadata, ordinal)
   WHERE x.met
), chain AS (
  SELECT 0::bigint AS ordinal, (SELECT chain_hash FROM expectation) AS hash
  UNION ALL
  SELECT b.ordinal, ${hash('c.hash', { id: 'b.id', stream: '$1', revision: 'b.revision', type: 'b.type', version: 'b.schema_version', data: 'b.data', metadata: 'b.metadata' })}
    FROM chain c JOIN batch b ON b.ordinal = c.ordinal + 1
), inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata, recorded_at, chain_hash)
  SELECT b.id, $1, b.revision, b.type, b.schema_version, b.data, b.metadata, now(), c.hash
    FROM batch b JOIN chain c ON c.ordinal = b.ordinal
   ORDER BY b.ordinal
  RETURNING revision, global_position
)${APPEND_RESULT}`,
    // The common case, one event, without unpacking an array: stream, kind, exact, id, type, version, data, metadata.
    one: `${EXPECTATION}, inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata, recorded_at, chain_hash)
  SELECT $4::uuid, $1, coalesce(x.revision, -1) + 1, $5::text, $6::integer, $7::jsonb, $8::jsonb, now(),
         ${hash('x.chain_hash', { id: '$4::uuid', stream: '$1', revision: 'coalesce(x.revision, -1) + 1', type: '$5::text', version: '$6::integer', data: '$7::jsonb', metadata: '$8::jsonb' })}
    FROM expectation x
   WHERE x.met
  RETURNING revision, global_position
)${APPEND_RESULT}`,
    group: groupStatement(hash),
  };
}

/**
 * Group commit: the appends of several writers, each to its own stream with its own expectation, in one statement
 * and so one transaction and one commit. Each member keeps its own outcome: it is inserted when its expectation is
 * met; otherwise nothing of it is, and the statement answers the stream's revision (the store then tells a repeat
 * from a refusal). Members never share a stream (the store sends a second append to a stream in a later group), so
 * their expectations are independent. An event id already recorded, or a writer of another process racing on one of
 * the streams, makes the whole statement fail on a unique constraint, and the store then appends the members one
 * by one, where each has the single append's treatment of repeats and races.
 *
 * Lean on purpose: one probe of the stream index per member, and the insert's own unique checks, nothing else. An
 * earlier form also looked every event id up to answer repeats in the statement; those probes and their subplans
 * made it cost two to three times the database time of this one, for a case (a repeat) that is rare and has its
 * own path.
 *
 * Parameters: $1 the members, a JSON array of {m, stream, kind, exact}; $2 their events, a JSON array of
 * {m, o (1-based order within the member), id, type, v (schema version), data, meta}. Answers one row per member.
 * The events are numbered (revision, global position) and chained member by member, in order: the recursion takes
 * one step per event of the longest member.
 */
function groupStatement(hash: (previous: string, e: Omit<Parameters<typeof chainHash>[1], 'recordedAtMicros'>) => string): string {
  const event = { id: 'e.id', stream: 'e.stream', revision: 'e.revision', type: 'e.type', version: 'e.v', data: 'e.data', metadata: 'e.meta' };
  return `
WITH RECURSIVE decided AS MATERIALIZED (
  SELECT m.m, m.stream, last.revision, last.chain_hash,
         CASE m.kind
           WHEN 'any' THEN true
           WHEN 'no_stream' THEN last.revision IS NULL
           WHEN 'stream_exists' THEN last.revision IS NOT NULL
           ELSE last.revision IS NOT DISTINCT FROM m.exact
         END AS expected
    FROM jsonb_to_recordset($1::jsonb) AS m(m integer, stream text, kind text, exact bigint)
    LEFT JOIN LATERAL (SELECT revision, chain_hash FROM events WHERE stream = m.stream ORDER BY revision DESC LIMIT 1) last ON true
), batch AS MATERIALIZED (
  SELECT e.m, e.o, e.id, d.stream, coalesce(d.revision, -1) + e.o AS revision, e.type, e.v, e.data, e.meta,
         d.chain_hash AS previous
    FROM decided d
    JOIN jsonb_to_recordset($2::jsonb) AS e(m integer, o bigint, id uuid, type text, v integer, data jsonb, meta jsonb)
      ON e.m = d.m
   WHERE d.expected
), chain AS (
  SELECT e.m, e.o, ${hash('e.previous', event)} AS hash FROM batch e WHERE e.o = 1
  UNION ALL
  SELECT e.m, e.o, ${hash('c.hash', event)}
    FROM chain c JOIN batch e ON e.m = c.m AND e.o = c.o + 1
), inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata, recorded_at, chain_hash)
  SELECT e.id, e.stream, e.revision, e.type, e.v, e.data, e.meta, now(), c.hash
    FROM batch e JOIN chain c ON c.m = e.m AND c.o = e.o
   ORDER BY e.m, e.o
  RETURNING stream, revision, global_position
)
SELECT d.m, d.expected AS met, d.revision::text AS current_revision,
       a.revision::text AS last_revision, a.global_position::text AS last_position,
       pg_current_xact_id()::text AS transaction_id
  FROM decided d
  LEFT JOIN (SELECT stream, max(revision) AS revision, max(global_position) AS global_position FROM inserted GROUP BY stream) a
    ON a.stream = d.stream
 ORDER BY d.m`;
}

/**
 * The feed: only events of transactions older than every transaction still running are visible, so a
 * transaction that took its sequence numbers early and commits late is read in its place, never skipped.
 */
export const FEED_COLUMNS = `transaction_id::text AS commit_position, global_position::text AS prepare_position,
  id, stream, revision::text AS revision, type, schema_version, data, metadata, recorded_at`;

export const READ_ALL_FROM_START_SQL = `
SELECT ${FEED_COLUMNS} FROM events
 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY transaction_id, global_position
 LIMIT $1`;

export const READ_ALL_AFTER_SQL = `
SELECT ${FEED_COLUMNS} FROM events
 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
   AND (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
 ORDER BY transaction_id, global_position
 LIMIT $3`;

/**
 * The feed after a position (or from its start), and whether events already committed wait behind the horizon: the
 * function read_feed_tail (src/db/migrations.ts, which says how and why). Its last row is the answer on holding.
 */
export const READ_TAIL_SQL = 'SELECT * FROM read_feed_tail($1, $2, $3)';

export const HEAD_POSITION_SQL = `
SELECT transaction_id::text AS commit_position, global_position::text AS prepare_position FROM events
 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY transaction_id DESC, global_position DESC
 LIMIT 1`;

export const READ_STREAM_FORWARDS_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND revision >= $2 ORDER BY events.revision LIMIT $3`;

/**
 * Forward reads of several streams in one statement (the store's read groups): member `n` reads `stream` from
 * `from_revision`, at most `lim` events, exactly as READ_STREAM_FORWARDS_SQL would on its own; rows come by member,
 * then revision. Revisions come as JSON strings: a bigint may not fit a JSON number.
 */
export const READ_STREAMS_SQL = `
SELECT r.n, e.* FROM jsonb_to_recordset($1::jsonb) AS r(n integer, stream text, from_revision bigint, lim integer)
CROSS JOIN LATERAL (
  SELECT ${FEED_COLUMNS}, events.revision AS ord FROM events
   WHERE events.stream = r.stream AND events.revision >= r.from_revision
   ORDER BY events.revision LIMIT r.lim) AS e
 ORDER BY r.n, e.ord`;

export const READ_STREAM_BACKWARDS_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND revision <= $2 ORDER BY events.revision DESC LIMIT $3`;

export const STREAM_EVENTS_BY_ID_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND id = ANY($2::uuid[]) ORDER BY revision`;

export const EVENTS_BY_ID_SQL = `
SELECT id, stream, revision::text AS revision, transaction_id::text AS commit_position,
       global_position::text AS prepare_position
  FROM events WHERE id = ANY($1::uuid[])`;
