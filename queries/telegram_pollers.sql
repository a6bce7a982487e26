-- name: TelegramPollerAcquire :one
-- Takes or renews the lease of an account's poller for @holder: granted
-- when the row is new, already @holder's, or its lease has run out.
-- Returns the stored next offset; no row means another holder has it.
INSERT INTO mio.telegram_pollers AS p (tenant_id, account_id, holder, lease_until)
VALUES (@tenant_id::uuid, @account_id::uuid, @holder::uuid, now() + make_interval(secs => @lease_seconds::float8))
ON CONFLICT (tenant_id, account_id) DO UPDATE
    SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until, updated_at = now()
    WHERE p.holder = EXCLUDED.holder OR p.holder IS NULL OR p.lease_until < now()
RETURNING p.next_offset;

-- name: TelegramPollerCommit :execrows
-- Stores the next offset (never backwards) and renews the lease, only
-- while @holder still holds it: 0 rows means the lease was lost and the
-- caller's transaction must roll back.
UPDATE mio.telegram_pollers
SET next_offset = greatest(next_offset, @next_offset::bigint),
    lease_until = now() + make_interval(secs => @lease_seconds::float8), updated_at = now()
WHERE tenant_id = @tenant_id::uuid AND account_id = @account_id::uuid AND holder = @holder::uuid;

-- name: TelegramPollerRelease :exec
-- Gives the lease up (a clean stop), so another process takes over at once.
UPDATE mio.telegram_pollers SET holder = NULL, lease_until = '-infinity', updated_at = now()
WHERE tenant_id = @tenant_id::uuid AND account_id = @account_id::uuid AND holder = @holder::uuid;
