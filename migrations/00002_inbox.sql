-- Inbound: dedup keys, the inbox of canonical messages, and provider
-- status events (WhatsApp receipts).

-- +goose Up
SET lock_timeout = '10s';

-- One row per (account, platform event id) ever accepted: a platform
-- redelivery conflicts here and writes nothing. Pruned after its own
-- retention window, independently of the inbox.
CREATE TABLE mio.inbound_dedup (
    tenant_id         uuid        NOT NULL,
    account_id        uuid        NOT NULL,
    source_message_id text        NOT NULL,
    message_id        uuid        NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id, source_message_id)
);
CREATE INDEX inbound_dedup_created ON mio.inbound_dedup (created_at);

-- The inbox. Stream order is (xid, seq): xid is the inserting
-- transaction's id (xid8), so a consumer can read only rows below the
-- snapshot horizon pg_snapshot_xmin(pg_current_snapshot()) and never skip
-- a row whose transaction commits late. ready_xid/ready_seq order the
-- "ready" stage (attachments settled), set when the message becomes ready.
CREATE TABLE mio.inbox (
    tenant_id         uuid        NOT NULL,
    id                uuid        NOT NULL,
    seq               bigint      GENERATED ALWAYS AS IDENTITY,
    xid               xid8        NOT NULL DEFAULT pg_current_xact_id(),
    ready_xid         xid8,
    ready_seq         bigint,
    account_id        uuid        NOT NULL,
    channel_type      text        NOT NULL,
    conversation_id   text        NOT NULL,
    source_message_id text        NOT NULL,
    state             text        NOT NULL CHECK (state IN ('received', 'ready')),
    -- The mio.v1.Message without its raw payload.
    envelope          jsonb       NOT NULL,
    -- The platform's original payload, bounded in size.
    raw               bytea,
    received_at       timestamptz NOT NULL,
    ready_at          timestamptz,
    archived_at       timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id),
    CHECK ((state = 'ready') = (ready_xid IS NOT NULL))
);
-- ready_seq is drawn when a message becomes ready (at insert, or when the
-- enrich worker settles its attachments).
CREATE SEQUENCE mio.inbox_ready_seq;
GRANT USAGE, SELECT ON SEQUENCE mio.inbox_ready_seq TO mio_runtime;

CREATE INDEX inbox_received_stream ON mio.inbox (tenant_id, xid, seq);
CREATE INDEX inbox_ready_stream ON mio.inbox (tenant_id, ready_xid, ready_seq) WHERE ready_xid IS NOT NULL;
-- Every index here is paid on the ingest hot path: keep only what a
-- query uses (the consumer and archive streams, and the primary key).

-- Delivery receipts reported by platforms (WhatsApp statuses), deduplicated
-- on (provider message id, status); the outbound side consumes them.
CREATE TABLE mio.provider_events (
    tenant_id           uuid        NOT NULL,
    account_id          uuid        NOT NULL,
    provider_message_id text        NOT NULL,
    status              text        NOT NULL,
    occurred_at         timestamptz,
    recipient_id        text        NOT NULL DEFAULT '',
    error               text        NOT NULL DEFAULT '',
    raw                 jsonb,
    received_at         timestamptz NOT NULL DEFAULT now(),
    applied_at          timestamptz,
    PRIMARY KEY (tenant_id, account_id, provider_message_id, status)
);
CREATE INDEX provider_events_unapplied ON mio.provider_events (received_at) WHERE applied_at IS NULL;

ALTER TABLE mio.inbound_dedup ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbound_dedup FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.inbound_dedup
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.inbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.inbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.provider_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.provider_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.provider_events
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.provider_events;
DROP TABLE IF EXISTS mio.inbox;
DROP SEQUENCE IF EXISTS mio.inbox_ready_seq;
DROP TABLE IF EXISTS mio.inbound_dedup;
