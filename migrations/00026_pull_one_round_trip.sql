-- +goose Up
-- A pull in one round trip (issues 15 and 17). Pulls of one consumer are
-- serialized by its row lock; until now the lock was held across two
-- round trips (BeginPull: lock, consumer, pull state; TakeCommit: take,
-- COMMIT), so the consumer's throughput was one batch per client round
-- trip plus the client's scheduling delay in between. The steady state
-- of an unordered consumer of the ready stage (nothing due again, no
-- lease range expired) needs no decision from the client: it is now made
-- here, and a pull is one statement (mio.consumer_pull_steady, in an
-- implicit transaction) whose lock is held only while PostgreSQL executes
-- it.
--
-- The pull state and the take move into functions so that the two paths
-- share them (queries/consumers.sql ConsumerPullState and
-- queries/consumer_leases.sql LeaseTakeReady call the same functions).
-- plpgsql, not SQL: plpgsql keeps its plans for the session.
SET lock_timeout = '10s';

-- mio.consumer_pull_state: everything a pull needs before claiming (see
-- ConsumerPullState): live leases, whether anything is due again, lease
-- ranges outstanding and expired, the sweep, and the window's hi (the
-- consumer's open window, else the snapshot of the calling statement —
-- STABLE: the function runs on its caller's snapshot, which the caller
-- takes once the consumer's row lock is granted). Sequential scans off:
-- every read here is an index range of one consumer above its sweep (a
-- few rows), but a generic plan cannot see the sweep's value and guesses
-- a third of the ring partition, and so chose a sequential scan of the
-- current generation's lease ranges and settlements — a cost that grew
-- with the generation's age, inside the consumer's serialized pull (1 ms
-- at 3,300 ranges).
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_pull_state(p_tenant uuid, p_name text)
RETURNS TABLE (leased bigint, due boolean, ranges boolean, ranges_expired boolean, swept bigint, hi text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT s.swept, s.log_hi FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name
    ),
    rr AS MATERIALIZED (
        SELECT r.id, r.expires_at, cardinality(r.message_ids) AS n
        FROM mio.consumer_leases AS r
        WHERE r.tenant_id = p_tenant AND r.consumer_name = p_name AND r.id > (SELECT c.swept FROM c)
    ),
    st AS MATERIALIZED (
        SELECT x.lease_id, sum(cardinality(x.idxs)) AS settled
        FROM mio.consumer_settles AS x
        WHERE x.tenant_id = p_tenant AND x.consumer_name = p_name AND x.lease_id > (SELECT c.swept FROM c)
        GROUP BY x.lease_id
    ),
    r AS MATERIALIZED (
        SELECT rr.id, rr.expires_at, rr.n - coalesce(st.settled, 0) AS outstanding
        FROM rr LEFT JOIN st ON st.lease_id = rr.id
    )
    SELECT
        ((SELECT count(*) FROM mio.consumer_deliveries AS l
          WHERE l.tenant_id = p_tenant AND l.consumer_name = p_name AND l.state = 'leased' AND l.lease_expires_at > now())
         + (SELECT coalesce(sum(r.outstanding), 0) FROM r WHERE r.expires_at > now()))::bigint,
        (EXISTS (SELECT 1 FROM mio.consumer_deliveries AS p
                 WHERE p.tenant_id = p_tenant AND p.consumer_name = p_name AND p.state = 'pending' AND p.available_at <= now())
         OR EXISTS (SELECT 1 FROM mio.consumer_deliveries AS e
                    WHERE e.tenant_id = p_tenant AND e.consumer_name = p_name AND e.state = 'leased' AND e.lease_expires_at <= now())),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0),
        EXISTS (SELECT 1 FROM r WHERE r.outstanding > 0 AND r.expires_at <= now()),
        coalesce((SELECT min(r.id) - 1 FROM r WHERE r.outstanding > 0), (SELECT max(r.id) FROM r), (SELECT c.swept FROM c))::bigint,
        coalesce((SELECT c.log_hi FROM c), pg_current_snapshot())::text;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_pull_state(uuid, text) TO mio_runtime;

-- mio.consumer_take_ready: ordering none, ready stage: read the next rows
-- of the consumer's window (p_lo, p_hi] after its position (mio.log_ready;
-- p_hi was taken by an earlier statement of this transaction), lease them
-- all as one range, and append the consumer's new position (stamping its
-- last delivery) when rows were read, p_delivered, or p_persist. Nothing
-- is updated or deleted (migration 00008). Returns the rows read with the
-- range id; member i is the i-th row in window order. The caller holds
-- the consumer's row lock and passes the position it read under it.
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_take_ready(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint,
    p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamptz,
    p_max int, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean,
    p_last_delivered_at timestamptz, p_persist boolean)
