-- A conversation's messages in time order, both directions: GET
-- /v1/conversations/{account_id}/{conversation_id}/messages (and the MCP
-- tool conversation_history) reads one page of each table, newest first,
-- by these indexes instead of scanning the tenant's messages.
--
-- They lead with account_id, not tenant_id (an account id belongs to one
-- tenant; tenant_id stays a condition of the queries and of row-level
-- security): an index led by tenant_id would tie with the unique
-- (tenant_id, idempotency_key) index for the outbox's per-key lookups on a
-- tenant's stale statistics, and PostgreSQL could take it and filter the
-- tenant's outbox (TestOutboxLookupsDescendPerKey). No column of either
-- index is ever updated, so outbox state changes stay HOT updates.

-- +goose Up
SET lock_timeout = '10s';

CREATE INDEX inbox_conversation ON mio.inbox (account_id, conversation_id, received_at, id);
CREATE INDEX outbox_conversation ON mio.outbox (account_id, conversation_id, created_at, id);

-- +goose Down
SET lock_timeout = '10s';

DROP INDEX mio.outbox_conversation;
DROP INDEX mio.inbox_conversation;
