-- The schema of MIO's tables: schemas, the runtime role and its privileges,
-- sequences, tables, partitions, indexes and constraints. Functions and
-- views are not here: each is one file of its current text,
-- migrations/functions/<name>.sql or migrations/views/<name>.sql, applied
-- by the migrator. The objects that name a function (the outbox's state
-- checks, row-level security policies, triggers, the inbox's first
-- partitions) are in 00002_baseline_policies.sql, which runs once the
-- function files have been created.
--
-- A database created before this baseline has versions 1..42 recorded and
-- never runs it (migrations/README.md). Later changes are new migrations,
-- numbered from 00043.
--
-- Every tenant-scoped table keeps tenant_id leading its keys, has row-level
-- security forced (policies keyed on app.current_tenant_id) and is used by
-- the service as mio_runtime (no BYPASSRLS); migrations run as the owner.
-- Tables get SELECT, INSERT, UPDATE, DELETE for mio_runtime from the default
-- privileges below; a table that differs says so right after it. The
-- singleton tables get their one row here.

-- +goose Up
SET lock_timeout = '10s';

CREATE SCHEMA IF NOT EXISTS mio;
CREATE SCHEMA IF NOT EXISTS river;

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mio_runtime') THEN
        CREATE ROLE mio_runtime NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    -- The owner must be able to SET ROLE mio_runtime on its pooled sessions.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       AND NOT pg_has_role(current_user, 'mio_runtime', 'MEMBER') THEN
        EXECUTE format('GRANT mio_runtime TO %I', current_user);
    END IF;
END
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA mio TO mio_runtime;
GRANT USAGE ON SCHEMA river TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA mio GRANT USAGE, SELECT ON SEQUENCES TO mio_runtime;
-- River's tables (created by River's own migrations, after these).
ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO mio_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA river GRANT USAGE, SELECT ON SEQUENCES TO mio_runtime;
-- The service checks the schema version (mio serve, /readyz).
GRANT SELECT ON TABLE public.mio_schema_migrations TO mio_runtime;


-- ==========================================================================
-- Tenants, accounts, tokens, audit
-- ==========================================================================

