-- Durable consumers of the inbox: configuration and cursor per consumer,
-- and the per-consumer deliveries (leases, redeliveries, dead letters).

-- +goose Up
SET lock_timeout = '10s';

-- A consumer reads one stage of its tenant's inbox stream in (xid, seq)
-- order. (cursor_xid, cursor_seq) is the stream position up to which every
-- row has been taken into consumer_deliveries (or filtered out); it only
-- ever moves over rows whose transactions are below the snapshot horizon
-- pg_snapshot_xmin(pg_current_snapshot()), so a row committing late is
-- never skipped.
CREATE TABLE mio.consumers (
    tenant_id               uuid        NOT NULL REFERENCES mio.tenants (id),
    name                    text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    filter_channel_types    text[]      NOT NULL DEFAULT '{}',
    filter_account_ids      uuid[]      NOT NULL DEFAULT '{}',
    filter_conversation_ids text[]      NOT NULL DEFAULT '{}',
    deliver_policy          text        NOT NULL CHECK (deliver_policy IN ('all', 'new', 'by_start_time')),
    start_time              timestamptz,
    ack_wait_ms             bigint      NOT NULL CHECK (ack_wait_ms BETWEEN 1000 AND 43200000),
    max_deliver             integer     NOT NULL CHECK (max_deliver BETWEEN 1 AND 1000),
    max_ack_pending         integer     NOT NULL CHECK (max_ack_pending BETWEEN 1 AND 100000),
    ordering                text        NOT NULL CHECK (ordering IN ('none', 'conversation')),
    stage                   text        NOT NULL CHECK (stage IN ('ready', 'received')),
    cursor_xid              xid8        NOT NULL,
    cursor_seq              bigint      NOT NULL,
    last_delivered_at       timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name),
    CHECK ((deliver_policy = 'by_start_time') = (start_time IS NOT NULL))
);

-- One row per message a consumer has taken from the stream and not yet
-- acknowledged: pending (waiting, possibly after a nak delay), leased (to
-- one puller until lease_expires_at, under delivery_id), or dead
-- (exhausted max_deliver, or terminated). An ack deletes the row.
CREATE TABLE mio.consumer_deliveries (
    tenant_id        uuid        NOT NULL,
    consumer_name    text        NOT NULL,
    message_id       uuid        NOT NULL,
    xid              xid8        NOT NULL,
    seq              bigint      NOT NULL,
    message_seq      bigint      NOT NULL,
    conversation_key text        NOT NULL,
    state            text        NOT NULL CHECK (state IN ('pending', 'leased', 'dead')),
    delivery_id      uuid,
    delivery_count   integer     NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz,
    last_error       text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, consumer_name, message_id),
    FOREIGN KEY (tenant_id, consumer_name) REFERENCES mio.consumers (tenant_id, name) ON DELETE CASCADE,
    CHECK ((state = 'leased') = (delivery_id IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX consumer_deliveries_delivery ON mio.consumer_deliveries (tenant_id, delivery_id) WHERE delivery_id IS NOT NULL;
-- What is due: nak'd rows by available_at, leases by expiry. Pulls find
-- due rows by range scans here instead of walking every outstanding row.
CREATE INDEX consumer_deliveries_pending_due ON mio.consumer_deliveries (tenant_id, consumer_name, available_at) WHERE state = 'pending';
CREATE INDEX consumer_deliveries_lease_due ON mio.consumer_deliveries (tenant_id, consumer_name, lease_expires_at) WHERE state = 'leased';
-- Dead letters are requeued or discarded by message id (mio.requeue).
CREATE INDEX consumer_deliveries_dead ON mio.consumer_deliveries (tenant_id, message_id) WHERE state = 'dead';
CREATE INDEX consumer_deliveries_conversation ON mio.consumer_deliveries (tenant_id, consumer_name, conversation_key, xid, seq) WHERE state <> 'dead';

-- Every ack deletes a row: vacuum this queue-like table eagerly so dead
-- tuples do not slow the claim scans.
ALTER TABLE mio.consumer_deliveries SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02);

ALTER TABLE mio.consumers ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumers FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.consumers
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

ALTER TABLE mio.consumer_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.consumer_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.consumer_deliveries
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.consumer_deliveries;
DROP TABLE IF EXISTS mio.consumers;
