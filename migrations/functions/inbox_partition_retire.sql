-- Retiring a day partition counts its rows a consumer had not read yet.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) RETURNS TABLE(partition_name text, messages bigint, blobs_released bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    SET lock_timeout TO '200ms'
    AS $_$
DECLARE
    part text;
    day date;
    lo uuid;
    hi uuid;
    t uuid;
    cur record;
    blocked boolean;
    released bigint := 0;
    n bigint;
    u bigint;
    k record;
BEGIN
    SELECT c.relname, to_date(substr(c.relname, 8), 'YYYYMMDD') INTO part, day
    FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhrelid
    WHERE h.inhparent = 'mio.inbox'::regclass AND c.relname ~ '^inbox_p[0-9]{8}$'
      AND (to_date(substr(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= least(p_before, now())
    ORDER BY 2
    LIMIT 1;
    IF part IS NULL THEN
        RETURN;
    END IF;
    lo := mio.uuid_time_floor(day::timestamp AT TIME ZONE 'UTC');
    hi := mio.uuid_time_floor((day + 1)::timestamp AT TIME ZONE 'UTC');
    -- Row-level security applies to the owner too (FORCE): look tenant by
    -- tenant, each through its own setting.
    FOR t IN SELECT id FROM mio.tenants LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        cur := NULL;
        SELECT c.log_lo, c.log_hi, c.ready_xid, c.ready_seq INTO cur FROM mio.archive_cursors AS c WHERE c.tenant_id = t;
        -- Unread rows: only those at or above the position's xmin can be
        -- (an index range on the ready stream).
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM mio.%I WHERE tenant_id = $1 AND ready_xid IS NULL)'
                       ' OR EXISTS (SELECT 1 FROM mio.%I AS i WHERE i.tenant_id = $1 AND i.ready_xid IS NOT NULL'
                       '            AND ($2::pg_snapshot IS NULL OR (i.ready_xid >= pg_snapshot_xmin($2)'
                       '                 AND NOT mio.log_read(i.ready_xid, i.ready_seq, $2, $3, $4, $5))))', part, part)
            INTO blocked USING t, cur.log_lo, cur.log_hi, cur.ready_xid, cur.ready_seq;
        IF blocked THEN
            PERFORM set_config('app.current_tenant_id', '', true);
            RETURN;
        END IF;
    END LOOP;
    FOR t IN SELECT id FROM mio.tenants LOOP
        PERFORM set_config('app.current_tenant_id', t::text, true);
        -- A consumer that has not read every row of the day counts the
        -- unread ones it would have taken in its base:
        -- under its pull lock, with its position read by a later statement.
        PERFORM 1 FROM mio.consumers AS x WHERE x.tenant_id = t ORDER BY x.name FOR NO KEY UPDATE;
        FOR k IN SELECT s.name, s.stage, s.log_lo, s.log_hi, s.cursor_xid, s.cursor_seq, s.start_time,
                        coalesce(s.filter_channel_types, '{}') AS channel_types, coalesce(s.filter_account_ids, '{}') AS account_ids,
                        coalesce(s.filter_conversation_ids, '{}') AS conversation_ids
                 FROM mio.consumer_state AS s WHERE s.tenant_id = t LOOP
            EXECUTE format('SELECT count(*) FROM mio.%1$I AS i WHERE i.tenant_id = $1 AND i.%2$I >= pg_snapshot_xmin($2)'
                           ' AND NOT mio.log_read(i.%2$I, i.%3$I, $2, $3, $4, $5)'
                           ' AND (cardinality($7::text[]) = 0 OR i.channel_type = ANY ($7))'
                           ' AND (cardinality($8::uuid[]) = 0 OR i.account_id = ANY ($8))'
                           ' AND (cardinality($9::text[]) = 0 OR i.conversation_id = ANY ($9))'
                           ' AND ($6::timestamptz IS NULL OR i.received_at >= $6)',
                           part, CASE WHEN k.stage = 'ready' THEN 'ready_xid' ELSE 'xid' END,
                           CASE WHEN k.stage = 'ready' THEN 'ready_seq' ELSE 'seq' END)
                INTO u USING t, k.log_lo, k.log_hi, k.cursor_xid, k.cursor_seq, k.start_time,
                             k.channel_types, k.account_ids, k.conversation_ids;
            IF u > 0 THEN
                UPDATE mio.consumers AS x SET backlog_base = x.backlog_base + u WHERE x.tenant_id = t AND x.name = k.name;
            END IF;
        END LOOP;
        WITH gone AS (
            DELETE FROM mio.attachments AS a
            WHERE a.tenant_id = t AND a.message_id >= lo AND a.message_id < hi
            RETURNING a.content_sha256
        ), rel AS (
            SELECT g.content_sha256, count(*) AS k FROM gone AS g
            WHERE g.content_sha256 IS NOT NULL GROUP BY g.content_sha256
        ), unref AS (
            UPDATE mio.media_blobs AS b
            SET refs = greatest(b.refs - r.k, 0),
                unreferenced_since = CASE WHEN b.refs - r.k <= 0 THEN now() ELSE b.unreferenced_since END
            FROM rel AS r WHERE b.content_sha256 = r.content_sha256
            RETURNING 1
        )
        SELECT count(*) INTO n FROM unref;
        released := released + n;
    END LOOP;
    PERFORM set_config('app.current_tenant_id', '', true);
    SELECT greatest(c.reltuples, 0)::bigint INTO n FROM pg_class AS c WHERE c.oid = ('mio.' || quote_ident(part))::regclass;
    EXECUTE format('ALTER TABLE mio.inbox DETACH PARTITION mio.%I', part);
    EXECUTE format('DROP TABLE mio.%I', part);
    partition_name := part;
    messages := n;
    blobs_released := released;
    RETURN NEXT;
END
$_$;

REVOKE ALL ON FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION mio.inbox_partition_retire(p_before timestamp with time zone) TO mio_runtime;
