package workers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
)

// OpenSecretsFunc opens an account's sealed credentials into what adapters
// read (cmd passes ingest.OpenSecrets with the master key; workers cannot
// import ingest, which enqueues workers' jobs).
type OpenSecretsFunc func(row *db.Account) (channels.Account, error)

// errAccountConfig marks an account that cannot send: unknown channel,
// unopenable secrets or an invalid adapter configuration. Its messages
// become dead letters with the reason (an operator fixes the account and
// requeues them).
var errAccountConfig = errors.New("account cannot send")

// senders caches each account's outbound adapter (secrets opened,
// configuration decoded) for a short TTL, so a burst of sends does not
// decrypt and decode per message; a changed account takes effect within
// the TTL.
type senders struct {
	pool     *pgxpool.Pool
	open     OpenSecretsFunc
	registry *channels.Registry
	ttl      time.Duration

	mu    sync.Mutex
	cache map[uuid.UUID]senderEntry
}

// sender is an account's outbound adapter and what the dispatcher needs
// of the account.
type sender struct {
	out         channels.Outbound
	caps        channels.Capabilities
	channelType string
	status      string
	maxAttempts *int32
	// limited: the account sets its own rate limit.
	limited bool
}

type senderEntry struct {
	s       *sender
	err     error // errAccountConfig-wrapped, cached too
	expires time.Time
}

func newSenders(pool *pgxpool.Pool, open OpenSecretsFunc, registry *channels.Registry, ttl time.Duration) *senders {
	return &senders{pool: pool, open: open, registry: registry, ttl: ttl, cache: map[uuid.UUID]senderEntry{}}
}

// get returns the account's sender. A configuration problem returns an
// error wrapping errAccountConfig; other errors are the database's.
func (s *senders) get(ctx context.Context, tenantID, accountID uuid.UUID) (*sender, error) {
	now := time.Now()
	s.mu.Lock()
	e, ok := s.cache[accountID]
	s.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.s, e.err
	}
	snd, err := s.load(ctx, tenantID, accountID)
	if err != nil && !errors.Is(err, errAccountConfig) {
		return nil, err
	}
	s.mu.Lock()
	if len(s.cache) > 10_000 {
		clear(s.cache)
	}
	s.cache[accountID] = senderEntry{s: snd, err: err, expires: now.Add(s.ttl)}
	s.mu.Unlock()
	return snd, err
}

// forget drops an account (after it was disabled).
func (s *senders) forget(accountID uuid.UUID) {
	s.mu.Lock()
	delete(s.cache, accountID)
	s.mu.Unlock()
}

func (s *senders) load(ctx context.Context, tenantID, accountID uuid.UUID) (*sender, error) {
	var row *db.Account
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		row, err = db.AccountGet(ctx, tx, tenantID, accountID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, fmt.Errorf("%w: account %s not found", errAccountConfig, accountID)
	}
	if err != nil {
		return nil, fmt.Errorf("load account: %w", err)
	}
	ch, ok := s.registry.Get(row.ChannelType)
	if !ok {
		return nil, fmt.Errorf("%w: no adapter for channel %q", errAccountConfig, row.ChannelType)
	}
	oc, ok := ch.(channels.OutboundChannel)
	if !ok {
		return nil, fmt.Errorf("%w: channel %q cannot send", errAccountConfig, row.ChannelType)
	}
	secrets, err := s.open(row)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errAccountConfig, err)
	}
	out, err := oc.NewOutbound(secrets)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errAccountConfig, err)
	}
	return &sender{out: out, caps: ch.Capabilities(), channelType: row.ChannelType, status: row.Status,
		maxAttempts: row.MaxAttempts, limited: row.RateLimitPerSec != nil || row.RateLimitBurst != nil}, nil
}
