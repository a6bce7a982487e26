-- Rows an UPDATE put on the ready stream (a new ready position).
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.stream_counts_made_ready() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
    SELECT r.tenant_id, 'ready', r.channel_type, r.account_id, count(*)
    FROM new_rows AS r
    JOIN old_rows AS o ON o.tenant_id = r.tenant_id AND o.id = r.id
    WHERE r.ready_xid IS NOT NULL AND r.ready_xid IS DISTINCT FROM o.ready_xid
    GROUP BY r.tenant_id, r.channel_type, r.account_id;
    RETURN NULL;
END
$$;
