-- The order of the outbox's handoff states (NULL: not a state). Used by the
-- outbox's state check and to move states forward only.
--
-- SQL, IMMUTABLE: a constant expression, inlined into its callers.

CREATE OR REPLACE FUNCTION mio.handoff_rank(state text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE state WHEN 'queued' THEN 10 WHEN 'sending' THEN 20 WHEN 'handed_off' THEN 100 WHEN 'dead' THEN 100 END $$;
