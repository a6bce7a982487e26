package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// AccessToken is an account's current platform access token, obtained
// from its credential grant, as stored: sealed (package accounts opens
// it), with the sealed credentials it was obtained with.
type AccessToken struct {
	CredentialsEnc []byte
	TokenEnc       []byte
	ExpiresAt      time.Time
	// RenewAt is when a process needing the token renews it.
	RenewAt time.Time
	// RefreshEnc is the grant's sealed refresh token as the platform last
	// rotated it; nil when the platform does not rotate it (the
	// credentials' refresh token stands).
	RefreshEnc []byte
}

// accessTokenLockKey names an account's renewal lock.
func accessTokenLockKey(accountID uuid.UUID) string {
	return "mio.access_token/" + accountID.String()
}

// AccessTokenGet returns the account's stored token, or ErrNotFound.
func AccessTokenGet(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID) (*AccessToken, error) {
	r, err := queries().AccessTokenGet(ctx, tx, &dbsqlc.AccessTokenGetParams{TenantID: tenantID, AccountID: accountID})
	if err != nil {
		return nil, translate(err)
	}
	return &AccessToken{CredentialsEnc: r.CredentialsEnc, TokenEnc: r.TokenEnc, ExpiresAt: r.ExpiresAt, RenewAt: r.RenewAt,
		RefreshEnc: r.RefreshEnc}, nil
}

// AccessTokenLock waits for the account's renewal lock, held until tx
// ends: one renewal at a time per account across processes.
func AccessTokenLock(ctx context.Context, tx DBTX, accountID uuid.UUID) error {
	return translate(queries().AccessTokenLock(ctx, tx, &dbsqlc.AccessTokenLockParams{LockKey: accessTokenLockKey(accountID)}))
}

// AccessTokenTryLock takes the account's renewal lock when no other
// transaction holds it and reports whether it did.
func AccessTokenTryLock(ctx context.Context, tx DBTX, accountID uuid.UUID) (bool, error) {
	ok, err := queries().AccessTokenTryLock(ctx, tx, &dbsqlc.AccessTokenTryLockParams{LockKey: accessTokenLockKey(accountID)})
	return ok, translate(err)
}

// AccessTokenPut stores the account's new token, only while the account's
// sealed credentials are still t.CredentialsEnc and it is active — or
// disabled, when the token comes with a rotated refresh token (the one
// before it is spent); it reports whether it stored it.
func AccessTokenPut(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, t *AccessToken) (bool, error) {
	n, err := queries().AccessTokenPut(ctx, tx, &dbsqlc.AccessTokenPutParams{TenantID: tenantID, AccountID: accountID,
		CredentialsEnc: t.CredentialsEnc, TokenEnc: t.TokenEnc, ExpiresAt: t.ExpiresAt, RenewAt: t.RenewAt,
		RefreshEnc: t.RefreshEnc})
	if err != nil {
		return false, translate(err)
	}
	return n > 0, nil
}

// AccessTokenDelete forgets the account's token.
func AccessTokenDelete(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID) error {
	return translate(queries().AccessTokenDelete(ctx, tx, &dbsqlc.AccessTokenDeleteParams{TenantID: tenantID, AccountID: accountID}))
}

// AccessTokenExpiry returns when the account's stored token expires; nil
// when it has none.
func AccessTokenExpiry(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID) (*time.Time, error) {
	at, err := queries().AccessTokenExpiry(ctx, tx, &dbsqlc.AccessTokenExpiryParams{TenantID: tenantID, AccountID: accountID})
	if err = translate(err); errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &at, nil
}
