-- mio.requeue(id) puts a dead letter back to work and returns how many
-- items it requeued (0 when id is not a dead letter, so calling it twice
-- is safe). An outbound message starts a new attempt series (new
-- attempt numbers, hence new provider idempotency keys) at the back of
-- its lane; the outbox sweeper enqueues its dispatch job within seconds.
-- A consumer's dead delivery becomes pending again with a fresh count.
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.requeue(p_id uuid) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    WITH r AS (
        UPDATE mio.outbox o
        SET handoff_state = 'queued', attempt_no = o.attempt_no + 1, series = o.series + 1,
            series_first_attempt = o.attempt_no + 1, attempts = 0, next_attempt_at = now(),
            lease_until = NULL, job_id = NULL, dead_at = NULL, seq = DEFAULT, updated_at = now()
        WHERE o.id = p_id AND o.dead_at IS NOT NULL AND o.discarded_at IS NULL AND o.handoff_state = 'dead'
        RETURNING o.tenant_id, o.id, o.attempt_no
    )
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT r.tenant_id, r.id, 'requeued', 'handoff', 'queued', r.attempt_no, jsonb_build_object('by', 'mio.requeue')
    FROM r;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN n;
    END IF;
    -- A consumer's dead delivery goes back to pending with a fresh
    -- delivery count (for every consumer that dead-lettered the message).
    UPDATE mio.consumer_deliveries d
    SET state = 'pending', delivery_count = 0, available_at = now(), delivery_id = NULL,
        lease_expires_at = NULL, last_error = '', updated_at = now()
    WHERE d.message_id = p_id AND d.state = 'dead';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
