-- The order of the outbox's provider states (NULL: not a state); receipts
-- only ever move a row's provider state to a higher rank.
--
-- SQL, IMMUTABLE: a constant expression, inlined into its callers.

CREATE OR REPLACE FUNCTION mio.provider_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'unknown' THEN 0 WHEN 'accepted' THEN 10 WHEN 'delivered' THEN 50 WHEN 'read' THEN 60
                            WHEN 'timed_out' THEN 90 WHEN 'bounced' THEN 100 WHEN 'dropped' THEN 100
                            WHEN 'complaint' THEN 100 WHEN 'failed' THEN 100 END $$;
