-- +goose Up
-- Streamed replies: an outbox row whose text grows while the agent writes
-- (POST /v1/outbound with "stream": true, then .../append and .../finish).
-- stream_seq is the number of the last append taken (0 when opened; NULL
-- for every other message); stream_finished_at is when the stream was
-- finished (by the agent, or by the dispatcher when it timed out), NULL
-- while the agent may still append. A stream row names itself in edit_of:
-- the dispatch claims already return the provider id of the message an
-- edit names, so a stream resumed after a crash brings the id of the
-- message it is growing (docs/architecture.md, "Streamed replies"). The
-- columns have no default, so adding them rewrites nothing; the check is
-- added NOT VALID and validated after, so the table is not scanned under
-- the ACCESS EXCLUSIVE lock.
SET lock_timeout = '10s';
ALTER TABLE mio.outbox ADD COLUMN stream_seq integer, ADD COLUMN stream_finished_at timestamptz;
ALTER TABLE mio.outbox ADD CONSTRAINT outbox_stream_check
    CHECK (stream_seq IS NULL OR (stream_seq >= 0 AND edit_of = id)) NOT VALID;
ALTER TABLE mio.outbox VALIDATE CONSTRAINT outbox_stream_check;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.outbox DROP CONSTRAINT outbox_stream_check;
ALTER TABLE mio.outbox DROP COLUMN stream_seq, DROP COLUMN stream_finished_at;
