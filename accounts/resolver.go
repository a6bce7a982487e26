package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
)

// maxCached bounds the cache: past it, the cache starts over empty (a
// flood of made-up ids cannot grow it without bound).
const maxCached = 100_000

// ResolverConfig configures a Resolver.
type ResolverConfig struct {
	// Box opens sealed secrets. Nil when no master key is configured:
	// accounts with sealed secrets then fail to open.
	Box *secretbox.Box
	// Logger logs accounts disabled for a refused credential grant.
	// Default: discard.
	Logger *slog.Logger
	// Metrics counts credential renewals. Default: not counted.
	Metrics *metrics.Credentials
	// Now is the clock of the cache and of token renewal. Default
	// time.Now.
	Now func() time.Time
	// Registry holds the channel adapters. Required.
	Registry *channels.Registry
}

// Resolver finds accounts, opens their secrets and builds their adapters
// once per cache fill, not per request or message (see the package doc
// for the cache rule). It is safe for concurrent use.
type Resolver struct {
	pool     *pgxpool.Pool
	box      *secretbox.Box
	registry *channels.Registry
	now      func() time.Time

	mu    sync.RWMutex
	cache map[uuid.UUID]entry

	// tokens renews the access tokens of accounts with a grant.
	tokens *renewer
}

// entry is one cached lookup: an account, or the absence of one.
type entry struct {
	acct *Account
	// absentFrom, when acct is nil, is the tenant the id was looked up in;
	// uuid.Nil: no tenant has it (no route).
	absentFrom uuid.UUID
	expires    time.Time
}

// NewResolver returns a Resolver reading accounts from pool.
func NewResolver(pool *pgxpool.Pool, cfg ResolverConfig) *Resolver {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Resolver{pool: pool, box: cfg.Box, registry: cfg.Registry, now: cfg.Now, cache: map[uuid.UUID]entry{}}
	r.tokens = &renewer{pool: pool, box: cfg.Box, now: cfg.Now, metrics: cfg.Metrics, logger: cfg.Logger,
		forget: r.Forget, state: map[uuid.UUID]*tokenState{}}
	return r
}

// Inbound returns the active account id of channelType, with its webhook
// adapter, or ErrUnknown. An account whose secrets do not open or whose
// configuration the adapter refuses returns that error; database failures
// are returned wrapped.
func (r *Resolver) Inbound(ctx context.Context, channelType string, id uuid.UUID) (*Account, error) {
	e, err := r.lookup(ctx, uuid.Nil, id)
	if err != nil {
		return nil, err
	}
	a := e.acct
	if a == nil || a.Status != db.AccountActive || a.ChannelType != channelType {
		return nil, ErrUnknown
	}
	if a.inboundErr != nil {
		return nil, a.inboundErr
	}
	return a, nil
}

