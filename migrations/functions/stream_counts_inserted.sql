-- Rows a statement appended to the streams: every inserted row to the
-- received stage, those inserted ready to the ready stage too. A statement
-- trigger: one insert per statement, whatever wrote the rows (ingest's
-- group commit, a bulk load), in the writing statement.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.stream_counts_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO mio.stream_counts (tenant_id, stage, channel_type, account_id, n)
    SELECT r.tenant_id, s.stage, r.channel_type, r.account_id, count(*)
    FROM new_rows AS r
    CROSS JOIN (VALUES ('received'), ('ready')) AS s (stage)
    WHERE s.stage = 'received' OR r.ready_xid IS NOT NULL
    GROUP BY r.tenant_id, s.stage, r.channel_type, r.account_id;
    RETURN NULL;
END
$$;
