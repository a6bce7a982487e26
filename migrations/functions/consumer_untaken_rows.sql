-- The rows of a consumer's stage it has not read that match its filter,
-- counted row by row as the calling statement's snapshot sees them: the
-- rest of its open window (lo, hi] after its cursor, and everything
-- committed since hi (or lo, when no window is open).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.consumer_untaken_rows(p_tenant uuid, p_stage text, p_lo pg_snapshot, p_hi pg_snapshot, p_cursor_xid xid8, p_cursor_seq bigint, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone) RETURNS bigint
    LANGUAGE sql STABLE
    AS $$
SELECT (SELECT count(*) FROM mio.log_ready(p_tenant, p_lo, coalesce(p_hi, pg_current_snapshot()), p_cursor_xid, p_cursor_seq,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'ready')
     + (SELECT count(*) FROM mio.log_ready(p_tenant, p_hi, pg_current_snapshot(), '0', 0,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'ready' AND p_hi IS NOT NULL)
     + (SELECT count(*) FROM mio.log_received(p_tenant, p_lo, coalesce(p_hi, pg_current_snapshot()), p_cursor_xid, p_cursor_seq,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'received')
     + (SELECT count(*) FROM mio.log_received(p_tenant, p_hi, pg_current_snapshot(), '0', 0,
            coalesce(p_channel_types, '{}'), coalesce(p_account_ids, '{}'), coalesce(p_conversation_ids, '{}'), p_start_time, NULL)
        WHERE p_stage = 'received' AND p_hi IS NOT NULL)
$$;
