-- name: InboxInsertBatch :many
-- Inserts dedup keys and inbox rows for one tenant in one statement: a row
-- whose (account, source id) already exists is skipped (a redelivery) and
-- only the ids actually inserted are returned. A new message with a
-- platform message id is recorded in inbound_refs, which is also the
-- message-level dedup: a message whose (account, conversation, platform
-- id) is already recorded is skipped too (the same Slack message from a
-- webhook, event id key, and from history, "<channel>:<ts>" key, is
-- stored once), its source key being kept. An edit naming one
-- (edit_of_platform_id) gets the stored original's id and
-- source_message_id merged into its envelope's edit_of, whether the
-- original was stored before or by this same statement (an edit in the
-- original's ingest batch; inbound_refs does not show that one yet).
WITH input AS (
    SELECT unnest((SELECT @ids::uuid[])) AS id,
           unnest((SELECT @account_ids::uuid[])) AS account_id,
           unnest((SELECT @channel_types::text[])) AS channel_type,
           unnest((SELECT @source_message_ids::text[])) AS source_message_id,
           unnest((SELECT @conversation_ids::text[])) AS conversation_id,
           unnest((SELECT @states::text[])) AS state,
           unnest((SELECT @envelopes::text[])) AS envelope,
           unnest((SELECT @raws::bytea[])) AS raw,
           unnest((SELECT @received_ats::timestamptz[])) AS received_at,
           unnest((SELECT @platform_message_ids::text[])) AS platform_message_id,
           unnest((SELECT @edit_of_platform_ids::text[])) AS edit_of_platform_id,
           generate_series(1, cardinality((SELECT @ids::uuid[]))) AS ord
),
dedup AS (
    INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id)
    SELECT @tenant_id::uuid, account_id, source_message_id, id FROM input
    ON CONFLICT DO NOTHING
    RETURNING message_id
),
refs AS (
    INSERT INTO mio.inbound_refs (tenant_id, account_id, conversation_id, platform_message_id, message_id, source_message_id)
    SELECT @tenant_id::uuid, input.account_id, input.conversation_id, input.platform_message_id, input.id, input.source_message_id
    FROM input
    JOIN dedup ON dedup.message_id = input.id
    WHERE input.platform_message_id <> ''
    ON CONFLICT DO NOTHING
    RETURNING message_id
)
INSERT INTO mio.inbox (
    tenant_id, id, account_id, channel_type, source_message_id, conversation_id, state,
    envelope, raw, received_at, ready_xid, ready_seq, ready_at
)
SELECT @tenant_id::uuid, input.id, input.account_id, input.channel_type, input.source_message_id,
       input.conversation_id, input.state,
       CASE WHEN coalesce(orig.message_id, batch_orig.id) IS NULL THEN input.envelope::jsonb
            ELSE jsonb_set(input.envelope::jsonb, '{edit_of}',
                 coalesce(input.envelope::jsonb -> 'edit_of', '{}'::jsonb)
                 || jsonb_build_object('id', coalesce(orig.message_id, batch_orig.id),
                                       'source_message_id', coalesce(orig.source_message_id, batch_orig.source_message_id)))
       END,
       input.raw, input.received_at,
       CASE WHEN input.state = 'ready' THEN pg_current_xact_id() END,
       CASE WHEN input.state = 'ready' THEN nextval('mio.inbox_ready_seq') END,
       CASE WHEN input.state = 'ready' THEN input.received_at END
FROM input
JOIN dedup ON dedup.message_id = input.id
LEFT JOIN refs AS ref ON ref.message_id = input.id
LEFT JOIN LATERAL (
    -- A probe of the primary key per edit, in generic plans too (a plain
    -- join was planned generically as a scan of inbound_refs).
    SELECT o.message_id, o.source_message_id FROM mio.inbound_refs AS o
    WHERE input.edit_of_platform_id <> '' AND o.tenant_id = (SELECT @tenant_id::uuid) AND o.account_id = input.account_id
      AND o.conversation_id = input.conversation_id AND o.platform_message_id = input.edit_of_platform_id
    LIMIT 1
) AS orig ON true
LEFT JOIN LATERAL (
    SELECT b.id, b.source_message_id FROM input AS b JOIN refs ON refs.message_id = b.id
    WHERE input.edit_of_platform_id <> '' AND b.id <> input.id AND b.account_id = input.account_id
      AND b.conversation_id = input.conversation_id AND b.platform_message_id = input.edit_of_platform_id
    ORDER BY b.ord LIMIT 1
) AS batch_orig ON true
WHERE input.platform_message_id = '' OR ref.message_id IS NOT NULL
-- Rows go in in request order (their seq, ready_seq: the stream order),
-- whatever order the joins produce.
ORDER BY input.ord
RETURNING id;

