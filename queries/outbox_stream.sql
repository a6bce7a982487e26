-- name: OutboxStreamAppendRound :many
-- Appends, to each open stream of ids (distinct) whose last append was
-- seqs[i] - 1, deltas[i], and takes seqs[i]. Returns one row per stream
-- it locked, with taken true when the append took; a stream that does
-- not take (not a stream, finished, another seq, or the text would
-- exceed max_bytes: OutboxStreamGet tells which) is left as it was. A
-- stream whose row another transaction holds is skipped, not waited
-- for, and has no row (nor has a stream not found): one busy row never
-- holds up the other appends of a group commit, and the caller tries the
-- skipped ones alone (OutboxStreamAppendWait). One statement for a group
-- commit's appends of a tenant (db.OutboxStreamAppendMany).
WITH l AS MATERIALIZED (
    SELECT a.id, a.seq, a.delta
    FROM (SELECT unnest(sqlc.arg(ids)::uuid[]) AS id, unnest(sqlc.arg(seqs)::integer[]) AS seq,
                 unnest(sqlc.arg(deltas)::text[]) AS delta) AS a
    WHERE EXISTS (SELECT FROM mio.outbox AS r WHERE r.tenant_id = sqlc.arg(tenant_id) AND r.id = a.id
                  FOR NO KEY UPDATE SKIP LOCKED)
), u AS (
    UPDATE mio.outbox AS o
    SET text = o.text || l.delta, stream_seq = l.seq
    FROM l
    WHERE o.tenant_id = sqlc.arg(tenant_id) AND o.id = ANY (sqlc.arg(ids)::uuid[]) AND o.id = l.id
      AND o.stream_seq + 1 = l.seq
      AND o.stream_finished_at IS NULL
      AND octet_length(o.text) + octet_length(l.delta) <= sqlc.arg(max_bytes)::integer
    RETURNING o.id
)
SELECT l.id, (u.id IS NOT NULL)::boolean AS taken FROM l LEFT JOIN u ON u.id = l.id;

-- name: OutboxStreamAppendWait :one
-- Appends text_delta to an open stream whose last append was seq - 1,
-- and takes seq, waiting for the row when another transaction holds it;
-- no row when it does not take (OutboxStreamGet tells why). An append
-- alone: one without group commit, or one its group skipped.
UPDATE mio.outbox AS o
SET text = o.text || sqlc.arg(text_delta)::text, stream_seq = sqlc.arg(seq)::integer
WHERE o.tenant_id = sqlc.arg(tenant_id) AND o.id = sqlc.arg(id) AND o.stream_seq + 1 = sqlc.arg(seq)::integer
  AND o.stream_finished_at IS NULL
  AND octet_length(o.text) + octet_length(sqlc.arg(text_delta)::text) <= sqlc.arg(max_bytes)::integer
RETURNING o.stream_seq::integer;

-- name: OutboxStreamGet :one
-- A stream's state, for the answer to an append or finish that did not
-- take (stream_seq NULL: not a stream).
SELECT stream_seq, stream_finished_at, octet_length(text)::integer AS text_bytes
FROM mio.outbox WHERE tenant_id = @tenant_id AND id = @id;

-- name: OutboxStreamFinish :one
-- Finishes an open stream whose last append was seq (0: whatever it
-- was): text, when given, replaces the text so far, rich_content, when
-- given, is set; a stream_finished event is appended. No row when the
-- stream is not open, its last append was another, or the message would
-- have nothing to show (blank text and no rich content).
WITH fin AS (
    UPDATE mio.outbox AS o
    SET text = coalesce(sqlc.narg('text')::text, o.text),
        rich_content = coalesce(sqlc.narg('rich_content')::jsonb, o.rich_content),
        stream_finished_at = clock_timestamp()
    WHERE o.tenant_id = @tenant_id AND o.id = @id AND o.stream_seq IS NOT NULL AND o.stream_finished_at IS NULL
      AND (@seq::integer = 0 OR o.stream_seq = @seq::integer)
      AND (coalesce(sqlc.narg('text')::text, o.text) !~ '^\s*$'
           OR coalesce(sqlc.narg('rich_content')::jsonb, o.rich_content) IS NOT NULL)
    RETURNING o.id, o.attempt_no, o.handoff_state, o.stream_seq
),
ev AS (
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT @tenant_id::uuid, fin.id, 'stream_finished', 'handoff', fin.handoff_state, fin.attempt_no,
           jsonb_build_object('seq', fin.stream_seq)
    FROM fin
)
SELECT fin.stream_seq::integer FROM fin;

-- name: OutboxStreamPoll :one
-- The dispatcher's look at a stream it is sending, once per edit
-- interval: extends the attempt's lease, records the provider id of the
-- message the stream grows (when given) and the event of the previous
-- look's provider call (when given: stream_opened, stream_edited), and
-- returns the text so far. No row: the attempt is no longer sending.
WITH up AS (
    UPDATE mio.outbox AS o
    SET lease_until = @lease_until,
        provider_message_id = coalesce(nullif(@provider_message_id::text, ''), o.provider_message_id)
    WHERE o.tenant_id = @tenant_id AND o.id = @id AND o.handoff_state = 'sending' AND o.attempt_no = @attempt_no
    RETURNING o.id, o.attempt_no, o.text, o.rich_content,
              o.stream_seq, o.stream_finished_at
),
ev AS (
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT @tenant_id::uuid, up.id, @event::text, 'handoff', 'sending', up.attempt_no, sqlc.narg('detail')::jsonb
    FROM up WHERE @event::text <> ''
)
SELECT up.text, up.rich_content, up.stream_seq, up.stream_finished_at FROM up;

-- name: OutboxStreamRead :one
-- The dispatcher's look at a stream between lease extensions: the text
-- so far, read without a write. No row: the attempt is no longer sending.
SELECT o.text, o.rich_content, o.stream_seq, o.stream_finished_at
FROM mio.outbox AS o
WHERE o.tenant_id = @tenant_id AND o.id = @id AND o.handoff_state = 'sending' AND o.attempt_no = @attempt_no;

-- name: OutboxStreamTimeOut :one
-- Finishes a stream the agent did not finish in time, with the text so
-- far, and appends its stream_timed_out event. No row: it was finished
-- meanwhile, or the attempt is no longer sending.
WITH up AS (
    UPDATE mio.outbox AS o SET stream_finished_at = clock_timestamp()
    WHERE o.tenant_id = @tenant_id AND o.id = @id AND o.handoff_state = 'sending' AND o.attempt_no = @attempt_no
      AND o.stream_seq IS NOT NULL AND o.stream_finished_at IS NULL
    RETURNING o.id, o.attempt_no, o.stream_seq
),
ev AS (
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT @tenant_id::uuid, up.id, 'stream_timed_out', 'handoff', 'sending', up.attempt_no,
           jsonb_build_object('seq', up.stream_seq)
    FROM up
)
SELECT up.stream_seq::integer FROM up;