-- The tenant registry. Not tenant-scoped (ids, names and a status only), so
-- operators can list tenants; everything a tenant owns is. Names are unique
-- ignoring case.
CREATE TABLE mio.tenants (
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    status text DEFAULT 'active' NOT NULL,
    CONSTRAINT tenants_name_check CHECK (((name <> '') AND (length(name) <= 200))),
    CONSTRAINT tenants_status_check CHECK ((status = ANY (ARRAY['active', 'disabled']))),
    CONSTRAINT tenants_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX tenants_lower_name_key ON mio.tenants (lower(name));

-- Account ids appear in webhook URLs before any tenant is known: this maps an
-- account id to its tenant and channel and nothing else, so the webhook path
-- can set the tenant and then read the account under RLS. Kept by the
-- trigger accounts_route on mio.accounts; the runtime role only reads it.
CREATE TABLE mio.account_routes (
    account_id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    channel_type text NOT NULL,
    CONSTRAINT account_routes_pkey PRIMARY KEY (account_id)
);
REVOKE DELETE, INSERT, UPDATE ON mio.account_routes FROM mio_runtime;

-- One connection to a chat platform. settings: plain adapter settings;
-- credentials_enc, webhook_secret_enc (and the previous secret during a
-- rotation's grace): AES-256-GCM sealed with MIO_MASTER_KEY. rate_limit_*,
-- max_attempts: NULL means the channel's default.
CREATE TABLE mio.accounts (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    channel_type text NOT NULL,
    display_name text NOT NULL,
    external_id text DEFAULT '' NOT NULL,
    status text DEFAULT 'active' NOT NULL,
    settings jsonb DEFAULT '{}' NOT NULL,
    credentials_enc bytea,
    webhook_secret_enc bytea,
    rate_limit_per_sec double precision,
    rate_limit_burst integer,
    max_attempts integer,
    created_at timestamptz DEFAULT now() NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    webhook_secret_prev_enc bytea,
    webhook_secret_prev_until timestamptz,
    disabled_reason text DEFAULT '' NOT NULL,
    CONSTRAINT accounts_channel_type_check CHECK ((channel_type = ANY (ARRAY['slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook']))),
    CONSTRAINT accounts_display_name_check CHECK (((display_name <> '') AND (length(display_name) <= 200))),
    CONSTRAINT accounts_max_attempts_check CHECK (((max_attempts IS NULL) OR ((max_attempts >= 1) AND (max_attempts <= 100)))),
    CONSTRAINT accounts_rate_limit_burst_check CHECK (((rate_limit_burst IS NULL) OR (rate_limit_burst > 0))),
    CONSTRAINT accounts_rate_limit_per_sec_check CHECK (((rate_limit_per_sec IS NULL) OR (rate_limit_per_sec > (0)::double precision))),
    CONSTRAINT accounts_settings_check CHECK ((jsonb_typeof(settings) = 'object')),
    CONSTRAINT accounts_status_check CHECK ((status = ANY (ARRAY['active', 'disabled']))),
    CONSTRAINT accounts_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT accounts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id)
);
CREATE INDEX accounts_tenant_channel ON mio.accounts (tenant_id, channel_type, status);
ALTER TABLE mio.accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.accounts FORCE ROW LEVEL SECURITY;

-- Short-lived platform access tokens minted from an account's credentials
-- (OAuth refresh), sealed, shared by every replica; renewed after renew_at.
CREATE TABLE mio.account_access_tokens (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    credentials_enc bytea NOT NULL,
    token_enc bytea NOT NULL,
    expires_at timestamptz NOT NULL,
    renew_at timestamptz NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT account_access_tokens_pkey PRIMARY KEY (tenant_id, account_id),
    CONSTRAINT account_access_tokens_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE mio.account_access_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.account_access_tokens FORCE ROW LEVEL SECURITY;

-- Tenant API tokens (Bearer): only their SHA-256 is stored.
CREATE TABLE mio.api_tokens (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    name text NOT NULL,
    roles text[] NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    last_used_at timestamptz,
    revoked_at timestamptz,
    CONSTRAINT api_tokens_name_check CHECK (((name <> '') AND (length(name) <= 200))),
    CONSTRAINT api_tokens_roles_check CHECK (((cardinality(roles) > 0) AND (roles <@ ARRAY['consume', 'produce', 'read']))),
    CONSTRAINT api_tokens_token_sha256_check CHECK ((length(token_sha256) = 32)),
    CONSTRAINT api_tokens_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT api_tokens_tenant_id_token_sha256_key UNIQUE (tenant_id, token_sha256),
    CONSTRAINT api_tokens_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id)
);
ALTER TABLE mio.api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.api_tokens FORCE ROW LEVEL SECURITY;

-- Admin API tokens: not tenant-scoped, SHA-256 only.
CREATE TABLE mio.admin_tokens (
    id uuid NOT NULL,
    name text NOT NULL,
    roles text[] NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    last_used_at timestamptz,
    revoked_at timestamptz,
    expires_at timestamptz,
    CONSTRAINT admin_tokens_name_check CHECK (((name <> '') AND (length(name) <= 200))),
    CONSTRAINT admin_tokens_roles_check CHECK (((cardinality(roles) > 0) AND (roles <@ ARRAY['viewer', 'operator', 'credential-admin']))),
    CONSTRAINT admin_tokens_token_sha256_check CHECK ((length(token_sha256) = 32)),
    CONSTRAINT admin_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT admin_tokens_token_sha256_key UNIQUE (token_sha256)
);

-- Admin actions, newest last (before/after of what changed).
CREATE TABLE mio.audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY,
    at timestamptz DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    tenant_id uuid,
    target text DEFAULT '' NOT NULL,
    before jsonb,
    after jsonb,
    CONSTRAINT audit_log_action_check CHECK ((action <> '')),
    CONSTRAINT audit_log_actor_check CHECK ((actor <> '')),
    CONSTRAINT audit_log_pkey PRIMARY KEY (id)
);
CREATE INDEX audit_log_tenant ON mio.audit_log (tenant_id, id) WHERE (tenant_id IS NOT NULL);
REVOKE DELETE, UPDATE ON mio.audit_log FROM mio_runtime;

-- ==========================================================================
-- Inbound intake: dedup, references, source cursors, platform sessions
-- ==========================================================================

-- One row per (account, platform event id) ever accepted: a platform
-- redelivery conflicts here and writes nothing. Pruned after its own
-- retention window, independently of the inbox.
CREATE TABLE mio.inbound_dedup (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    source_message_id text NOT NULL,
    message_id uuid NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT inbound_dedup_pkey PRIMARY KEY (tenant_id, account_id, source_message_id)
);
CREATE INDEX inbound_dedup_created ON mio.inbound_dedup (created_at);
ALTER TABLE mio.inbound_dedup ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbound_dedup FORCE ROW LEVEL SECURITY;