RETURNS TABLE (id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN QUERY
    WITH s AS (
        SELECT i.id, i.ready_xid AS xid, i.ready_seq AS seq, i.seq AS message_seq, i.envelope, i.raw
        FROM mio.log_ready(p_tenant, p_lo, p_hi, p_cursor_xid, p_cursor_seq,
            p_channel_types, p_account_ids, p_conversation_ids, p_start_time, p_max) AS i
    ),
    g AS (SELECT lg.gen FROM mio.consumer_log_gen AS lg),
    l AS (
        INSERT INTO mio.consumer_leases AS cl (tenant_id, consumer_name, gen, id, message_ids, expires_at)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nextval('mio.consumer_take_ids'),
               array_agg(s.id ORDER BY s.xid, s.seq), now() + p_ack_wait
        FROM s
        HAVING count(*) > 0
        RETURNING cl.id
    ),
    k AS (
        SELECT count(*) AS n,
               (array_agg(s.xid ORDER BY s.xid DESC, s.seq DESC))[1] AS last_xid,
               (array_agg(s.seq ORDER BY s.xid DESC, s.seq DESC))[1] AS last_seq
        FROM s
    ),
    -- The new position: when fewer rows than asked came back, the window
    -- (p_lo, p_hi] has been read to its end and p_hi becomes lo (no window
    -- open); otherwise the window stays open at p_hi, read up to the last row.
    nc AS (
        SELECT k.n,
               CASE WHEN k.n < p_max THEN p_hi ELSE p_lo END AS lo,
               CASE WHEN k.n < p_max THEN NULL ELSE p_hi END AS hi,
               CASE WHEN k.n < p_max THEN '0'::xid8 ELSE k.last_xid END AS xid,
               CASE WHEN k.n < p_max THEN 0::bigint ELSE k.last_seq END AS seq
        FROM k
    ),
    adv AS (
        INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nc.lo, nc.hi, nc.xid, nc.seq,
               p_swept, CASE WHEN nc.n > 0 OR p_delivered THEN now() ELSE p_last_delivered_at END
        FROM nc
        WHERE nc.n > 0 OR p_delivered OR p_persist
    )
    SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id
    FROM s CROSS JOIN l
    ORDER BY s.xid, s.seq;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean) TO mio_runtime;

-- mio.consumer_pull_steady: the steady-state pull of consumer p_name of
-- tenant p_tenant, a whole pull transaction in one statement (the caller
-- sends it alone, in an implicit transaction). It sets the transaction's
-- tenant and settings (asynchronous commit, generic plans, no bitmap
-- scans: as BeginPull), runs the range-id guard, and takes the consumer's
-- row lock; the statements after the lock take new snapshots (plpgsql, a
-- volatile function, READ COMMITTED), so they see what the previous lock
-- holder committed. For an unordered consumer of the ready stage with
-- nothing due again and no lease range expired it takes up to p_max rows
-- (fewer when max_ack_pending leaves less room) with
-- mio.consumer_take_ready and returns them with status 'taken' (nothing
-- at all when there was nothing to take). Otherwise it writes nothing and
-- returns one row with status 'not_found' (no such consumer), 'ordered'
-- (an ordered consumer or the received stage: the client's full path,
-- every time) or 'due' (redeliveries or expired ranges first: the full
-- path, this time). The position is appended when rows were read, its
-- sweep moved, or the stored one is over a second old
-- (db.Consumer.positionDue).
-- +goose StatementBegin
CREATE FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max int)
RETURNS TABLE (status text, id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    c record;
    st record;
    room bigint;
BEGIN
    PERFORM set_config('app.current_tenant_id', p_tenant::text, true), set_config('synchronous_commit', 'off', true),
            set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_bitmapscan', 'off', true);
    PERFORM mio.consumer_ids_guard();
    PERFORM 1 FROM mio.consumers AS k WHERE k.tenant_id = p_tenant AND k.name = p_name FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    SELECT s.ordering, s.stage, s.max_ack_pending, s.ack_wait_ms, s.log_lo, s.cursor_xid, s.cursor_seq, s.swept,
           s.filter_channel_types, s.filter_account_ids, s.filter_conversation_ids, s.start_time,
           s.last_delivered_at, coalesce(s.position_written_at, 'epoch') AS position_written_at
    INTO c
    FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name;
    IF NOT FOUND OR c.ordering <> 'none' OR c.stage <> 'ready' THEN
        RETURN QUERY SELECT 'ordered'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    SELECT * INTO st FROM mio.consumer_pull_state(p_tenant, p_name);
    IF st.due OR st.ranges_expired THEN
        RETURN QUERY SELECT 'due'::text, NULL::uuid, NULL::xid8, NULL::bigint, NULL::bigint, NULL::jsonb, NULL::bytea, NULL::bigint;
        RETURN;
    END IF;
    room := least(p_max, c.max_ack_pending - st.leased);
    IF room <= 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT 'taken'::text, t.id, t.xid, t.seq, t.message_seq, t.envelope, t.raw, t.lease_id
    FROM mio.consumer_take_ready(p_tenant, c.log_lo, st.hi::pg_snapshot, c.cursor_xid, c.cursor_seq,
        coalesce(c.filter_channel_types, '{}'), coalesce(c.filter_account_ids, '{}'), coalesce(c.filter_conversation_ids, '{}'),
        c.start_time, room::int, p_name, make_interval(secs => c.ack_wait_ms / 1000.0), st.swept, false,
        c.last_delivered_at, c.swept <> st.swept OR now() - c.position_written_at > interval '1 second') AS t;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION mio.consumer_pull_steady(uuid, text, int) TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.consumer_pull_steady(uuid, text, int);
DROP FUNCTION IF EXISTS mio.consumer_take_ready(uuid, pg_snapshot, pg_snapshot, xid8, bigint, text[], uuid[], text[],
    timestamptz, int, text, interval, bigint, boolean, timestamptz, boolean);
DROP FUNCTION IF EXISTS mio.consumer_pull_state(uuid, text);
