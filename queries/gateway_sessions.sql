-- name: GatewayLeaseAcquire :one
-- Takes the account's lease when it is free, expired or already ours,
-- and the account active (a scan that listed it before a fatal close
-- disabled it does not connect again); a new attempt forgets why an
-- earlier connection stopped for good.
INSERT INTO mio.gateway_sessions AS g (tenant_id, account_id, holder, lease_until)
SELECT a.tenant_id, a.id, @holder, now() + make_interval(secs => @ttl_seconds::float8)
FROM mio.accounts AS a
WHERE a.tenant_id = @tenant_id AND a.id = @account_id AND a.status = 'active'
ON CONFLICT (tenant_id, account_id) DO UPDATE
    SET holder = excluded.holder, lease_until = excluded.lease_until, error = '', updated_at = now()
    WHERE g.holder IS NULL OR g.holder = excluded.holder OR g.lease_until < now()
RETURNING *;

-- name: GatewayLeaseRenew :execrows
UPDATE mio.gateway_sessions
SET lease_until = now() + make_interval(secs => @ttl_seconds::float8), updated_at = now()
WHERE tenant_id = @tenant_id AND account_id = @account_id AND holder = @holder AND lease_until >= now();

-- name: GatewayLeaseRelease :exec
UPDATE mio.gateway_sessions
SET holder = NULL, lease_until = 'epoch', updated_at = now()
WHERE tenant_id = @tenant_id AND account_id = @account_id AND holder = @holder;

-- name: GatewaySessionSave :execrows
-- Records the session's resume point; fenced on the holder and its lease.
UPDATE mio.gateway_sessions
SET session_id = @session_id, resume_url = @resume_url, seq = @seq, updated_at = now()
WHERE tenant_id = @tenant_id AND account_id = @account_id AND holder = @holder AND lease_until >= now();

-- name: GatewayIdentifyTake :one
-- Reserves the next IDENTIFY slot and counts it in the day's window;
-- returns the seconds to wait for the slot, the IDENTIFYs in the window
-- and the seconds left in it.
UPDATE mio.gateway_sessions
SET identify_window = CASE WHEN identify_window > now() - interval '1 day' THEN identify_window ELSE now() END,
    identifies = CASE WHEN identify_window > now() - interval '1 day' THEN identifies + 1 ELSE 1 END,
    identify_at = greatest(now(), identify_at) + make_interval(secs => @interval_seconds::float8),
    updated_at = now()
WHERE tenant_id = @tenant_id AND account_id = @account_id AND holder = @holder
RETURNING greatest(0, extract(epoch FROM identify_at - now()) - @interval_seconds::float8)::float8 AS wait_seconds,
    identifies,
    greatest(0, extract(epoch FROM identify_window + interval '1 day' - now()))::float8 AS window_left_seconds;

-- name: GatewayFail :exec
UPDATE mio.gateway_sessions
SET error = @error, session_id = '', resume_url = '', seq = 0, updated_at = now()
WHERE tenant_id = @tenant_id AND account_id = @account_id;

-- name: GatewayErrorGet :one
-- Why the account's connection stopped for good ('' when it did not).
SELECT error FROM mio.gateway_sessions WHERE tenant_id = @tenant_id AND account_id = @account_id;

-- name: SourceCursorAdvance :exec
-- Moves a conversation's cursor forward (ids compare by length, then
-- text: decimal snowflakes and Slack timestamps of one width).
INSERT INTO mio.source_cursors AS c (tenant_id, account_id, conversation_id, conversation_type, last_source_id, active_at)
VALUES (@tenant_id, @account_id, @conversation_id, @conversation_type, @last_source_id, now())
ON CONFLICT (tenant_id, account_id, conversation_id) DO UPDATE
    SET last_source_id = CASE
            WHEN (length(excluded.last_source_id), excluded.last_source_id) > (length(c.last_source_id), c.last_source_id)
            THEN excluded.last_source_id ELSE c.last_source_id END,
        active_at = greatest(c.active_at, excluded.active_at),
        conversation_type = CASE WHEN excluded.conversation_type = '' THEN c.conversation_type ELSE excluded.conversation_type END,
        -- An open gap (after a lost session) ends at the first message
        -- the live session stored, when that is below its bound.
        gap_before = CASE
            WHEN c.gap_after <> ''
                AND (length(excluded.last_source_id), excluded.last_source_id) > (length(c.gap_after), c.gap_after)
                AND (c.gap_before = '' OR (length(excluded.last_source_id), excluded.last_source_id) < (length(c.gap_before), c.gap_before))
            THEN excluded.last_source_id ELSE c.gap_before END;