// Outbound returns the tenant's account id with its sending adapter,
// whatever its status (the dispatcher decides what a disabled account's
// messages become). A configuration problem returns an error wrapping
// ErrCannotSend; other errors are the database's.
func (r *Resolver) Outbound(ctx context.Context, tenantID, id uuid.UUID) (*Account, error) {
	e, err := r.lookup(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	a := e.acct
	if a == nil || a.TenantID != tenantID {
		return nil, fmt.Errorf("%w: account %s not found", ErrCannotSend, id)
	}
	if a.outboundErr != nil {
		return nil, a.outboundErr
	}
	return a, nil
}

// Secrets returns the tenant's account id as adapters read it (settings,
// opened credentials and webhook secret), whatever its status, or
// ErrNotFound. Attachment fetchers use it.
func (r *Resolver) Secrets(ctx context.Context, tenantID, id uuid.UUID) (channels.Account, error) {
	e, err := r.lookup(ctx, tenantID, id)
	if err != nil {
		return channels.Account{}, err
	}
	a := e.acct
	if a == nil || a.TenantID != tenantID {
		return channels.Account{}, ErrNotFound
	}
	if a.openErr != nil {
		return channels.Account{}, a.openErr
	}
	return a.Secrets, nil
}

// Registry returns the channel registry the resolver builds adapters
// from.
func (r *Resolver) Registry() *channels.Registry { return r.registry }

// Forget drops an account from this process's cache, after the process
// changed it.
func (r *Resolver) Forget(id uuid.UUID) {
	r.mu.Lock()
	delete(r.cache, id)
	r.mu.Unlock()
}

// lookup returns the cached entry of id, loading it when it is missing,
// expired, or an absence recorded for another tenant. tenantID uuid.Nil
// finds the tenant through the account's route.
func (r *Resolver) lookup(ctx context.Context, tenantID, id uuid.UUID) (entry, error) {
	now := r.now()
	r.mu.RLock()
	e, ok := r.cache[id]
	r.mu.RUnlock()
	if ok && now.Before(e.expires) && (e.acct != nil || e.absentFrom == uuid.Nil || e.absentFrom == tenantID) {
		return e, nil
	}
	e, err := r.load(ctx, tenantID, id)
	if err != nil {
		return entry{}, fmt.Errorf("load account %s: %w", id, err)
	}
	ttl := CacheTTL
	if e.acct == nil {
		ttl = AbsentTTL
	}
	e.expires = now.Add(ttl)
	r.mu.Lock()
	if len(r.cache) >= maxCached {
		clear(r.cache)
	}
	r.cache[id] = e
	r.mu.Unlock()
	return e, nil
}

// load reads the account's row; a missing one is an entry without
// account, not an error.
func (r *Resolver) load(ctx context.Context, tenantID, id uuid.UUID) (entry, error) {
	if tenantID == uuid.Nil {
		route, err := db.AccountRouteGet(ctx, r.pool, id)
		if errors.Is(err, db.ErrNotFound) {
			return entry{}, nil
		}
		if err != nil {
			return entry{}, err
		}
		tenantID = route.TenantID
	}
	var row *db.Account
	var tenant *db.Tenant
	err := db.InTenantTx(ctx, r.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		if row, err = db.AccountGet(ctx, tx, tenantID, id); err != nil {
			return err
		}
		tenant, err = db.TenantGet(ctx, tx, tenantID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return entry{absentFrom: tenantID}, nil
	}
	if err != nil {
		return entry{}, err
	}
	a := r.build(row)
	if tenant.Status == db.TenantDisabled {
		a.inboundErr, a.Inbound = ErrUnknown, nil // a disabled tenant's webhooks answer 404
	}
	return entry{acct: a}, nil
}

// build opens the row's secrets and builds its adapters, recording why
// one cannot be built.
func (r *Resolver) build(row *db.Account) *Account {
	a := &Account{ID: row.ID, TenantID: row.TenantID, ChannelType: row.ChannelType, Status: row.Status,
		MaxAttempts: row.MaxAttempts, RateLimited: row.RateLimitPerSec != nil || row.RateLimitBurst != nil}
	a.Secrets, a.openErr = open(r.box, row)
	ch, known := r.registry.Get(row.ChannelType)
	if known {
		a.Capabilities = channels.CapabilitiesOf(ch)
	}
	if g, ok := ch.(channels.TokenGranter); ok && a.openErr == nil {
		// A malformed grant is reported by the adapters below.
		if grant, err := g.Grant(a.Secrets); err == nil && grant != nil {
			a.Secrets.Tokens = &source{r: r.tokens, tenantID: row.TenantID, accountID: row.ID,
				channelType: row.ChannelType, credEnc: row.CredentialsEnc, grant: grant,
				active: row.Status == db.AccountActive, updated: row.UpdatedAt}
		}
	}

	switch {
	case !known:
		a.inboundErr = ErrUnknown
	case a.openErr != nil:
		a.inboundErr = a.openErr
	default:
		in, err := ch.NewInbound(a.Secrets)
		if err != nil {
			a.inboundErr = fmt.Errorf("account %s: %w", row.ID, err)
			break
		}
		a.Inbound = in
		r.buildPrevious(a, row)
	}

	oc, canSend := ch.(channels.OutboundChannel)
	switch {
	case !known:
		a.outboundErr = fmt.Errorf("%w: no adapter for channel %q", ErrCannotSend, row.ChannelType)
	case !canSend:
		a.outboundErr = fmt.Errorf("%w: channel %q cannot send", ErrCannotSend, row.ChannelType)
	case a.openErr != nil:
		a.outboundErr = fmt.Errorf("%w: %v", ErrCannotSend, a.openErr)
	default:
		out, err := oc.NewOutbound(a.Secrets)
		if err != nil {
			a.outboundErr = fmt.Errorf("%w: %v", ErrCannotSend, err)
			break
		}
		a.Outbound = out
	}
	return a
}
