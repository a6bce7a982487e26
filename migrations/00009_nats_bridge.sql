-- The NATS bridge (DESIGN §9, docs/nats.md): a durable reader of MIO's
-- log that publishes to JetStream. Its positions are log windows like the
-- consumers' and the archive's (docs/architecture.md, "Reading the log"),
-- one per tenant and event stream, advanced only after JetStream
-- acknowledged every event read before them.

-- +goose Up
SET lock_timeout = '10s';

-- stream: inbound (received stage), inbound_enriched (ready stage),
-- outbound (mio.outbox_events).
CREATE TABLE mio.bridge_cursors (
    tenant_id  uuid        NOT NULL,
    stream     text        NOT NULL CHECK (stream IN ('inbound', 'inbound_enriched', 'outbound')),
    log_lo     pg_snapshot NOT NULL DEFAULT '1:1:',
    log_hi     pg_snapshot,
    after_xid  xid8        NOT NULL DEFAULT '0',
    after_seq  bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, stream)
);
ALTER TABLE mio.bridge_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.bridge_cursors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.bridge_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- Per-tenant bridge settings. No row: the tenant is published (every
-- tenant is when MIO_NATS_URL is set); publish = false opts it out.
CREATE TABLE mio.bridge_settings (
    tenant_id  uuid        PRIMARY KEY REFERENCES mio.tenants (id) ON DELETE CASCADE,
    publish    boolean     NOT NULL DEFAULT true,
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE mio.bridge_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.bridge_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.bridge_settings
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- Outbound events become a log like the inbox: xid is the inserting
-- transaction (the identity id is the seq). Existing rows get the
-- migration's xid, so a bridge starting from scratch publishes them once.
ALTER TABLE mio.outbox_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX outbox_events_stream ON mio.outbox_events (tenant_id, xid, id);

-- As mio.log_received, for mio.outbox_events in (xid, id) order.
-- +goose StatementBegin
CREATE FUNCTION mio.log_outbox_events(
    p_tenant uuid, p_lo pg_snapshot, p_hi pg_snapshot, p_after_xid xid8, p_after_seq bigint, p_max integer)
RETURNS SETOF mio.outbox_events
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
SELECT w.* FROM (
    (SELECT e.* FROM unnest(mio.log_ended(p_lo, p_hi)) AS x (xid)
     CROSS JOIN LATERAL (
         SELECT o.* FROM mio.outbox_events AS o
         WHERE o.tenant_id = p_tenant
           AND o.xid = x.xid
           AND (o.xid, o.id) > (p_after_xid, p_after_seq)
         ORDER BY o.id
         LIMIT p_max
     ) AS e
     ORDER BY e.xid, e.id
     LIMIT p_max)
    UNION ALL
    (SELECT o.* FROM mio.outbox_events AS o
     WHERE o.tenant_id = p_tenant
       AND (o.xid, o.id) > (CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_xid ELSE pg_snapshot_xmax(p_lo) END,
                            CASE WHEN p_after_xid >= pg_snapshot_xmax(p_lo) THEN p_after_seq ELSE 0 END)
       AND o.xid < pg_snapshot_xmax(p_hi)
       AND pg_visible_in_snapshot(o.xid, p_hi)
     ORDER BY o.xid, o.id
     LIMIT p_max)
) AS w
ORDER BY w.xid, w.id
LIMIT p_max
$$;
-- +goose StatementEnd

-- +goose Down
SET lock_timeout = '10s';
DROP FUNCTION IF EXISTS mio.log_outbox_events;
DROP INDEX IF EXISTS mio.outbox_events_stream;
ALTER TABLE mio.outbox_events DROP COLUMN IF EXISTS xid;
DROP TABLE IF EXISTS mio.bridge_settings;
DROP TABLE IF EXISTS mio.bridge_cursors;
