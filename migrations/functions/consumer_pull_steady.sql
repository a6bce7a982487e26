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
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max integer) RETURNS TABLE(status text, id uuid, xid xid8, seq bigint, message_seq bigint, envelope jsonb, raw bytea, lease_id bigint)
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
           s.last_delivered_at, coalesce(s.position_written_at, 'epoch') AS position_written_at, s.taken
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
        c.last_delivered_at, c.swept <> st.swept OR now() - c.position_written_at > interval '1 second', c.taken) AS t;
END
$$;

GRANT ALL ON FUNCTION mio.consumer_pull_steady(p_tenant uuid, p_name text, p_max integer) TO mio_runtime;
