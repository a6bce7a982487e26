-- Media vault and archive: settled attachments, the content-addressed blob
-- registry (reference counts for garbage collection), the archive cursor
-- and the archive's written parts.

-- +goose Up
SET lock_timeout = '10s';

-- One row per attachment the enrich worker has settled: stored (its bytes
-- are in the blob store under storage_key) or failed (error says why).
-- Pending attachments have no row; the envelope in mio.inbox is the
-- message's full view. GET /v1/attachments/{id} reads this table.
CREATE TABLE mio.attachments (
    tenant_id      uuid        NOT NULL,
    id             uuid        NOT NULL,
    message_id     uuid        NOT NULL,
    account_id     uuid        NOT NULL,
    channel_type   text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('stored', 'failed')),
    kind           text        NOT NULL DEFAULT '',
    name           text        NOT NULL DEFAULT '',
    mime_type      text        NOT NULL DEFAULT '',
    size           bigint      NOT NULL DEFAULT 0,
    storage_key    text,
    content_sha256 text,
    error          text        NOT NULL DEFAULT '',
    attempts       integer     NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK ((status = 'stored') = (storage_key IS NOT NULL AND content_sha256 IS NOT NULL))
);
CREATE INDEX attachments_message ON mio.attachments (tenant_id, message_id);
CREATE INDEX attachments_failed ON mio.attachments (tenant_id, created_at) WHERE status = 'failed';

ALTER TABLE mio.attachments ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.attachments FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.attachments
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- The blob registry. Blobs are content-addressed and shared by every
-- tenant (the same bytes are stored once), so this table is global, like
-- mio.tenants; it holds hashes and sizes only, never tenant data. refs
-- counts the stored mio.attachments rows naming the blob; a blob whose refs
-- dropped to 0 (or that was reserved but never referenced, after a crash)
-- is deleted from the store once unreferenced_since is older than the blob
-- retention. Writers serialize on pg_advisory_xact_lock of the hash (see
-- workers/enrich.go and workers/retention.go).
CREATE TABLE mio.media_blobs (
    content_sha256     text        PRIMARY KEY CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
    storage_key        text        NOT NULL,
    size               bigint      NOT NULL,
    refs               bigint      NOT NULL DEFAULT 0 CHECK (refs >= 0),
    unreferenced_since timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX media_blobs_unreferenced ON mio.media_blobs (unreferenced_since) WHERE refs = 0;

-- The archive's cursor per tenant over the ready stage, ordered by
-- (ready_xid, ready_seq) exactly like consumers; advanced in the same
-- transaction that records a batch as written.
CREATE TABLE mio.archive_cursors (
    tenant_id  uuid        NOT NULL REFERENCES mio.tenants (id),
    ready_xid  xid8        NOT NULL DEFAULT '0',
    ready_seq  bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id)
);
ALTER TABLE mio.archive_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.archive_cursors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.archive_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- The NDJSON objects the archive wrote (one per channel type and date of
-- a batch). A retried batch rewrites the same object names and updates
-- these rows.
CREATE TABLE mio.archive_parts (
    tenant_id    uuid        NOT NULL,
    object_key   text        NOT NULL,
    channel_type text        NOT NULL,
    day          date        NOT NULL,
    rows         integer     NOT NULL,
    bytes        bigint      NOT NULL,
    first_xid    xid8        NOT NULL,
    first_seq    bigint      NOT NULL,
    last_xid     xid8        NOT NULL,
    last_seq     bigint      NOT NULL,
    written_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, object_key)
);
CREATE INDEX archive_parts_written ON mio.archive_parts (tenant_id, written_at);
ALTER TABLE mio.archive_parts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.archive_parts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.archive_parts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- Inbox retention deletes archived rows oldest first.
CREATE INDEX inbox_archived ON mio.inbox (tenant_id, received_at) WHERE archived_at IS NOT NULL;

-- mio.dead_letters (00004) gains the attachments that failed: kind
-- 'attachment', id = the attachment id, detail = the message and file.
-- Their message went ready with the attachment's status failed; the row is
-- informational (fix the cause, then ask the platform to resend).
CREATE OR REPLACE VIEW mio.dead_letters WITH (security_invoker = true) AS
SELECT 'outbound'::text AS kind, o.tenant_id, o.id, o.channel_type, o.account_id,
       o.attempts, o.last_error, o.created_at, o.dead_at,
       jsonb_build_object('conversation_id', o.conversation_id, 'attempt_no', o.attempt_no,
                          'series', o.series, 'idempotency_key', o.idempotency_key) AS detail
FROM mio.outbox o
WHERE o.handoff_state = 'dead' AND o.discarded_at IS NULL
UNION ALL
SELECT 'consumer'::text AS kind, d.tenant_id, d.message_id AS id, coalesce(i.channel_type, '') AS channel_type,
       coalesce(i.account_id, '00000000-0000-0000-0000-000000000000'::uuid) AS account_id,
       d.delivery_count AS attempts, d.last_error, coalesce(i.received_at, d.created_at) AS created_at,
       d.updated_at AS dead_at,
       jsonb_build_object('consumer', d.consumer_name) AS detail
FROM mio.consumer_deliveries d
LEFT JOIN mio.inbox i ON i.tenant_id = d.tenant_id AND i.id = d.message_id
WHERE d.state = 'dead'
UNION ALL
SELECT 'attachment'::text AS kind, a.tenant_id, a.id, a.channel_type, a.account_id,
       a.attempts, a.error AS last_error, coalesce(i.received_at, a.created_at) AS created_at,
       a.created_at AS dead_at,
       jsonb_build_object('message_id', a.message_id, 'kind', a.kind, 'name', a.name,
                          'mime_type', a.mime_type) AS detail
FROM mio.attachments a
LEFT JOIN mio.inbox i ON i.tenant_id = a.tenant_id AND i.id = a.message_id
WHERE a.status = 'failed';

-- +goose Down
SET lock_timeout = '10s';
-- CREATE OR REPLACE cannot drop the attachment branch: recreate 00004's view.
DROP VIEW IF EXISTS mio.dead_letters;
CREATE OR REPLACE VIEW mio.dead_letters WITH (security_invoker = true) AS
SELECT 'outbound'::text AS kind, o.tenant_id, o.id, o.channel_type, o.account_id,
       o.attempts, o.last_error, o.created_at, o.dead_at,
       jsonb_build_object('conversation_id', o.conversation_id, 'attempt_no', o.attempt_no,
                          'series', o.series, 'idempotency_key', o.idempotency_key) AS detail
FROM mio.outbox o
WHERE o.handoff_state = 'dead' AND o.discarded_at IS NULL
UNION ALL
SELECT 'consumer'::text AS kind, d.tenant_id, d.message_id AS id, coalesce(i.channel_type, '') AS channel_type,
       coalesce(i.account_id, '00000000-0000-0000-0000-000000000000'::uuid) AS account_id,
       d.delivery_count AS attempts, d.last_error, coalesce(i.received_at, d.created_at) AS created_at,
       d.updated_at AS dead_at,
       jsonb_build_object('consumer', d.consumer_name) AS detail
FROM mio.consumer_deliveries d
LEFT JOIN mio.inbox i ON i.tenant_id = d.tenant_id AND i.id = d.message_id
WHERE d.state = 'dead';
DROP INDEX IF EXISTS mio.inbox_archived;
DROP TABLE IF EXISTS mio.archive_parts;
DROP TABLE IF EXISTS mio.archive_cursors;
DROP TABLE IF EXISTS mio.media_blobs;
DROP TABLE IF EXISTS mio.attachments;
