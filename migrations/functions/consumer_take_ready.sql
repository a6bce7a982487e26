-- Takes up to p_max rows of the ready stage for consumer p_name from the
-- window (p_lo, p_hi] after its cursor, leases them as one range (ack wait
-- p_ack_wait) and, with p_persist, appends the consumer's new position with
-- p_taken added to its count of rows read. The caller holds the consumer's
-- row lock. The overload without p_taken appends the position with the
-- taken count it reads.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean) RETURNS TABLE(id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
    LANGUAGE sql
    AS $$
SELECT * FROM mio.consumer_take_ready(p_tenant, p_lo, p_hi, p_cursor_xid, p_cursor_seq, p_channel_types, p_account_ids,
    p_conversation_ids, p_start_time, p_max, p_name, p_ack_wait, p_swept, p_delivered, p_last_delivered_at, p_persist,
    (SELECT s.taken FROM mio.consumer_state AS s WHERE s.tenant_id = p_tenant AND s.name = p_name))
$$;

CREATE OR REPLACE FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean, p_taken bigint) RETURNS TABLE(id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
        INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, taken)
        SELECT p_tenant, p_name, (SELECT g.gen FROM g), nc.lo, nc.hi, nc.xid, nc.seq,
               p_swept, CASE WHEN nc.n > 0 OR p_delivered THEN now() ELSE p_last_delivered_at END, p_taken + nc.n
        FROM nc
        WHERE nc.n > 0 OR p_delivered OR p_persist
    )
    SELECT s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, l.id
    FROM s CROSS JOIN l
    ORDER BY s.xid, s.seq;
END
$$;

GRANT ALL ON FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean) TO mio_runtime;
GRANT ALL ON FUNCTION mio.consumer_take_ready(p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone, p_max integer, p_name text, p_ack_wait interval, p_swept bigint, p_delivered boolean, p_last_delivered_at timestamp with time zone, p_persist boolean, p_taken bigint) TO mio_runtime;
