package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// ErrLeaseHeld means another process holds a poller's lease.
var ErrLeaseHeld = errors.New("db: lease held by another process")

// TelegramPoller names one polled account and the process polling it.
type TelegramPoller struct {
	TenantID, AccountID uuid.UUID
	// Holder identifies the polling process.
	Holder uuid.UUID
	// Lease is how long a grant or commit keeps the lease.
	Lease time.Duration
}

// TelegramPollerAcquire takes or renews the account's poller lease for
// p.Holder and returns the stored next getUpdates offset, or
// ErrLeaseHeld. Call it in a tenant transaction.
func TelegramPollerAcquire(ctx context.Context, tx DBTX, p TelegramPoller) (int64, error) {
	off, err := queries().TelegramPollerAcquire(ctx, tx, &dbsqlc.TelegramPollerAcquireParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: p.Holder, LeaseSeconds: p.Lease.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrLeaseHeld
	}
	return off, translate(err)
}

// TelegramPollerCommit stores next as the account's next offset and
// renews the lease, in the transaction that stores the batch; ErrLeaseHeld
// when p.Holder lost the lease (roll the transaction back).
func TelegramPollerCommit(ctx context.Context, tx DBTX, p TelegramPoller, next int64) error {
	n, err := queries().TelegramPollerCommit(ctx, tx, &dbsqlc.TelegramPollerCommitParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: p.Holder, NextOffset: next, LeaseSeconds: p.Lease.Seconds()})
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return ErrLeaseHeld
	}
	return nil
}

// TelegramPollerRelease gives p.Holder's lease up.
func TelegramPollerRelease(ctx context.Context, tx DBTX, p TelegramPoller) error {
	return translate(queries().TelegramPollerRelease(ctx, tx, &dbsqlc.TelegramPollerReleaseParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: p.Holder}))
}
