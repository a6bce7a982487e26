package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// ErrUnknownAccount: no active account of that channel type has this id.
var ErrUnknownAccount = errors.New("unknown, disabled or mismatched account")

// Account is an installed, active account ready to verify webhooks.
type Account struct {
	ID          uuid.UUID
	TenantID    uuid.UUID
	ChannelType string
	Inbound     channels.Inbound
}

// Accounts resolves webhook URLs to accounts with their opened secrets and
// adapter, caching each for a short TTL so the hot path does not decrypt
// and decode per request. A disabled account stops resolving within TTL.
type Accounts struct {
	pool     *pgxpool.Pool
	box      *secretbox.Box
	registry *channels.Registry
	ttl      time.Duration

	mu    sync.Mutex
	cache map[uuid.UUID]cached
}

type cached struct {
	acct    *Account
	err     error // ErrUnknownAccount (negative cache) or nil
	expires time.Time
}

// NewAccounts returns a resolver. box may be nil when no master key is
// configured: accounts with sealed secrets then fail to resolve.
func NewAccounts(pool *pgxpool.Pool, box *secretbox.Box, registry *channels.Registry, ttl time.Duration) *Accounts {
	if ttl == 0 {
		ttl = 5 * time.Second
	}
	return &Accounts{pool: pool, box: box, registry: registry, ttl: ttl, cache: map[uuid.UUID]cached{}}
}

// Resolve returns the active account id of channelType, or
// ErrUnknownAccount. Database failures are returned as they are.
func (a *Accounts) Resolve(ctx context.Context, channelType string, id uuid.UUID) (*Account, error) {
	now := time.Now()
	a.mu.Lock()
	c, ok := a.cache[id]
	a.mu.Unlock()
	if !ok || now.After(c.expires) {
		acct, err := a.load(ctx, id)
		if err != nil && !errors.Is(err, ErrUnknownAccount) {
			return nil, err
		}
		ttl := a.ttl
		if err != nil {
			ttl = time.Second // unknown ids: cache briefly, shed floods
		}
		c = cached{acct: acct, err: err, expires: now.Add(ttl)}
		a.mu.Lock()
		if len(a.cache) > 100_000 {
			clear(a.cache)
		}
		a.cache[id] = c
		a.mu.Unlock()
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.acct.ChannelType != channelType {
		return nil, ErrUnknownAccount
	}
	return c.acct, nil
}

// Forget drops an account from the cache (after an admin change).
func (a *Accounts) Forget(id uuid.UUID) {
	a.mu.Lock()
	delete(a.cache, id)
	a.mu.Unlock()
}

func (a *Accounts) load(ctx context.Context, id uuid.UUID) (*Account, error) {
	route, err := db.AccountRouteGet(ctx, a.pool, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrUnknownAccount
	}
	if err != nil {
		return nil, err
	}
	var row *db.Account
	err = db.InTenantTx(ctx, a.pool, route.TenantID, func(tx pgx.Tx) error {
		var err error
		row, err = db.AccountGet(ctx, tx, route.TenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrUnknownAccount
	}
	if err != nil {
		return nil, err
	}
	if row.Status != db.AccountActive {
		return nil, ErrUnknownAccount
	}
	ch, ok := a.registry.Get(row.ChannelType)
	if !ok {
		return nil, ErrUnknownAccount
	}
	secrets, err := OpenSecrets(a.box, row)
	if err != nil {
		return nil, err
	}
	in, err := ch.NewInbound(secrets)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", id, err)
	}
	return &Account{ID: row.ID, TenantID: row.TenantID, ChannelType: row.ChannelType, Inbound: in}, nil
}

// OpenSecrets opens an account's sealed columns into what adapters read.
func OpenSecrets(box *secretbox.Box, row *db.Account) (channels.Account, error) {
	acct := channels.Account{ID: row.ID, TenantID: row.TenantID, ExternalID: row.ExternalID, Settings: row.Settings}
	if row.CredentialsEnc == nil && row.WebhookSecretEnc == nil {
		return acct, nil
	}
	if box == nil {
		return acct, errors.New("account has encrypted secrets but MIO_MASTER_KEY is not set")
	}
	cred, err := box.Open(row.CredentialsEnc, admin.CredentialsAD(row.ID))
	if err != nil {
		return acct, fmt.Errorf("account %s credentials: %w", row.ID, err)
	}
	secret, err := box.Open(row.WebhookSecretEnc, admin.WebhookSecretAD(row.ID))
	if err != nil {
		return acct, fmt.Errorf("account %s webhook secret: %w", row.ID, err)
	}
	acct.Credentials, acct.WebhookSecret = cred, string(secret)
	return acct, nil
}
