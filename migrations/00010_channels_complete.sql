-- Channels complete: links from edits to their originals, and Telegram
-- long-polling state.

-- +goose Up
SET lock_timeout = '10s';

-- One row per stored inbound message that a later edit or delete can name:
-- the platform's id of the message within its conversation (Slack ts,
-- Telegram message_id, Discord id, wamid, webhook data.message_id). Written
-- in the ingest statement that stores the message; an edit's ingest looks
-- its original up here to fill envelope.edit_of {id, source_message_id}.
-- Pruned with the dedup keys (same retention window).
CREATE TABLE mio.inbound_refs (
    tenant_id           uuid        NOT NULL,
    account_id          uuid        NOT NULL,
    conversation_id     text        NOT NULL,
    platform_message_id text        NOT NULL,
    message_id          uuid        NOT NULL,
    source_message_id   text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id, conversation_id, platform_message_id)
);
CREATE INDEX inbound_refs_created ON mio.inbound_refs (created_at);

ALTER TABLE mio.inbound_refs ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbound_refs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.inbound_refs
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- Telegram accounts in settings mode "polling": the next getUpdates offset
-- and the lease of the one process polling the bot. The offset moves in
-- the same transaction that stores the batch's updates, and only while the
-- committer still holds the lease (holder = its id), so a batch is stored
-- exactly once even when a lease changes hands mid-batch.
CREATE TABLE mio.telegram_pollers (
    tenant_id   uuid        NOT NULL,
    account_id  uuid        NOT NULL,
    next_offset bigint      NOT NULL DEFAULT 0,
    holder      uuid,
    lease_until timestamptz NOT NULL DEFAULT '-infinity',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE mio.telegram_pollers ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.telegram_pollers FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.telegram_pollers
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.telegram_pollers;
DROP TABLE IF EXISTS mio.inbound_refs;
