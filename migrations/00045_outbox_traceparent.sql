-- +goose Up
-- The trace context of the request that queued each outbound message
-- (a W3C traceparent, empty when the send was not traced): dispatch starts
-- its spans as children of it, so an agent's reply and its delivery to the
-- platform are one trace. A column with a constant default is added
-- without rewriting the table.
SET lock_timeout = '10s';
ALTER TABLE mio.outbox ADD COLUMN traceparent text DEFAULT '' NOT NULL;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.outbox DROP COLUMN traceparent;
