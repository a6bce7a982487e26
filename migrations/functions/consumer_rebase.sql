-- The base that makes a consumer's counters agree with its position,
-- counting its unread rows row by row once (a seek, a filter change; the
-- caller holds the consumer's pull lock, taken by an earlier statement).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.consumer_rebase(p_tenant uuid, p_name text) RETURNS bigint
    LANGUAGE sql
    AS $$
UPDATE mio.consumers AS c
SET backlog_base = CASE WHEN mio.consumer_counts_rows(s.filter_conversation_ids, s.start_time, s.created_at) THEN 0
    ELSE mio.stream_appended(s.tenant_id, s.stage, s.filter_channel_types, s.filter_account_ids) - s.taken
         - mio.consumer_untaken_rows(s.tenant_id, s.stage, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq,
                                     s.filter_channel_types, s.filter_account_ids, s.filter_conversation_ids, s.start_time)
    END
FROM mio.consumer_state AS s
WHERE c.tenant_id = p_tenant AND c.name = p_name AND s.tenant_id = p_tenant AND s.name = p_name
RETURNING c.backlog_base
$$;

GRANT ALL ON FUNCTION mio.consumer_rebase(p_tenant uuid, p_name text) TO mio_runtime;