-- One row per stored inbound message that a later edit or delete can name
-- (the platform's id of the message within its conversation), written with
-- the message; an edit's ingest looks its original up here to fill
-- envelope.edit_of. Pruned with the dedup keys.
CREATE TABLE mio.inbound_refs (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    conversation_id text NOT NULL,
    platform_message_id text NOT NULL,
    message_id uuid NOT NULL,
    source_message_id text NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT inbound_refs_pkey PRIMARY KEY (tenant_id, account_id, conversation_id, platform_message_id)
);
CREATE INDEX inbound_refs_created ON mio.inbound_refs (created_at);
ALTER TABLE mio.inbound_refs ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbound_refs FORCE ROW LEVEL SECURITY;

-- Per conversation, the newest platform message id seen and any gap the
-- catch-up reconciler still has to fill (gap_after, gap_before).
CREATE TABLE mio.source_cursors (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    conversation_id text NOT NULL,
    conversation_type text DEFAULT '' NOT NULL,
    last_source_id text NOT NULL,
    active_at timestamptz NOT NULL,
    gap_after text DEFAULT '' NOT NULL,
    gap_before text DEFAULT '' NOT NULL,
    CONSTRAINT source_cursors_pkey PRIMARY KEY (tenant_id, account_id, conversation_id),
    CONSTRAINT source_cursors_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE mio.source_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.source_cursors FORCE ROW LEVEL SECURITY;

-- Discord Gateway sessions: which replica holds an account's connection
-- (lease), and what it needs to resume or re-identify.
CREATE TABLE mio.gateway_sessions (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    holder uuid,
    lease_until timestamptz DEFAULT '1970-01-01 00:00:00+00'::timestamptz NOT NULL,
    session_id text DEFAULT '' NOT NULL,
    resume_url text DEFAULT '' NOT NULL,
    seq bigint DEFAULT 0 NOT NULL,
    identify_at timestamptz DEFAULT '1970-01-01 00:00:00+00'::timestamptz NOT NULL,
    identifies integer DEFAULT 0 NOT NULL,
    identify_window timestamptz DEFAULT '1970-01-01 00:00:00+00'::timestamptz NOT NULL,
    error text DEFAULT '' NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT gateway_sessions_pkey PRIMARY KEY (tenant_id, account_id),
    CONSTRAINT gateway_sessions_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE mio.gateway_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.gateway_sessions FORCE ROW LEVEL SECURITY;

-- Telegram long polling: the next getUpdates offset of an account and the
-- replica polling it (lease).
CREATE TABLE mio.telegram_pollers (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    next_offset bigint DEFAULT 0 NOT NULL,
    holder uuid,
    lease_until timestamptz DEFAULT '-infinity'::timestamptz NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT telegram_pollers_pkey PRIMARY KEY (tenant_id, account_id),
    CONSTRAINT telegram_pollers_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE mio.telegram_pollers ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.telegram_pollers FORCE ROW LEVEL SECURITY;

-- ==========================================================================
-- The inbox: the log of inbound messages
-- Partitioned by id (UUIDv7, so by day of receipt): one partition per UTC
-- day, created ahead by mio.inbox_partitions_ensure and retired whole by
-- retention (mio.inbox_partition_retire); rows of other days land in
-- inbox_default. A row is appended with its transaction's xid and a seq;
-- ready rows also get ready_xid and ready_seq. Readers walk the log in
-- snapshot windows (docs/architecture.md, "Reading the log").
-- ==========================================================================

CREATE SEQUENCE mio.inbox_seq;

CREATE SEQUENCE mio.inbox_ready_seq;

-- Inbound messages: the normalized envelope (mio.v1.Message) and the
-- platform's raw payload, both lz4-compressed.
CREATE TABLE mio.inbox (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('mio.inbox_seq'::regclass),
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_xid xid8,
    ready_seq bigint,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    source_message_id text NOT NULL,
    state text NOT NULL,
    envelope jsonb COMPRESSION lz4 NOT NULL,
    raw bytea COMPRESSION lz4,
    received_at timestamptz NOT NULL,
    ready_at timestamptz,
    archived_at timestamptz,
    CONSTRAINT inbox_check1 CHECK (((state = 'ready') = (ready_xid IS NOT NULL))),
    CONSTRAINT inbox_seq_present CHECK ((seq IS NOT NULL)),
    CONSTRAINT inbox_state_check1 CHECK ((state = ANY (ARRAY['received', 'ready']))),
    CONSTRAINT inbox_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT inbox_tenant_id_account_id_fkey1 FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id)
)
PARTITION BY RANGE (id);
CREATE TABLE mio.inbox_default PARTITION OF mio.inbox DEFAULT;
CREATE INDEX inbox_received_at ON mio.inbox USING brin (received_at) WITH (autosummarize='on');
CREATE INDEX inbox_unready ON mio.inbox (tenant_id) WHERE (ready_xid IS NULL);
CREATE INDEX inbox_ready_stream ON mio.inbox (tenant_id, ready_xid, ready_seq) WHERE (ready_xid IS NOT NULL);
CREATE INDEX inbox_received_stream ON mio.inbox (tenant_id, xid, seq);
ALTER TABLE mio.inbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.inbox FORCE ROW LEVEL SECURITY;

ALTER SEQUENCE mio.inbox_seq OWNED BY mio.inbox.seq;

-- Exact backlog: signed deltas of the rows appended per (tenant, stage,
-- channel, account), written by the statement that appends them (statement
-- triggers on mio.inbox, in 00002) and folded by mio.stream_counts_fold.
CREATE TABLE mio.stream_counts (
    tenant_id uuid NOT NULL,
    stage text NOT NULL,
    channel_type text NOT NULL,
    account_id uuid NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT stream_counts_stage_check CHECK ((stage = ANY (ARRAY['received', 'ready'])))
)
WITH (autovacuum_vacuum_scale_factor='0.0', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_insert_scale_factor='0.0', autovacuum_vacuum_insert_threshold='1000');
CREATE INDEX stream_counts_key ON mio.stream_counts (tenant_id, stage, channel_type, account_id) INCLUDE (n);
ALTER TABLE mio.stream_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.stream_counts FORCE ROW LEVEL SECURITY;

-- ==========================================================================
-- Media and archive
-- ==========================================================================

-- Content-addressed attachment bytes in the blob store, shared by every
-- tenant (hashes and sizes only, never tenant data). refs counts the
-- attachments naming the blob; one unreferenced for longer than the blob
-- retention is deleted. Writers serialize on an advisory lock of the hash.
CREATE TABLE mio.media_blobs (
    content_sha256 text NOT NULL,
    storage_key text NOT NULL,
    size bigint NOT NULL,
    refs bigint DEFAULT 0 NOT NULL,
    unreferenced_since timestamptz,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT media_blobs_content_sha256_check CHECK ((content_sha256 ~ '^[0-9a-f]{64}$')),
    CONSTRAINT media_blobs_refs_check CHECK ((refs >= 0)),
    CONSTRAINT media_blobs_pkey PRIMARY KEY (content_sha256)
);
CREATE INDEX media_blobs_unreferenced ON mio.media_blobs (unreferenced_since) WHERE (refs = 0);

-- One attachment of an inbound message: stored (in the vault, by
-- content_sha256) or failed.
CREATE TABLE mio.attachments (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    message_id uuid NOT NULL,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    status text NOT NULL,
    kind text DEFAULT '' NOT NULL,
    name text DEFAULT '' NOT NULL,
    mime_type text DEFAULT '' NOT NULL,
    size bigint DEFAULT 0 NOT NULL,
    storage_key text,
    content_sha256 text,
    error text DEFAULT '' NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT attachments_check CHECK (((status = 'stored') = ((storage_key IS NOT NULL) AND (content_sha256 IS NOT NULL)))),
    CONSTRAINT attachments_status_check CHECK ((status = ANY (ARRAY['stored', 'failed']))),
    CONSTRAINT attachments_pkey PRIMARY KEY (tenant_id, id)
);
CREATE INDEX attachments_failed ON mio.attachments (tenant_id, created_at) WHERE (status = 'failed');
CREATE INDEX attachments_message ON mio.attachments (tenant_id, message_id);
ALTER TABLE mio.attachments ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.attachments FORCE ROW LEVEL SECURITY;

-- Per tenant, how far the NDJSON archive has read the log (a log window).
CREATE TABLE mio.archive_cursors (
    tenant_id uuid NOT NULL,
    ready_xid xid8 DEFAULT '0'::xid8 NOT NULL,
    ready_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    log_lo pg_snapshot DEFAULT '1:1:'::pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    CONSTRAINT archive_cursors_pkey PRIMARY KEY (tenant_id),
    CONSTRAINT archive_cursors_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id)
);
ALTER TABLE mio.archive_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.archive_cursors FORCE ROW LEVEL SECURITY;

-- The NDJSON objects the archive wrote (one per channel type and day of a
-- batch); a retried batch rewrites the same objects and updates its rows.
CREATE TABLE mio.archive_parts (
    tenant_id uuid NOT NULL,
    object_key text NOT NULL,
    channel_type text NOT NULL,
    day date NOT NULL,
    rows integer NOT NULL,
    bytes bigint NOT NULL,
    first_xid xid8 NOT NULL,
    first_seq bigint NOT NULL,
    last_xid xid8 NOT NULL,
    last_seq bigint NOT NULL,
    written_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT archive_parts_pkey PRIMARY KEY (tenant_id, object_key)
);
CREATE INDEX archive_parts_written ON mio.archive_parts (tenant_id, written_at);
ALTER TABLE mio.archive_parts ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.archive_parts FORCE ROW LEVEL SECURITY;

-- ==========================================================================
-- Consumers: pull subscriptions on the log
-- A consumer's position is a log window (log_lo, log_hi) and a cursor.
-- Leases, settles and positions are append-only event tables, list
-- partitioned by a generation (0..2) that rotates so whole partitions are
-- truncated instead of rows deleted (docs/architecture.md, "Append-only
-- consumer bookkeeping").
-- ==========================================================================

-- A named consumer of a tenant: its filter, delivery settings, the position
-- it was created at or last compacted to, and the exact-backlog counters
-- (taken, backlog_base).
CREATE TABLE mio.consumers (
    tenant_id uuid NOT NULL,
    name text NOT NULL,
    filter_channel_types text[] DEFAULT '{}' NOT NULL,
    filter_account_ids uuid[] DEFAULT '{}' NOT NULL,
    filter_conversation_ids text[] DEFAULT '{}' NOT NULL,
    deliver_policy text NOT NULL,
    start_time timestamptz,
    ack_wait_ms bigint NOT NULL,
    max_deliver integer NOT NULL,
    max_ack_pending integer NOT NULL,
    ordering text NOT NULL,
    stage text NOT NULL,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    last_delivered_at timestamptz,
    created_at timestamptz DEFAULT now() NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    swept bigint DEFAULT 0 NOT NULL,
    taken bigint DEFAULT 0 NOT NULL,
    backlog_base bigint DEFAULT 0 NOT NULL,
    CONSTRAINT consumers_ack_wait_ms_check CHECK (((ack_wait_ms >= 1000) AND (ack_wait_ms <= 43200000))),
    CONSTRAINT consumers_check CHECK (((deliver_policy = 'by_start_time') = (start_time IS NOT NULL))),
    CONSTRAINT consumers_deliver_policy_check CHECK ((deliver_policy = ANY (ARRAY['all', 'new', 'by_start_time']))),
    CONSTRAINT consumers_max_ack_pending_check CHECK (((max_ack_pending >= 1) AND (max_ack_pending <= 100000))),
    CONSTRAINT consumers_max_deliver_check CHECK (((max_deliver >= 1) AND (max_deliver <= 1000))),
    CONSTRAINT consumers_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')),
    CONSTRAINT consumers_ordering_check CHECK ((ordering = ANY (ARRAY['none', 'conversation']))),
    CONSTRAINT consumers_stage_check CHECK ((stage = ANY (ARRAY['ready', 'received']))),
    CONSTRAINT consumers_pkey PRIMARY KEY (tenant_id, name),
    CONSTRAINT consumers_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id)
);
ALTER TABLE mio.consumers ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumers FORCE ROW LEVEL SECURITY;

-- One row per message a consumer has taken and not yet acknowledged outside
-- a lease range: pending (waiting, possibly after a nak delay), leased (to one
-- puller until lease_expires_at) or dead (max_deliver exhausted or
-- terminated). An ack deletes the row.
CREATE TABLE mio.consumer_deliveries (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    message_id uuid NOT NULL,
    message_seq bigint NOT NULL,
    conversation_key text NOT NULL,
    state text NOT NULL,
    delivery_id uuid,
    delivery_count integer DEFAULT 0 NOT NULL,
    available_at timestamptz DEFAULT now() NOT NULL,
    lease_expires_at timestamptz,
    last_error text DEFAULT '' NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    pos bigint NOT NULL,
    CONSTRAINT consumer_deliveries_check CHECK (((state = 'leased') = ((delivery_id IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT consumer_deliveries_state_check CHECK ((state = ANY (ARRAY['pending', 'leased', 'dead']))),
    CONSTRAINT consumer_deliveries_pkey PRIMARY KEY (tenant_id, consumer_name, message_id),
    CONSTRAINT consumer_deliveries_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE
)
WITH (autovacuum_vacuum_scale_factor='0.01', autovacuum_vacuum_insert_scale_factor='0.01', autovacuum_vacuum_cost_delay='0', autovacuum_analyze_scale_factor='0.02');
CREATE INDEX consumer_deliveries_conversation ON mio.consumer_deliveries (tenant_id, consumer_name, conversation_key, pos) WHERE (state <> 'dead');
CREATE INDEX consumer_deliveries_dead ON mio.consumer_deliveries (tenant_id, message_id) WHERE (state = 'dead');
CREATE UNIQUE INDEX consumer_deliveries_delivery ON mio.consumer_deliveries (tenant_id, delivery_id) WHERE (delivery_id IS NOT NULL);
CREATE INDEX consumer_deliveries_lease_due ON mio.consumer_deliveries (tenant_id, consumer_name, lease_expires_at) WHERE (state = 'leased');
CREATE INDEX consumer_deliveries_pending_due ON mio.consumer_deliveries (tenant_id, consumer_name, available_at) WHERE (state = 'pending');
ALTER TABLE mio.consumer_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_deliveries FORCE ROW LEVEL SECURITY;

-- The generation new event rows go to; next_clean: the generation after it
-- has been truncated, so the ring may advance.
CREATE TABLE mio.consumer_log_gen (
    singleton boolean DEFAULT true NOT NULL,
    gen smallint DEFAULT 0 NOT NULL,
    next_clean boolean DEFAULT true NOT NULL,
    rotated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT consumer_log_gen_gen_check CHECK (((gen >= 0) AND (gen <= 2))),
    CONSTRAINT consumer_log_gen_singleton_check CHECK (singleton),
    CONSTRAINT consumer_log_gen_pkey PRIMARY KEY (singleton)
);
INSERT INTO mio.consumer_log_gen DEFAULT VALUES;

CREATE SEQUENCE mio.consumer_take_ids MAXVALUE 281474976710655;

-- A range of messages leased by one pull (up to 4096), id from
-- consumer_take_ids; member i's delivery id is mio.lease_delivery_id(id, i).
-- Outstanding until settled or expired.
CREATE TABLE mio.consumer_leases (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    id bigint NOT NULL,
    message_ids uuid[] NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT consumer_leases_id_check CHECK ((id < '281474976710656'::bigint)),
    CONSTRAINT consumer_leases_message_ids_check CHECK (((cardinality(message_ids) >= 1) AND (cardinality(message_ids) <= 4096))),
    CONSTRAINT consumer_leases_pkey PRIMARY KEY (tenant_id, consumer_name, id, gen),
    CONSTRAINT consumer_leases_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE
)
PARTITION BY LIST (gen);
CREATE TABLE mio.consumer_leases_0 PARTITION OF mio.consumer_leases FOR VALUES IN ('0') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_leases_1 PARTITION OF mio.consumer_leases FOR VALUES IN ('1') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_leases_2 PARTITION OF mio.consumer_leases FOR VALUES IN ('2') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
ALTER TABLE mio.consumer_leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases FORCE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases_0 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases_0 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_leases_0 TO mio_runtime;
ALTER TABLE mio.consumer_leases_1 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases_1 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_leases_1 TO mio_runtime;
ALTER TABLE mio.consumer_leases_2 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_leases_2 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_leases_2 TO mio_runtime;

-- Settlements of lease-range members, appended by acks and by moves out. No
-- foreign key: an ack does not lock the consumer; range ids never repeat, so
-- rows of a deleted consumer match nothing.
CREATE TABLE mio.consumer_settles (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    lease_id bigint NOT NULL,
    idxs integer[] NOT NULL,
    CONSTRAINT consumer_settles_idxs_check CHECK (((cardinality(idxs) >= 1) AND (cardinality(idxs) <= 4096)))
)
PARTITION BY LIST (gen);
CREATE TABLE mio.consumer_settles_0 PARTITION OF mio.consumer_settles FOR VALUES IN ('0') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_settles_1 PARTITION OF mio.consumer_settles FOR VALUES IN ('1') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_settles_2 PARTITION OF mio.consumer_settles FOR VALUES IN ('2') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE INDEX consumer_settles_lease ON mio.consumer_settles (tenant_id, consumer_name, lease_id);
ALTER TABLE mio.consumer_settles ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_settles FORCE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_settles_0 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_settles_0 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_settles_0 TO mio_runtime;
ALTER TABLE mio.consumer_settles_1 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_settles_1 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_settles_1 TO mio_runtime;
ALTER TABLE mio.consumer_settles_2 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_settles_2 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_settles_2 TO mio_runtime;

CREATE SEQUENCE mio.consumer_position_ids;

-- A consumer's position, appended by a pull that moved it; the newest row
-- (highest n) is the position, else mio.consumers' columns. swept: every
-- lease range with id <= swept is settled.
CREATE TABLE mio.consumer_positions (
    tenant_id uuid NOT NULL,
    consumer_name text NOT NULL,
    gen smallint NOT NULL,
    n bigint DEFAULT nextval('mio.consumer_position_ids'::regclass) NOT NULL,
    log_lo pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    cursor_xid xid8 NOT NULL,
    cursor_seq bigint NOT NULL,
    swept bigint NOT NULL,
    last_delivered_at timestamptz,
    written_at timestamptz DEFAULT now() NOT NULL,
    taken bigint DEFAULT 0 NOT NULL,
    CONSTRAINT consumer_positions_pkey PRIMARY KEY (tenant_id, consumer_name, n, gen),
    CONSTRAINT consumer_positions_tenant_id_consumer_name_fkey FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers(tenant_id, name) ON DELETE CASCADE
)
PARTITION BY LIST (gen);
CREATE TABLE mio.consumer_positions_0 PARTITION OF mio.consumer_positions FOR VALUES IN ('0') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_positions_1 PARTITION OF mio.consumer_positions FOR VALUES IN ('1') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
CREATE TABLE mio.consumer_positions_2 PARTITION OF mio.consumer_positions FOR VALUES IN ('2') WITH (autovacuum_vacuum_insert_scale_factor='0.2');
ALTER TABLE mio.consumer_positions ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_positions FORCE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_positions_0 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_positions_0 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_positions_0 TO mio_runtime;
ALTER TABLE mio.consumer_positions_1 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_positions_1 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_positions_1 TO mio_runtime;
ALTER TABLE mio.consumer_positions_2 ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_positions_2 FORCE ROW LEVEL SECURITY;
GRANT TRUNCATE ON mio.consumer_positions_2 TO mio_runtime;

-- When the server last started, as seen by mio.consumer_ids_guard: after a
-- crash the range id sequence moves far ahead, so ids lost with the WAL
-- tail are never handed out again.
CREATE TABLE mio.consumer_id_epoch (
    one boolean DEFAULT true NOT NULL,
    started_at timestamptz NOT NULL,
    CONSTRAINT consumer_id_epoch_one_check CHECK (one),
    CONSTRAINT consumer_id_epoch_pkey PRIMARY KEY (one)
);
INSERT INTO mio.consumer_id_epoch (started_at) VALUES (pg_postmaster_start_time());

-- The key of the tag in every delivery id (one random key per database,
-- never returned by any API), so ids cannot be guessed from one another.
CREATE TABLE mio.delivery_id_key (
    singleton boolean DEFAULT true NOT NULL,
    key bytea NOT NULL,
    created_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT delivery_id_key_key_check CHECK ((length(key) = 32)),
    CONSTRAINT delivery_id_key_singleton_check CHECK (singleton),
    CONSTRAINT delivery_id_key_pkey PRIMARY KEY (singleton)
);
-- 32 bytes from two version 4 UUIDs (pg_strong_random): 244 random bits.
INSERT INTO mio.delivery_id_key (key)
VALUES (decode(substr(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 1, 64), 'hex'));
REVOKE DELETE, INSERT, UPDATE ON mio.delivery_id_key FROM mio_runtime;

-- ==========================================================================
-- NATS bridge
-- ==========================================================================

-- Per-tenant bridge settings. No row: the tenant is published (when
-- MIO_NATS_URL is set); publish = false opts it out.
CREATE TABLE mio.bridge_settings (
    tenant_id uuid NOT NULL,
    publish boolean DEFAULT true NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT bridge_settings_pkey PRIMARY KEY (tenant_id),
    CONSTRAINT bridge_settings_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES mio.tenants(id) ON DELETE CASCADE
);
ALTER TABLE mio.bridge_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.bridge_settings FORCE ROW LEVEL SECURITY;

-- Per tenant and stream, how far the bridge has published the log.
CREATE TABLE mio.bridge_cursors (
    tenant_id uuid NOT NULL,
    stream text NOT NULL,
    log_lo pg_snapshot DEFAULT '1:1:'::pg_snapshot NOT NULL,
    log_hi pg_snapshot,
    after_xid xid8 DEFAULT '0'::xid8 NOT NULL,
    after_seq bigint DEFAULT 0 NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    CONSTRAINT bridge_cursors_stream_check CHECK ((stream = ANY (ARRAY['inbound', 'inbound_enriched', 'outbound']))),
    CONSTRAINT bridge_cursors_pkey PRIMARY KEY (tenant_id, stream)
);
ALTER TABLE mio.bridge_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.bridge_cursors FORCE ROW LEVEL SECURITY;

-- ==========================================================================
-- Outbound: outbox, events, receipts, rate limits
-- Two forward-only state machines per message: handoff (queued, sending,
-- handed_off, dead, discarded…) and provider (unknown, sent, delivered…).
-- Their states are checked against mio.handoff_rank and mio.provider_rank in
-- 00002 (the checks call functions).
-- ==========================================================================

-- One outbound message, from the send command to its terminal states. seq
-- orders a conversation's lane; active is derived from handoff_state so the
-- due and lane indexes hold only live rows. Low fillfactor: rows are
-- updated in place (HOT) several times each.
CREATE TABLE mio.outbox (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    account_id uuid NOT NULL,
    channel_type text NOT NULL,
    conversation_id text NOT NULL,
    thread_id text DEFAULT '' NOT NULL,
    idempotency_key text NOT NULL,
    request_sha256 bytea NOT NULL,
    text text COMPRESSION lz4 DEFAULT '' NOT NULL,
    rich_content jsonb COMPRESSION lz4,
    attachments jsonb COMPRESSION lz4,
    edit_of uuid,
    handoff_state text DEFAULT 'queued' NOT NULL,
    active boolean GENERATED ALWAYS AS ((handoff_state = ANY (ARRAY['queued', 'sending']))) STORED,
    provider_state text DEFAULT 'unknown' NOT NULL,
    attempt_no integer DEFAULT 1 NOT NULL,
    series integer DEFAULT 1 NOT NULL,
    series_first_attempt integer DEFAULT 1 NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamptz DEFAULT now() NOT NULL,
    lease_until timestamptz,
    job_id bigint,
    provider_message_id text,
    receipts boolean DEFAULT false NOT NULL,
    last_error text,
    receipt_due_at timestamptz,
    created_at timestamptz DEFAULT now() NOT NULL,
    updated_at timestamptz DEFAULT now() NOT NULL,
    handed_off_at timestamptz,
    dead_at timestamptz,
    discarded_at timestamptz,
    CONSTRAINT outbox_attempt_no_check CHECK ((attempt_no >= 1)),
    CONSTRAINT outbox_conversation_id_check CHECK ((conversation_id <> '')),
    CONSTRAINT outbox_idempotency_key_check CHECK ((idempotency_key <> '')),
    CONSTRAINT outbox_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT outbox_tenant_id_idempotency_key_key UNIQUE (tenant_id, idempotency_key),
    CONSTRAINT outbox_tenant_id_account_id_fkey FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts(tenant_id, id),
    CONSTRAINT outbox_tenant_id_edit_of_fkey FOREIGN KEY (tenant_id, edit_of) REFERENCES mio.outbox(tenant_id, id)
)
WITH (fillfactor='45');
CREATE INDEX outbox_dead ON mio.outbox (tenant_id, dead_at) WHERE ((dead_at IS NOT NULL) AND (discarded_at IS NULL));
CREATE INDEX outbox_due ON mio.outbox (tenant_id, next_attempt_at) WHERE active;
CREATE INDEX outbox_lane ON mio.outbox (tenant_id, account_id, conversation_id, seq) WHERE active;
CREATE INDEX outbox_provider_message ON mio.outbox (tenant_id, account_id, provider_message_id) WHERE receipts;
CREATE INDEX outbox_receipt_due ON mio.outbox (tenant_id, receipt_due_at) WHERE (receipt_due_at IS NOT NULL);
ALTER TABLE mio.outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.outbox FORCE ROW LEVEL SECURITY;

-- Every transition of either state machine, and notable non-transitions
-- (rate limited, resumed after a crash), in order. Append-only: the runtime
-- role may only insert and read.
CREATE TABLE mio.outbox_events (
    tenant_id uuid NOT NULL,
    outbox_id uuid NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    event text NOT NULL,
    machine text NOT NULL,
    state text NOT NULL,
    attempt_no integer NOT NULL,
    detail jsonb COMPRESSION lz4,
    at timestamptz DEFAULT clock_timestamp() NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    CONSTRAINT outbox_events_machine_check CHECK ((machine = ANY (ARRAY['handoff', 'provider']))),
    CONSTRAINT outbox_events_pkey PRIMARY KEY (tenant_id, outbox_id, id)
);
CREATE INDEX outbox_events_stream ON mio.outbox_events (tenant_id, xid, id);
ALTER TABLE mio.outbox_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.outbox_events FORCE ROW LEVEL SECURITY;
REVOKE DELETE, UPDATE ON mio.outbox_events FROM mio_runtime;

-- Delivery receipts reported by platforms (WhatsApp statuses),
-- deduplicated on (provider message id, status); applied to the outbox by the
-- receipt worker.
CREATE TABLE mio.provider_events (
    tenant_id uuid NOT NULL,
    account_id uuid NOT NULL,
    provider_message_id text NOT NULL,
    status text NOT NULL,
    occurred_at timestamptz,
    recipient_id text DEFAULT '' NOT NULL,
    error text DEFAULT '' NOT NULL,
    raw jsonb COMPRESSION lz4,
    received_at timestamptz DEFAULT now() NOT NULL,
    applied_at timestamptz,
    CONSTRAINT provider_events_pkey PRIMARY KEY (tenant_id, account_id, provider_message_id, status)
);
CREATE INDEX provider_events_unapplied ON mio.provider_events (received_at) WHERE (applied_at IS NULL);
ALTER TABLE mio.provider_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.provider_events FORCE ROW LEVEL SECURITY;

-- Token buckets shared by every replica: tokens is the level at updated_at;
-- mio.rate_take refills it lazily.
CREATE TABLE mio.rate_buckets (
    tenant_id uuid NOT NULL,
    bucket_key text NOT NULL,
    tokens double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT rate_buckets_pkey PRIMARY KEY (tenant_id, bucket_key)
);
ALTER TABLE mio.rate_buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.rate_buckets FORCE ROW LEVEL SECURITY;

-- ==========================================================================
-- Workers
-- ==========================================================================

-- Heartbeats of worker processes of the release before River's rescuer took
-- over dead workers' jobs: unused by this release, kept so that those
-- workers' refreshes succeed while the pods roll (docs/operations.md).
CREATE TABLE mio.worker_heartbeats (
    client_id text NOT NULL,
    alive_since timestamptz DEFAULT now() NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT worker_heartbeats_pkey PRIMARY KEY (client_id)
);
