package channels

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/miohq/mio/envelope"
)

// Source is a channel with a long-running inbound source: connections or
// polls MIO holds itself instead of receiving webhooks (the Discord
// Gateway, Telegram long polling). RunSource runs until ctx ends, in
// every process with the worker role; it serves each account from one
// process at a time, under a lease taken through deps.Store, and returns
// once its sessions stopped and gave their leases up. The source
// capability is derived from this interface.
type Source interface {
	RunSource(ctx context.Context, deps SourceDeps) error
}

// SourceDeps is what MIO gives a running source. Adapters never import
// the database: what they store goes through Store.
type SourceDeps struct {
	// Holder names this process in the leases the source takes.
	Holder uuid.UUID
	// Store reads the channel's accounts and commits the source's
	// messages and state.
	Store SourceStore
	// CatchUp asks for an at-once history read of one account, after a
	// session whose missed events are not replayed; nil: none.
	CatchUp func(tenantID, accountID uuid.UUID)
	// Metrics registers the source's own metric families; nil: not
	// registered.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// ErrLeaseHeld means another process holds an account's source lease (a
// take refused, or a fenced write after the lease was lost).
var ErrLeaseHeld = errors.New("channels: source lease held by another process")

// SourceStore is a source's storage, bound to its channel.
type SourceStore interface {
	// Tenants lists the tenants.
	Tenants(ctx context.Context) ([]uuid.UUID, error)
	// Tx runs fn in one transaction of tenantID.
	Tx(ctx context.Context, tenantID uuid.UUID, fn func(tx SourceTx) error) error
	// Ingest stores parsed's messages (each keeping its Raw) as the
	// account's through the webhook path's dedup, and runs fn in the same
	// transaction: an error from fn rolls the messages back. The new and
	// duplicate messages are counted in the inbound metrics.
	Ingest(ctx context.Context, tenantID, accountID uuid.UUID, parsed *Parsed, fn func(tx SourceTx) error) error
	// Secrets returns the account with its credentials opened.
	Secrets(ctx context.Context, tenantID, accountID uuid.UUID) (Account, error)
	// Disable turns an account off after a failure reconnecting cannot
	// fix, recording reason with its session.
	Disable(ctx context.Context, tenantID, accountID uuid.UUID, reason string) error
}

// SourceAccount is one of a tenant's accounts as a source scan sees it.
type SourceAccount struct {
	TenantID, ID uuid.UUID
	Active       bool
	Settings     json.RawMessage
}

// Lease names an account's source lease and its (would-be) holder.
type Lease struct {
	TenantID, AccountID, Holder uuid.UUID
	// TTL is how long a take, renewal or commit keeps the lease.
	TTL time.Duration
}

// SourceTx is one transaction of a tenant (SourceStore.Tx, Ingest).
type SourceTx interface {
	// Accounts lists the tenant's accounts of the source's channel.
	Accounts(ctx context.Context) ([]SourceAccount, error)
	SessionLeases
	OffsetLeases
	Cursors
}

// SessionState is where a session resumes (zero: a new session).
type SessionState struct {
	SessionID, ResumeURL string
	Seq                  int64
}

// IdentifySlot is a reserved session start: the wait before it, the
// starts counted in the current 24 h window and what is left of it.
type IdentifySlot struct {
	Wait       time.Duration
	Identifies int
	WindowLeft time.Duration
}

// SessionLeases are leases renewed on a clock, with a resume point and
// session starts spaced across processes (the Discord Gateway).
type SessionLeases interface {
	// SessionAcquire takes the lease when it is free, expired or already
	// the holder's, and returns the stored resume point; ErrLeaseHeld
	// otherwise.
	SessionAcquire(ctx context.Context, l Lease) (SessionState, error)
	// SessionsHeldElsewhere lists the tenant's accounts whose unexpired
	// lease another holder has.
	SessionsHeldElsewhere(ctx context.Context, holder uuid.UUID) ([]uuid.UUID, error)
	// SessionRenew extends the lease; ErrLeaseHeld when it was lost.
	SessionRenew(ctx context.Context, l Lease) error
	// SessionRelease gives the lease up (the resume point stays).
	SessionRelease(ctx context.Context, l Lease) error
	// SessionSave stores the resume point while the lease is the
	// holder's and unexpired; ErrLeaseHeld otherwise.
	SessionSave(ctx context.Context, l Lease, s SessionState) error
	// IdentifyTake reserves the next session start, interval after the
	// previous one.
	IdentifyTake(ctx context.Context, l Lease, interval time.Duration) (IdentifySlot, error)
}

// OffsetLeases are leases renewed by each commit, with the offset the
// next fetch starts from (Telegram getUpdates).
type OffsetLeases interface {
	// OffsetAcquire takes or renews the lease and returns the stored
	// offset; ErrLeaseHeld when another holder has it.
	OffsetAcquire(ctx context.Context, l Lease) (int64, error)
	// OffsetCommit stores next and renews the lease; ErrLeaseHeld when
	// it was lost (roll the transaction back).
	OffsetCommit(ctx context.Context, l Lease, next int64) error
	// OffsetRelease gives the lease up.
	OffsetRelease(ctx context.Context, l Lease) error
}

// Cursors are the catch-up reconciler's per-conversation positions
// (mio.source_cursors), moved by a live source in its own commits.
type Cursors interface {
	// CursorAdvance records sourceID as the conversation's newest
	// message stored live.
	CursorAdvance(ctx context.Context, accountID uuid.UUID, conv envelope.Conversation, sourceID string) error
	// CursorGapOpen opens a catch-up gap at every conversation's cursor
	// of the account: a new session starts, and what was posted since
	// the last stored message is not delivered.
	CursorGapOpen(ctx context.Context, accountID uuid.UUID) error
	// CursorGapBound ends the account's open gaps without an end at the
	// platform id before.
	CursorGapBound(ctx context.Context, accountID uuid.UUID, before string) error
}
