-- name: ProviderEventPending :many
-- The tenant's receipts not yet applied, oldest first, each with the
-- outbox row it reports on (none when no sent message has that provider
-- id: the receipt came too early, or for a message MIO did not send).
SELECT pe.account_id, pe.provider_message_id, pe.status, pe.occurred_at, pe.recipient_id, pe.error,
       pe.received_at, coalesce(m.id, '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS outbox_id,
       coalesce(m.channel_type, '')::text AS channel_type
FROM mio.provider_events AS pe
LEFT JOIN LATERAL (
    SELECT o.id, o.channel_type FROM mio.outbox AS o
    WHERE o.tenant_id = pe.tenant_id AND o.account_id = pe.account_id
      AND o.provider_message_id = pe.provider_message_id AND o.receipts
    ORDER BY (o.edit_of IS NULL) DESC, o.seq
    LIMIT 1
) AS m ON true
WHERE pe.tenant_id = @tenant_id AND pe.applied_at IS NULL
ORDER BY pe.received_at
LIMIT @max_rows
FOR NO KEY UPDATE OF pe SKIP LOCKED;

-- name: ProviderEventMarkApplied :exec
UPDATE mio.provider_events AS pe SET applied_at = now()
FROM (
    SELECT unnest(@account_ids::uuid[]) AS account_id,
           unnest(@provider_message_ids::text[]) AS provider_message_id,
           unnest(@statuses::text[]) AS status
) AS input
WHERE pe.tenant_id = @tenant_id AND pe.account_id = input.account_id
  AND pe.provider_message_id = input.provider_message_id AND pe.status = input.status;

-- name: OutboxProviderAdvance :many
-- Applies provider states to outbox rows, each only forward by rank:
-- the row takes the highest state given, and every given state above the
-- row's previous one is appended to its events in rank order.
WITH input AS (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@states::text[]) AS state,
           unnest(@details::text[]) AS detail
),
best AS (
    SELECT DISTINCT ON (input.id) input.id, input.state
    FROM input
    ORDER BY input.id, mio.provider_rank(input.state) DESC
),
upd AS (
    UPDATE mio.outbox AS o
    SET provider_state = best.state,
        receipt_due_at = CASE WHEN mio.provider_rank(best.state) >= 50 THEN NULL ELSE o.receipt_due_at END,
        updated_at = now()
    FROM best, mio.outbox AS prev
    WHERE o.tenant_id = @tenant_id AND o.id = ANY (@ids::uuid[]) AND o.id = best.id
      AND prev.tenant_id = @tenant_id AND prev.id = ANY (@ids::uuid[]) AND prev.id = best.id
      AND mio.provider_rank(best.state) > mio.provider_rank(o.provider_state)
    RETURNING o.id, o.attempt_no, prev.provider_state AS prev_state, o.provider_state
),
ev AS (
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no, detail)
    SELECT @tenant_id::uuid, upd.id, 'receipt', 'provider', input.state, upd.attempt_no, nullif(input.detail, '')::jsonb
    FROM input JOIN upd ON upd.id = input.id
    WHERE mio.provider_rank(input.state) > mio.provider_rank(upd.prev_state)
    ORDER BY upd.id, mio.provider_rank(input.state)
)
SELECT upd.id, upd.provider_state FROM upd;

-- name: OutboxTimeOut :many
-- Moves sent messages still without a delivered receipt past their
-- receipt deadline to provider_state timed_out.
WITH due AS (
    SELECT o.id FROM mio.outbox AS o
    WHERE o.tenant_id = @tenant_id AND o.receipt_due_at IS NOT NULL AND o.receipt_due_at <= now()
    ORDER BY o.receipt_due_at
    LIMIT @max_rows
    FOR NO KEY UPDATE SKIP LOCKED
),
upd AS (
    UPDATE mio.outbox AS o
    SET provider_state = CASE WHEN mio.provider_rank(o.provider_state) < 90 THEN 'timed_out' ELSE o.provider_state END,
        receipt_due_at = NULL, updated_at = now()
    FROM due
    WHERE o.tenant_id = @tenant_id AND o.id = due.id
    RETURNING o.id, o.attempt_no, o.provider_state, o.channel_type
),
ev AS (
    INSERT INTO mio.outbox_events (tenant_id, outbox_id, event, machine, state, attempt_no)
    SELECT @tenant_id::uuid, upd.id, 'timed_out', 'provider', 'timed_out', upd.attempt_no
    FROM upd WHERE upd.provider_state = 'timed_out'
)
SELECT upd.id, upd.channel_type FROM upd WHERE upd.provider_state = 'timed_out';
