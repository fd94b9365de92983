/**
 * Schema migrations, applied in order on start, each in its own transaction, under an advisory lock so
 * several instances starting together apply each one once. Applied ids are recorded in schema_migrations.
 * Read-model tables are not here: each projector creates its own (see src/projection/).
 */
import type pg from 'pg';
import { quoteIdent } from './sql.ts';

interface Migration {
  id: string;
  sql: string;
}

const migrations: Migration[] = [
  {
    id: '0001_event_store',
    sql: `
      CREATE TABLE events (
        transaction_id   xid8        NOT NULL DEFAULT pg_current_xact_id(),
        global_position  bigint      GENERATED ALWAYS AS IDENTITY,
        id               uuid        NOT NULL,
        stream           text        NOT NULL,
        revision         bigint      NOT NULL CHECK (revision >= 0),
        type             text        NOT NULL,
        schema_version   integer     NOT NULL DEFAULT 1,
        data             jsonb       NOT NULL,
        metadata         jsonb       NOT NULL DEFAULT '{}'::jsonb,
        recorded_at      timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT events_feed_order PRIMARY KEY (transaction_id, global_position),
        CONSTRAINT events_stream_revision UNIQUE (stream, revision),
        CONSTRAINT events_id UNIQUE (id)
      );

      CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'events are immutable: % on events is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END $$;

      CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION events_are_immutable();
      CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_are_immutable();
    `,
  },
  {
    id: '0002_projection_state',
    sql: `
      CREATE TABLE projection_state (
        name             text        NOT NULL,
        version          integer     NOT NULL,
        kind             text        NOT NULL CHECK (kind IN ('projector', 'reactor')),
        status           text        NOT NULL CHECK (status IN ('building', 'active', 'retired')),
        schema_name      text,
        checkpoint_commit  bigint,
        checkpoint_prepare bigint,
        events_handled   bigint      NOT NULL DEFAULT 0,
        lease_owner      text,
        lease_expires_at timestamptz,
        last_error       text,
        created_at       timestamptz NOT NULL DEFAULT now(),
        updated_at       timestamptz NOT NULL DEFAULT now(),
        activated_at     timestamptz,
        PRIMARY KEY (name, version),
        CHECK ((checkpoint_commit IS NULL) = (checkpoint_prepare IS NULL))
      );
    `,
  },
  {
    id: '0003_service_secrets',
    sql: `
      -- Keys the service generates for itself on first start (the bearer-token signing key).
      CREATE TABLE service_secrets (
        name       text PRIMARY KEY,
        value      bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    id: '0004_idempotency_keys',
    sql: `
      -- Responses remembered per (scope, Idempotency-Key) for 24 hours. Not events: a cache of answers.
      CREATE TABLE idempotency_keys (
        scope         text        NOT NULL,
        key           text        NOT NULL,
        request_hash  text        NOT NULL,
        state         text        NOT NULL CHECK (state IN ('in_flight', 'done')),
        status_code   integer,
        response_body jsonb,
        created_at    timestamptz NOT NULL DEFAULT now(),
        expires_at    timestamptz NOT NULL,
        PRIMARY KEY (scope, key)
      );
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
    `,
  },
  {
    id: '0005_idempotency_owner',
    sql: `
      -- The request that holds a key: only it may complete or release the key.
      ALTER TABLE idempotency_keys ADD COLUMN owner text;
    `,
  },
  {
    id: '0006_event_chain',
    sql: `
      -- Tamper evidence (src/integrity/integrity.ts): each event appended from now on records
      -- sha256(previous event's chain_hash in its stream || sha256(its content)). Events appended before stay
      -- NULL; the first feed digest covers them.
      ALTER TABLE events ADD COLUMN chain_hash bytea;
    `,
  },
  {
    id: '0007_webhook_outbox',
    sql: `
      -- The webhook outbox. Written by the webhooks emitter (a projector) from the event feed, but kept outside its
      -- versioned schema: a rebuilt version finds the deliveries already made and adds none (the unique key), and
      -- the dispatcher's state (attempts, leases) is not a pure function of the feed. Delivered and dropped rows are
      -- purged after their retention (0009_retention).
      CREATE TABLE webhook_deliveries (
        delivery_id      text        PRIMARY KEY,
        endpoint_id      text        NOT NULL,
        client_id        text        NOT NULL,
        event_id         text        NOT NULL,
        source_event_id  uuid,
        event_type       text        NOT NULL,
        object_id        text,
        sequence         bigint,
        body             text        NOT NULL,
        status           text        NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'DROPPED')),
        attempts         integer     NOT NULL DEFAULT 0,
        attempt_log      jsonb       NOT NULL DEFAULT '[]'::jsonb,
        created_at       timestamptz NOT NULL,
        source_recorded_at timestamptz,
        next_attempt_at  timestamptz,
        first_attempt_at timestamptz,
        last_attempt_at  timestamptz,
        last_status_code integer,
        last_error       text,
        delivered_at     timestamptz,
        dropped_at       timestamptz,
        lease_token      text,
        lease_expires_at timestamptz,
        CONSTRAINT webhook_deliveries_once UNIQUE (endpoint_id, source_event_id, event_type)
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'PENDING';
      CREATE INDEX webhook_deliveries_pending_age ON webhook_deliveries (created_at) WHERE status = 'PENDING';
      CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, created_at DESC, delivery_id DESC);
    `,
  },
  {
    id: '0008_projection_replays',
    sql: `
      -- A replay rebuilds a projector's active version beside itself (src/projection/replay.ts): the tables that
      -- serve are then those of schema_name, <schema>__<name>_v<version>_r<replays>, and no longer the version's
      -- first schema. replays counts the rebuilds swapped in; replayed_at is when the latest was.
      ALTER TABLE projection_state ADD COLUMN replays integer NOT NULL DEFAULT 0, ADD COLUMN replayed_at timestamptz;
    `,
  },
  {
    id: '0009_idempotency_owner_liveness',
    sql: `
      -- The liveness lock (src/db/liveness.ts) of the process running a key's request: once no session holds it,
      -- the request was abandoned and a retry takes the key over at once. NULL on PGlite (one process only).
      ALTER TABLE idempotency_keys ADD COLUMN owner_lock integer;
    `,
  },
  {
    id: '0010_retention',
    sql: `
      -- Retention (src/webhooks/retention.ts): delivered and dropped deliveries are purged once their end is older
      -- than WEBHOOK_DELIVERY_RETENTION_DAYS; this index is the purge's queue (pending ones are never in it).
      CREATE INDEX webhook_deliveries_ended ON webhook_deliveries ((coalesce(delivered_at, dropped_at))) WHERE status <> 'PENDING';
      -- How far each purged table's history was cut: for the events feed (webhook_events), the feed position of the
      -- last event purged (everything at or before it is gone, everything after it kept) and the time it was older
      -- than. GET /events refuses a cursor before it (410).
      CREATE TABLE retention_state (
        name           text        PRIMARY KEY,
        feed_commit    bigint      NOT NULL,
        feed_prepare   bigint      NOT NULL,
        ordinal        integer     NOT NULL,
        purged_before  timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    id: '0011_move_checkpoints',
    sql: `
      -- The projectors' shared transaction (src/projection/sharedTransactions.ts) begins with this call, in the same
      -- simple query as its BEGIN. It moves each projector's checkpoint from where the batch read it to where the
      -- batch ends, if nobody else moved it and the lease is still the batch's owner's, and fails unless every
      -- one moved. It then puts the schemas of the tables that serve first on the transaction's search_path, then
      -- base_schema: the rows, locked until the commit, say which tables serve (a replay swaps them,
      -- src/projection/replay.ts). A function because a simple query cannot carry a prepared statement: PL/pgSQL
      -- plans its statement once per connection, where the statement written into the query was planned at every
      -- batch (about as long as it ran).
      CREATE FUNCTION move_checkpoints(wanted jsonb, expected integer, base_schema text) RETURNS text
      LANGUAGE plpgsql AS $$
      DECLARE
        schemas text[];
      BEGIN
        WITH x AS (
          SELECT * FROM jsonb_to_recordset(wanted) AS x(name text, version integer, owner text, ttl_ms double precision,
            previous_commit bigint, previous_prepare bigint, next_commit bigint, next_prepare bigint, handled bigint)
        ), moved AS (
          UPDATE projection_state p
             SET checkpoint_commit = x.next_commit, checkpoint_prepare = x.next_prepare,
                 events_handled = p.events_handled + x.handled,
                 lease_expires_at = now() + make_interval(secs => x.ttl_ms / 1000), last_error = NULL, updated_at = now()
            FROM x
           WHERE p.name = x.name AND p.version = x.version AND p.lease_owner = x.owner AND p.status <> 'retired'
             AND p.checkpoint_commit IS NOT DISTINCT FROM x.previous_commit
             AND p.checkpoint_prepare IS NOT DISTINCT FROM x.previous_prepare
          RETURNING p.schema_name
        )
        SELECT array_agg(format('%I', schema_name)) INTO schemas FROM moved;
        IF coalesce(cardinality(schemas), 0) <> expected THEN
          RAISE EXCEPTION 'CheckpointsNotMoved: % of %', coalesce(cardinality(schemas), 0), expected;
        END IF;
        RETURN set_config('search_path', concat_ws(', ', array_to_string(schemas, ', '), format('%I', base_schema), 'public'), true);
      END
      $$;
    `,
  },
  {
    id: '0012_read_feed_tail',
    sql: `
      -- The feed after a position (from its start when after_commit is null), at most page events, and whether events
      -- already committed wait behind the horizon: rows of a transaction that ended while an older one (of any
      -- writer: an append, a projector's batch) still runs. Such events show once that older transaction ends, so a
      -- reader told held reads again soon instead of waiting for the next append. The last row is the answer on
      -- holding (every column but held and holder null); the rows before it, the page.
      --
      -- Held is asked as the newest transaction id against the horizon (one probe of the feed-order index): an
      -- EXISTS over the ids at or past the horizon, which the planner expects to match a third of the log, was
      -- planned as a scan of the whole table, read to its end whenever nothing is held. holder is the server process
      -- running the horizon's transaction, when held and it still runs (src/projection/sharedFeed.ts), asked of the
      -- activity array directly: pg_locks, whose scan of every backend's fast-path locks took ten times longer.
      --
      -- A function, with its plans generic: as a prepared statement, Postgres planned it anew at most reads (about
      -- 0.3 ms, as long as it ran), since a plan for the position given looks cheaper than one for any position.
      -- The generic plan is the same walk of the feed-order index from the position.
      CREATE FUNCTION read_feed_tail(after_commit text, after_prepare bigint, page integer)
      RETURNS TABLE (commit_position text, prepare_position text, id uuid, stream text, revision text, type text,
                     schema_version integer, data jsonb, metadata jsonb, recorded_at timestamptz, held boolean, holder integer)
      LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
      #variable_conflict use_column
      BEGIN
        -- From the start: after (0, 0), before every event.
        RETURN QUERY
          WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
          hold AS MATERIALIZED (SELECT COALESCE((SELECT max(e.transaction_id) FROM events e) >= (SELECT h.xmin FROM horizon h), false) AS held)
          (SELECT e.transaction_id::text, e.global_position::text, e.id, e.stream, e.revision::text, e.type, e.schema_version,
                  e.data, e.metadata, e.recorded_at, NULL::boolean, NULL::integer
             FROM events e
            WHERE e.transaction_id < (SELECT h.xmin FROM horizon h)
              AND (e.transaction_id, e.global_position) > (coalesce(after_commit, '0')::xid8, coalesce(after_prepare, 0))
            ORDER BY e.transaction_id, e.global_position
            LIMIT page)
          UNION ALL
          SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, o.held,
                 CASE WHEN o.held THEN (SELECT a.pid FROM pg_stat_get_activity(NULL) AS a, horizon h WHERE a.backend_xid = xid(h.xmin) LIMIT 1) END
            FROM hold o;
      END
      $$;
    `,
  },
];

export async function runMigrations(pool: pg.Pool, schema: string): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    const s = quoteIdent(schema);
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`migrations:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
      id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${s}.schema_migrations`);
    const done = new Set(rows.map((r) => r.id));
    await client.query(`SET LOCAL search_path TO ${s}, public`);
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${s}.schema_migrations (id) VALUES ($1)`, [migration.id]);
      applied.push(migration.id);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  return applied;
}
