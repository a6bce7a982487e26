-- Whether a consumer's backlog is counted row by row: a conversation
-- filter (the deltas are not kept per conversation), or a start time less
-- than five minutes before the consumer's creation (a message received
-- before it may still commit after the creation, and would be skipped by
-- the reader without being counted; received_at is ingest's accept time,
-- and an accepted message commits within seconds).
--
-- SQL: one statement, no procedural logic.

CREATE OR REPLACE FUNCTION mio.consumer_counts_rows(p_conversation_ids text[], p_start_time timestamp with time zone, p_created_at timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT cardinality(coalesce(p_conversation_ids, '{}')) > 0
       OR (p_start_time IS NOT NULL AND p_start_time > p_created_at - interval '5 minutes')
$$;
