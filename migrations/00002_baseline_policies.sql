-- The baseline's objects that name functions, created once the function
-- files exist (migrations/README.md): the outbox's state checks, the
-- tenant_isolation policies, the triggers, and the inbox's first
-- partitions. Part of the baseline: a database created before it has this
-- version recorded and never runs it.

-- +goose Up
SET lock_timeout = '10s';

-- The outbox's states are those the rank functions order.
ALTER TABLE mio.outbox ADD CONSTRAINT outbox_handoff_state_check CHECK ((mio.handoff_rank(handoff_state) IS NOT NULL));
ALTER TABLE mio.outbox ADD CONSTRAINT outbox_provider_state_check CHECK ((mio.provider_rank(provider_state) IS NOT NULL));

-- Row-level security: a tenant-scoped table's rows are those of the
-- transaction's tenant (mio.current_tenant_id(); none when it is unset).
-- Partitions carry the policy too: they are reachable by name.
CREATE POLICY tenant_isolation ON mio.account_access_tokens
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.accounts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.api_tokens
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.archive_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.archive_parts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.attachments
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.bridge_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.bridge_settings
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_deliveries
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_leases
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_leases_0
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_leases_1
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_leases_2
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_positions
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_positions_0
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_positions_1
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_positions_2
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_settles
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_settles_0
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_settles_1
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumer_settles_2
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.consumers
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.gateway_sessions
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.inbound_dedup
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.inbound_refs
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.inbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.outbox
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.outbox_events
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.provider_events
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.rate_buckets
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.source_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.stream_counts
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
CREATE POLICY tenant_isolation ON mio.telegram_pollers
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());

-- mio.account_routes follows mio.accounts.
CREATE TRIGGER accounts_route AFTER INSERT OR DELETE OR UPDATE ON mio.accounts FOR EACH ROW EXECUTE FUNCTION mio.accounts_route();

-- Exact backlog: the rows each statement appends to the inbox's streams.
CREATE TRIGGER inbox_stream_counts_insert AFTER INSERT ON mio.inbox REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_inserted();
CREATE TRIGGER inbox_stream_counts_update AFTER UPDATE ON mio.inbox REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mio.stream_counts_made_ready();

-- The inbox's default partition is secured like every day partition; the
-- day partitions of this week are created now, later ones by the
-- partition maintenance job.
SELECT mio.inbox_partition_secure('inbox_default');
SELECT mio.inbox_partitions_ensure(current_date, current_date + 7);
