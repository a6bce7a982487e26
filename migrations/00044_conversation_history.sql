-- A conversation's messages in time order, both directions: GET
-- /v1/conversations/{account_id}/{conversation_id}/messages (and the MCP
-- tool conversation_history) reads one page of each table, newest first,
-- by these indexes instead of scanning the tenant's messages.
--
-- No column of either index is ever updated, so outbox state changes stay
-- HOT updates.

-- +goose Up
SET lock_timeout = '10s';

CREATE INDEX inbox_conversation ON mio.inbox (tenant_id, account_id, conversation_id, received_at, id);
CREATE INDEX outbox_conversation ON mio.outbox (tenant_id, account_id, conversation_id, created_at, id);

-- +goose Down
SET lock_timeout = '10s';

DROP INDEX mio.outbox_conversation;
DROP INDEX mio.inbox_conversation;
