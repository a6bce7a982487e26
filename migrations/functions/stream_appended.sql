-- Rows of a tenant's stage stream matching a channel-type and account
-- filter (empty: any), as the calling statement's snapshot sees them: a
-- sum over the delta rows of the tenant's stage, a few per key.
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.stream_appended(p_tenant uuid, p_stage text, p_channel_types text[], p_account_ids uuid[]) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT coalesce(sum(s.n), 0)::bigint FROM mio.stream_counts AS s
WHERE s.tenant_id = p_tenant AND s.stage = p_stage
  AND (cardinality(coalesce(p_channel_types, '{}')) = 0 OR s.channel_type = ANY (p_channel_types))
  AND (cardinality(coalesce(p_account_ids, '{}')) = 0 OR s.account_id = ANY (p_account_ids))
$$;