-- name: SourceCursorMove :exec
-- Moves a cursor forward without marking the conversation active (the
-- reconciler's own progress).
UPDATE mio.source_cursors
SET last_source_id = @last_source_id
WHERE tenant_id = @tenant_id AND account_id = @account_id AND conversation_id = @conversation_id
  AND (length(@last_source_id::text), @last_source_id::text) > (length(last_source_id), last_source_id);

-- name: SourceCursorList :many
-- The account's conversations active since a time, most recent first.
SELECT conversation_id, conversation_type, last_source_id, active_at, gap_after, gap_before FROM mio.source_cursors
WHERE tenant_id = @tenant_id AND account_id = @account_id AND active_at >= @active_since
ORDER BY active_at DESC
LIMIT @max_rows;

-- name: GatewayLeasesHeldByOthers :many
-- The tenant's accounts whose lease another holder has (skipped by scans).
SELECT account_id FROM mio.gateway_sessions
WHERE tenant_id = @tenant_id AND holder IS NOT NULL AND holder <> @holder AND lease_until >= now();

-- name: SourceCursorSeed :exec
-- Cursors of the conversations that had a message stored since a time,
-- from the messages' platform ids (inbound_refs), for channels whose live
-- intake keeps no cursor (Slack webhooks): a new conversation starts
-- after the oldest message stored in the window; an existing cursor only
-- gets the newer activity (the reconciler alone moves it, as it reads
-- everything after it).
INSERT INTO mio.source_cursors AS c (tenant_id, account_id, conversation_id, last_source_id, active_at)
SELECT @tenant_id::uuid, @account_id::uuid, r.conversation_id,
       (array_agg(r.platform_message_id ORDER BY length(r.platform_message_id), r.platform_message_id COLLATE "C"))[1],
       max(r.created_at)
FROM mio.inbound_refs AS r
WHERE r.tenant_id = @tenant_id::uuid AND r.account_id = @account_id::uuid AND r.created_at >= @active_since::timestamptz
GROUP BY r.conversation_id
ON CONFLICT (tenant_id, account_id, conversation_id) DO UPDATE
    SET active_at = greatest(c.active_at, excluded.active_at);

-- name: SourceCursorWalk :exec
-- Records a history walk's progress (the reconciler's, with the page it
-- stored): the cursor and the gap still to read ('' = none).
UPDATE mio.source_cursors
SET last_source_id = @last_source_id, gap_after = @gap_after, gap_before = @gap_before
WHERE tenant_id = @tenant_id AND account_id = @account_id AND conversation_id = @conversation_id;

-- name: SourceCursorGapOpen :exec
-- Opens a gap on every cursor of the account at its last stored id when
-- a Gateway session is lost for good (before the next session stores a
-- message): an open gap keeps its older start and loses its end, which
-- the next session sets again.
UPDATE mio.source_cursors
SET gap_after = CASE WHEN gap_after = '' THEN last_source_id ELSE gap_after END, gap_before = ''
WHERE tenant_id = @tenant_id AND account_id = @account_id;

-- name: SourceCursorGapBound :exec
-- Ends the account's open gaps that have no end yet at gap_before (a
-- new session is established: what is posted after it arrives live).
UPDATE mio.source_cursors
SET gap_before = @gap_before
WHERE tenant_id = @tenant_id AND account_id = @account_id AND gap_after <> '' AND gap_before = '';

-- name: SourceCursorGapMove :exec
-- Records an ascending gap walk's progress: the gap now starts after
-- gap_after (forward only); close_gap closes it, unless its end changed
-- since the walk read it (seen_before: a new loss or a new bound).
UPDATE mio.source_cursors
SET gap_after = CASE
        WHEN @close_gap::boolean AND gap_before = @seen_before::text THEN ''
        WHEN (length(@gap_after::text), @gap_after::text) > (length(gap_after), gap_after) THEN @gap_after::text
        ELSE gap_after END,
    gap_before = CASE WHEN @close_gap::boolean AND gap_before = @seen_before::text THEN '' ELSE gap_before END
WHERE tenant_id = @tenant_id AND account_id = @account_id AND conversation_id = @conversation_id AND gap_after <> '';
