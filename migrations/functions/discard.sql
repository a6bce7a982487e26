-- mio.discard(id) removes a dead letter from mio.dead_letters and returns
-- how many items it discarded (0 when id is not a dead letter). An
-- outbound message is kept, marked discarded, with its history; a
-- consumer's dead delivery is dropped (as an ack would).
--
-- plpgsql: needs variables and control flow.

CREATE OR REPLACE FUNCTION mio.discard(p_id uuid) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    WITH r AS (
        UPDATE mio.outbox o SET discarded_at = now(), updated_at = now()
        WHERE o.id = p_id AND o.dead_at IS NOT NULL AND o.discarded_at IS NULL AND o.handoff_state = 'dead'
        RETURNING o.tenant_id, o.id, o.attempt_no
    )
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT r.tenant_id, r.id, 'discarded', 'handoff', 'dead', r.attempt_no, jsonb_build_object('by', 'mio.discard')
    FROM r;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN n;
    END IF;
    DELETE FROM mio.consumer_deliveries d WHERE d.message_id = p_id AND d.state = 'dead';
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
