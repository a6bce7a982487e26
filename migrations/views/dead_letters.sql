-- Everything that stopped for good, for operators: outbound messages that
-- are dead (not discarded), consumers' dead deliveries, and attachments that
-- failed (informational: fix the cause, then ask the platform to resend).
-- mio.requeue(id) and mio.discard(id) act on its ids.
--
-- security_invoker: the caller's row-level security applies.

CREATE VIEW mio.dead_letters WITH (security_invoker = true) AS
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

GRANT SELECT, INSERT, UPDATE, DELETE ON mio.dead_letters TO mio_runtime;
