-- Catch-up for platforms whose history reads newest first (Slack
-- conversations.history): a conversation's cursor remembers the gap a
-- reconciler walk has not finished reading, so a run stopped by its page
-- bound or a rate limit goes on where it stopped. While gap_before is set,
-- the messages after gap_after and before gap_before (both exclusive) may
-- be missing; last_source_id is already past them.

-- +goose Up
SET lock_timeout = '10s';
ALTER TABLE mio.source_cursors
    ADD COLUMN gap_after  text NOT NULL DEFAULT '',
    ADD COLUMN gap_before text NOT NULL DEFAULT '';

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.source_cursors DROP COLUMN IF EXISTS gap_before, DROP COLUMN IF EXISTS gap_after;