-- name: InboxInsertBatchPlain :many
-- InboxInsertBatch for a batch in which no message is an edit naming its
-- original: the same dedup keys, inbound_refs rows and inbox rows, without
-- the edit look-ups (two lateral joins, a sort), whose plan nodes cost
-- their set-up on every execution even when no row uses them.
-- db.inboxInsert picks it; TestInboxInsertStatementsAgree holds the two
-- to the same results.
WITH input AS (
    SELECT unnest((SELECT @ids::uuid[])) AS id,
           unnest((SELECT @account_ids::uuid[])) AS account_id,
           unnest((SELECT @channel_types::text[])) AS channel_type,
           unnest((SELECT @source_message_ids::text[])) AS source_message_id,
           unnest((SELECT @conversation_ids::text[])) AS conversation_id,
           unnest((SELECT @states::text[])) AS state,
           unnest((SELECT @envelopes::text[])) AS envelope,
           unnest((SELECT @raws::bytea[])) AS raw,
           unnest((SELECT @received_ats::timestamptz[])) AS received_at,
           unnest((SELECT @platform_message_ids::text[])) AS platform_message_id,
           generate_series(1, cardinality((SELECT @ids::uuid[]))) AS ord
),
dedup AS (
    INSERT INTO mio.inbound_dedup (tenant_id, account_id, source_message_id, message_id)
    SELECT @tenant_id::uuid, account_id, source_message_id, id FROM input
    ON CONFLICT DO NOTHING
    RETURNING message_id
),
refs AS (
    INSERT INTO mio.inbound_refs (tenant_id, account_id, conversation_id, platform_message_id, message_id, source_message_id)
    SELECT @tenant_id::uuid, input.account_id, input.conversation_id, input.platform_message_id, input.id, input.source_message_id
    FROM input
    JOIN dedup ON dedup.message_id = input.id
    WHERE input.platform_message_id <> ''
    ON CONFLICT DO NOTHING
    RETURNING message_id
)
INSERT INTO mio.inbox (
    tenant_id, id, account_id, channel_type, source_message_id, conversation_id, state,
    envelope, raw, received_at, ready_xid, ready_seq, ready_at
)
SELECT @tenant_id::uuid, input.id, input.account_id, input.channel_type, input.source_message_id,
       input.conversation_id, input.state, input.envelope::jsonb, input.raw, input.received_at,
       CASE WHEN input.state = 'ready' THEN pg_current_xact_id() END,
       CASE WHEN input.state = 'ready' THEN nextval('mio.inbox_ready_seq') END,
       CASE WHEN input.state = 'ready' THEN input.received_at END
FROM input
JOIN dedup ON dedup.message_id = input.id
LEFT JOIN refs AS ref ON ref.message_id = input.id
WHERE input.platform_message_id = '' OR ref.message_id IS NOT NULL
ORDER BY input.ord
RETURNING id;

-- name: InboxGet :one
SELECT * FROM mio.inbox WHERE tenant_id = @tenant_id AND id = @id;

-- name: ProviderEventInsertBatch :execrows
INSERT INTO mio.provider_events (tenant_id, account_id, provider_message_id, status, occurred_at, recipient_id, error, raw)
SELECT @tenant_id::uuid, t.account_id, t.provider_message_id, t.status, t.occurred_at, t.recipient_id, t.error, t.raw::jsonb
FROM (
    SELECT unnest(@account_ids::uuid[]) AS account_id,
           unnest(@provider_message_ids::text[]) AS provider_message_id,
           unnest(@statuses::text[]) AS status,
           unnest(@occurred_ats::timestamptz[]) AS occurred_at,
           unnest(@recipient_ids::text[]) AS recipient_id,
           unnest(@errors::text[]) AS error,
           unnest(@raws::text[]) AS raw
) AS t
ON CONFLICT DO NOTHING;

-- name: InboundDedupPrune :execrows
-- Deletes at most @max_rows dedup keys older than @before (bounded so a
-- prune never holds long locks).
DELETE FROM mio.inbound_dedup
WHERE ctid = ANY (ARRAY(
    SELECT d.ctid FROM mio.inbound_dedup AS d WHERE d.tenant_id = @tenant_id::uuid AND d.created_at < @before::timestamptz ORDER BY d.created_at LIMIT @max_rows::int
));

-- name: InboundRefPrune :execrows
-- Deletes at most @max_rows edit references older than @before.
DELETE FROM mio.inbound_refs
WHERE ctid = ANY (ARRAY(
    SELECT r.ctid FROM mio.inbound_refs AS r WHERE r.tenant_id = @tenant_id::uuid AND r.created_at < @before::timestamptz ORDER BY r.created_at LIMIT @max_rows::int
));

-- name: InboxConversationPage :many
-- One conversation's inbound messages received before (before_at,
-- before_id), newest first (index inbox_conversation); no raw payloads.
SELECT id, account_id, envelope, received_at FROM mio.inbox
WHERE tenant_id = @tenant_id AND account_id = @account_id AND conversation_id = @conversation_id
  AND (received_at, id) < (@before_at::timestamptz, @before_id::uuid)
ORDER BY received_at DESC, id DESC
LIMIT @row_limit;
