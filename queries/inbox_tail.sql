-- name: InboxTail :many
-- Messages with a (time-ordered, UUIDv7) id above @after_id, oldest
-- first: the admin live tail. Walks the primary key.
SELECT id, account_id, channel_type, conversation_id, state, received_at, envelope
FROM mio.inbox
WHERE tenant_id = @tenant_id AND id > @after_id
ORDER BY id
LIMIT @max_rows;
