-- name: AccessTokenGet :one
SELECT credentials_enc, token_enc, expires_at, renew_at, refresh_enc FROM mio.account_access_tokens
WHERE tenant_id = @tenant_id AND account_id = @account_id;

-- name: AccessTokenLock :exec
-- Waits for the account's renewal lock, held until the transaction ends:
-- one renewal at a time per account across processes.
SELECT pg_advisory_xact_lock(hashtextextended(@lock_key::text, 0));

-- name: AccessTokenTryLock :one
-- The account's renewal lock when it is free; false while another
-- transaction holds it.
SELECT pg_try_advisory_xact_lock(hashtextextended(@lock_key::text, 0));

-- name: AccessTokenPut :execrows
-- Stores the account's new token, only while it still has the credentials
-- the token was obtained with and is active (or the token comes with a
-- rotated refresh token, which must not be lost): 0 rows otherwise.
INSERT INTO mio.account_access_tokens AS t (tenant_id, account_id, credentials_enc, token_enc, expires_at, renew_at, refresh_enc)
SELECT a.tenant_id, a.id, a.credentials_enc, @token_enc, @expires_at, @renew_at, sqlc.narg(refresh_enc)::bytea
FROM mio.accounts AS a
WHERE a.tenant_id = @tenant_id AND a.id = @account_id AND a.credentials_enc = @credentials_enc
    AND (a.status = 'active' OR sqlc.narg(refresh_enc)::bytea IS NOT NULL)
ON CONFLICT (tenant_id, account_id) DO UPDATE
    SET credentials_enc = excluded.credentials_enc, token_enc = excluded.token_enc,
        expires_at = excluded.expires_at, renew_at = excluded.renew_at, refresh_enc = excluded.refresh_enc,
        updated_at = now();

-- name: AccessTokenDelete :exec
DELETE FROM mio.account_access_tokens WHERE tenant_id = @tenant_id AND account_id = @account_id;

-- name: AccessTokenExpiry :one
-- When the account's stored token expires (account show); no row: none.
SELECT expires_at FROM mio.account_access_tokens WHERE tenant_id = @tenant_id AND account_id = @account_id;
