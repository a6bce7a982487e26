-- The base of a consumer being created: the matching rows before its
-- starting position, as the creating statement's snapshot (its lo, for
-- deliver_policy new) sees them. all: none. new: every one. by_start_time:
-- those received before the start time. Row-by-row consumers: unused.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.consumer_base_at_create(p_tenant uuid, p_stage text, p_deliver_policy text, p_channel_types text[], p_account_ids uuid[], p_conversation_ids text[], p_start_time timestamp with time zone) RETURNS bigint
    LANGUAGE sql STABLE
    AS $$
SELECT CASE
    WHEN mio.consumer_counts_rows(p_conversation_ids, p_start_time, now()) OR p_deliver_policy = 'all' THEN 0
    WHEN p_deliver_policy = 'new' THEN mio.stream_appended(p_tenant, p_stage, p_channel_types, p_account_ids)
    ELSE mio.stream_appended(p_tenant, p_stage, p_channel_types, p_account_ids) - (
        SELECT count(*) FROM mio.inbox AS i
        WHERE i.tenant_id = p_tenant AND i.received_at >= p_start_time
          AND (p_stage = 'received' OR i.ready_xid IS NOT NULL)
          AND (cardinality(coalesce(p_channel_types, '{}')) = 0 OR i.channel_type = ANY (p_channel_types))
          AND (cardinality(coalesce(p_account_ids, '{}')) = 0 OR i.account_id = ANY (p_account_ids)))
END
$$;
