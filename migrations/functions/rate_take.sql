-- mio.rate_take takes up to p_n tokens from the bucket p_key (refilling at
-- p_rate tokens/s up to p_burst) at p_now (default: the database clock, so
-- replicas never disagree) and returns how many it granted and, when it
-- granted fewer than asked, the seconds until the next token.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.rate_take(p_tenant uuid, p_key text, p_rate double precision, p_burst double precision, p_n integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone, OUT granted integer, OUT wait_seconds double precision) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    t_now  timestamptz := coalesce(p_now, clock_timestamp());
    level  double precision;
BEGIN
    INSERT INTO mio.rate_buckets AS b (tenant_id, bucket_key, tokens, updated_at)
    VALUES (p_tenant, p_key, p_burst, t_now)
    ON CONFLICT (tenant_id, bucket_key) DO UPDATE
        SET tokens = least(p_burst, b.tokens + p_rate * greatest(0, extract(epoch FROM t_now - b.updated_at))),
            updated_at = greatest(b.updated_at, t_now)
    RETURNING tokens INTO level;
    granted := least(p_n, floor(level + 1e-9)::integer);
    IF granted > 0 THEN
        UPDATE mio.rate_buckets SET tokens = level - granted
        WHERE tenant_id = p_tenant AND bucket_key = p_key;
    END IF;
    wait_seconds := CASE WHEN granted < p_n THEN greatest(0, 1 - (level - granted)) / p_rate ELSE 0 END;
END
$$;
