/**
 * The append is one statement, so one round trip: it reads the stream's current revision, checks the
 * expectation, and inserts the events numbered from there. Two writers racing on the same expectation both
 * pass the check; the unique (stream, revision) constraint lets only one of them commit.
 */
const EXPECTATION = `
WITH current AS (
  SELECT max(revision) AS revision FROM events WHERE stream = $1
), expectation AS (
  SELECT revision,
         CASE $2::text
           WHEN 'any' THEN true
           WHEN 'no_stream' THEN revision IS NULL
           WHEN 'stream_exists' THEN revision IS NOT NULL
           ELSE revision IS NOT DISTINCT FROM $3::bigint
         END AS met
    FROM current
)`;

const APPEND_RESULT = `
SELECT (SELECT met FROM expectation) AS met,
       (SELECT revision::text FROM expectation) AS current_revision,
       max(revision)::text AS last_revision,
       max(global_position)::text AS last_position,
       pg_current_xact_id()::text AS transaction_id
  FROM inserted`;

/** Parameters: stream, expectation kind, exact revision, events as a JSON array. */
export const APPEND_SQL = `${EXPECTATION}, inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata)
  SELECT e.id, $1, coalesce(x.revision, -1) + e.ordinal, e.type, e.schema_version, e.data, e.metadata
    FROM expectation x,
         ROWS FROM (jsonb_to_recordset($4::jsonb)
           AS (id uuid, type text, schema_version integer, data jsonb, metadata jsonb)) WITH ORDINALITY
           AS e(id, type, schema_version, data, metadata, ordinal)
   WHERE x.met
  RETURNING revision, global_position
)${APPEND_RESULT}`;

/** The common case, one event, without unpacking an array: stream, kind, exact, id, type, version, data, metadata. */
export const APPEND_ONE_SQL = `${EXPECTATION}, inserted AS (
  INSERT INTO events (id, stream, revision, type, schema_version, data, metadata)
  SELECT $4::uuid, $1, coalesce(x.revision, -1) + 1, $5::text, $6::integer, $7::jsonb, $8::jsonb
    FROM expectation x
   WHERE x.met
  RETURNING revision, global_position
)${APPEND_RESULT}`;

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

export const EVENTS_BY_ID_SQL = `
SELECT id, stream, revision::text AS revision, transaction_id::text AS commit_position,
       global_position::text AS prepare_position
  FROM events WHERE id = ANY($1::uuid[])`;
