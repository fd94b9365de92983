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

/** The append statements, with the chain hash computed (the service always) or left NULL (see `hashChain`). */
export function appendStatements(chained: boolean): { many: string; one: string } {
  const hash = (previous: string, e: Omit<Parameters<typeof chainHash>[1], 'stream' | 'recordedAtMicros'>) =>
    (chained ? chainHash(previous, { ...e, stream: '$1', recordedAtMicros: RECORDED_AT_MICROS }) : 'NULL::bytea');
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
  SELECT b.ordinal, ${hash('c.hash', { id: 'b.id', revision: 'b.revision', type: 'b.type', version: 'b.schema_version', data: 'b.data', metadata: 'b.metadata' })}
    FROM chain c JOIN batch b ON b.ordinal = c.ordinal + 1
), inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata, recorded_at, chain_hash)
  SELECT b.id, $1, b.revision, b.type, b.schema_version, b.data, b.metadata, now(), c.hash
    FROM batch b JOIN chain c ON c.ordinal = b.ordinal
  RETURNING revision, global_position
)${APPEND_RESULT}`,
    // The common case, one event, without unpacking an array: stream, kind, exact, id, type, version, data, metadata.
    one: `${EXPECTATION}, inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata, recorded_at, chain_hash)
  SELECT $4::uuid, $1, coalesce(x.revision, -1) + 1, $5::text, $6::integer, $7::jsonb, $8::jsonb, now(),
         ${hash('x.chain_hash', { id: '$4::uuid', revision: 'coalesce(x.revision, -1) + 1', type: '$5::text', version: '$6::integer', data: '$7::jsonb', metadata: '$8::jsonb' })}
    FROM expectation x
   WHERE x.met
  RETURNING revision, global_position
)${APPEND_RESULT}`,
  };
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

export const HEAD_POSITION_SQL = `
SELECT transaction_id::text AS commit_position, global_position::text AS prepare_position FROM events
 WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY transaction_id DESC, global_position DESC
 LIMIT 1`;

export const READ_STREAM_FORWARDS_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND revision >= $2 ORDER BY events.revision LIMIT $3`;

export const READ_STREAM_BACKWARDS_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND revision <= $2 ORDER BY events.revision DESC LIMIT $3`;

export const STREAM_EVENTS_BY_ID_SQL = `
SELECT ${FEED_COLUMNS} FROM events WHERE stream = $1 AND id = ANY($2::uuid[]) ORDER BY revision`;

export const EVENTS_BY_ID_SQL = `
SELECT id, stream, revision::text AS revision, transaction_id::text AS commit_position,
       global_position::text AS prepare_position
  FROM events WHERE id = ANY($1::uuid[])`;
