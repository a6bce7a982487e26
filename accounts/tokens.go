package accounts

import (
	"bytes"
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

// Renewal schedule: a token is renewed once RenewFraction of its lifetime
// has passed, and at least LongTokenMargin before it expires when it
// lives LongToken or more.
const (
	RenewFraction   = 0.8
	LongToken       = 10 * time.Minute
	LongTokenMargin = 5 * time.Minute
)

// accessTokenAD binds a sealed access token to its account.
func accessTokenAD(accountID uuid.UUID) []byte {
	return []byte(accountID.String() + "/access_token")
}

// refreshTokenAD binds a sealed rotated refresh token to its account.
func refreshTokenAD(accountID uuid.UUID) []byte {
	return []byte(accountID.String() + "/refresh_token")
}

// renewMargin is how long before expiry a token of lifetime is renewed.
func renewMargin(lifetime time.Duration) time.Duration {
	m := time.Duration(float64(lifetime) * (1 - RenewFraction))
	if lifetime >= LongToken {
		m = max(m, LongTokenMargin)
	}
	return m
}

// renewer is the renewal engine of accounts whose credentials hold a
// grant (channels.TokenGranter). It renews lazily, when a caller needs a
// token past its renewal time, and shares tokens across processes through
// mio.account_access_tokens:
//   - in a process, one renewal at a time per account (tokenState.mu);
//     concurrent callers wait for it and take its token;
//   - across processes, one renewal at a time per account (a transaction
//     advisory lock, db.AccessTokenLock); a process finding the stored
//     token fresh takes it, one finding the lock held while the stored
//     token is still valid uses that token;
//   - a grant the platform refuses disables the account with the reason
//     (only while it still has the refused credentials) and is not asked
//     again in this process until the credentials change.
//
// Tokens are sealed at rest and never logged.
type renewer struct {
	pool    *pgxpool.Pool
	box     *secretbox.Box
	now     func() time.Time
	metrics *metrics.Credentials
	logger  *slog.Logger
	// forget drops a disabled account from the resolver's cache.
	forget func(uuid.UUID)

	mu    sync.Mutex
	state map[uuid.UUID]*tokenState
}

// tokenState is one account's token in this process.
type tokenState struct {
	mu sync.Mutex
	// credEnc are the sealed credentials the token was obtained with.
	credEnc            []byte
	token              string
	renewAt, expiresAt time.Time
	// refused is the grant's refusal, for credEnc, by a source built from
	// the account's row as updated at refusedFrom.
	refused     error
	refusedFrom time.Time
}

func (r *renewer) stateOf(accountID uuid.UUID) *tokenState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.state[accountID]
	if !ok {
		if len(r.state) >= maxCached {
			clear(r.state)
		}
		st = &tokenState{}
		r.state[accountID] = st
	}
	return st
}

// source is one account's channels.TokenSource.
type source struct {
	r           *renewer
	tenantID    uuid.UUID
	accountID   uuid.UUID
	channelType string
	credEnc     []byte
	grant       channels.Grant
	// active and updated are the account row's status and updated_at
	// the source was built from: an account enabled after a refusal
	// (a later row, active) asks the platform again.
	active  bool
	updated time.Time
}

var _ channels.TokenSource = (*source)(nil)

// lock returns the account's state, locked, reset when the credentials
// changed since its token was obtained.
func (s *source) lock() *tokenState {
	st := s.r.stateOf(s.accountID)
	st.mu.Lock()
	if !bytes.Equal(st.credEnc, s.credEnc) {
		st.credEnc, st.token, st.refused = s.credEnc, "", nil
	}
	if st.refused != nil && s.active && s.updated.After(st.refusedFrom) {
		st.refused = nil
	}
	return st
}

// Token returns the account's token, renewing it when it is due.
func (s *source) Token(ctx context.Context) (string, error) {
	st := s.lock()
	defer st.mu.Unlock()
	if st.refused != nil {
		return "", st.refused
	}
	if st.token != "" && s.r.now().Before(st.renewAt) {
		return st.token, nil
	}
	return s.refresh(ctx, st, "")
}

// Renew returns a token newer than stale, which the platform refused.
func (s *source) Renew(ctx context.Context, stale string) (string, error) {
	st := s.lock()
	defer st.mu.Unlock()
	if st.refused != nil {
		return "", st.refused
	}
	if st.token != "" && st.token != stale && s.r.now().Before(st.expiresAt) {
		return st.token, nil
	}
	return s.refresh(ctx, st, stale)
}

// refresh takes the stored token when it is usable, else renews it under
// the account's lock. stale, when set, is a token the platform refused:
// only another token is usable.
func (s *source) refresh(ctx context.Context, st *tokenState, stale string) (string, error) {
	var out string
	err := db.InTenantTx(ctx, s.r.pool, s.tenantID, func(tx pgx.Tx) error {
		stored, err := s.stored(ctx, tx)
		if err != nil {
			return err
		}
		now := s.r.now()
		if stored != nil && stored.token != stale && now.Before(stored.renewAt) {
			out = st.adopt(stored)
			return nil
		}
		valid := stale == "" && stored != nil && now.Before(stored.expiresAt)
		if valid {
			free, err := db.AccessTokenTryLock(ctx, tx, s.accountID)
			if err != nil {
				return err
			}
			if !free {
				// Another process is renewing it: the stored token is
				// still good meanwhile. Read again on the next call.
				out = st.adopt(stored)
				st.renewAt = now
				return nil
			}
		} else if err := db.AccessTokenLock(ctx, tx, s.accountID); err != nil {
			return err
		}
		// Under the lock: another process may have renewed meanwhile.
		if stored, err = s.stored(ctx, tx); err != nil {
			return err
		}
		if stored != nil && stored.token != stale && s.r.now().Before(stored.renewAt) {
			out = st.adopt(stored)
			return nil
		}
		if err := s.mayRenew(ctx, tx, st); err != nil {
			return err
		}
		out, err = s.renew(ctx, tx, st, stored)
		return err
	})
	var refused *channels.GrantRefusedError
	if errors.As(err, &refused) {
		s.r.forget(s.accountID)
		return "", channels.Permanent("credentials", err)
	}
	if err != nil {
		return "", fmt.Errorf("account %s access token: %w", s.accountID, err)
	}
	return out, nil
}

// mayRenew checks the account's row before its grant is used: a grant
// another process saw refused (the account disabled with a reason) is
// not tried again, nor credentials rotated out.
func (s *source) mayRenew(ctx context.Context, tx pgx.Tx, st *tokenState) error {
	row, err := db.AccountGet(ctx, tx, s.tenantID, s.accountID)
	if err != nil {
		return err
	}
	switch {
	case !bytes.Equal(row.CredentialsEnc, s.credEnc):
		return &channels.TransientError{Err: errors.New("credentials: the account's credentials changed")}
	case row.Status != db.AccountActive && row.DisabledReason != "":
		st.refused, st.refusedFrom = channels.Permanent("credentials", errors.New(row.DisabledReason)), s.updated
		return st.refused
	case row.Status != db.AccountActive:
		return channels.Permanent("credentials", errors.New("the account is disabled"))
	}
	return nil
}

// storedToken is the account's stored token, opened.
type storedToken struct {
	token              string
	renewAt, expiresAt time.Time
	// refresh is the rotating grant's latest refresh token; refreshEnc
	// the same, sealed.
	refresh    string
	refreshEnc []byte
}

func (st *tokenState) adopt(t *storedToken) string {
	st.token, st.renewAt, st.expiresAt = t.token, t.renewAt, t.expiresAt
	return t.token
}

// stored reads and opens the account's stored token: nil when there is
// none, or it was obtained with other credentials.
func (s *source) stored(ctx context.Context, tx pgx.Tx) (*storedToken, error) {
	row, err := db.AccessTokenGet(ctx, tx, s.tenantID, s.accountID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(row.CredentialsEnc, s.credEnc) {
		return nil, nil
	}
	tok, err := s.r.box.Open(row.TokenEnc, accessTokenAD(s.accountID))
	if err != nil {
		return nil, nil // unreadable (another master key): renew it
	}
	refresh, err := s.r.box.Open(row.RefreshEnc, refreshTokenAD(s.accountID))
	if err != nil {
		// The rotated refresh token is the only usable one: without it the
		// grant would send a spent one.
		return nil, fmt.Errorf("open the rotated refresh token: %w", err)
	}
	return &storedToken{token: string(tok), renewAt: row.RenewAt, expiresAt: row.ExpiresAt,
		refresh: string(refresh), refreshEnc: row.RefreshEnc}, nil
}

// renew exchanges the grant for a new token and stores it; a refused
// grant disables the account (in tx, which the caller commits) and is
// returned as the *channels.GrantRefusedError. stored is the account's
// stored token (nil: none): a rotating grant is exchanged with its latest
// refresh token, and the one the platform returns is stored with the new
// access token, in tx.
func (s *source) renew(ctx context.Context, tx pgx.Tx, st *tokenState, stored *storedToken) (string, error) {
	grant := s.grant
	var refreshEnc []byte
	if rg, ok := grant.(channels.RotatingGrant); ok && stored != nil && stored.refresh != "" {
		grant, refreshEnc = rg.WithRefreshToken(stored.refresh), stored.refreshEnc
	}
	issued := s.r.now()
	tok, err := grant.Exchange(ctx)
	var refused *channels.GrantRefusedError
	switch {
	case errors.As(err, &refused):
		s.count(metrics.RenewalRefused)
		reason := refused.Error()
		disabled, derr := db.AccountDisableRefused(ctx, tx, s.tenantID, s.accountID, s.credEnc, reason)
		if derr != nil {
			return "", derr
		}
		if derr := db.AccessTokenDelete(ctx, tx, s.tenantID, s.accountID); derr != nil {
			return "", derr
		}
		if err := tx.Commit(ctx); err != nil {
			return "", err
		}
		st.refused, st.refusedFrom = channels.Permanent("credentials", err), s.updated
		if disabled {
			s.r.logger.Warn("account disabled: its credential grant was refused", "tenant_id", s.tenantID,
				"account_id", s.accountID, "channel_type", s.channelType, "reason", reason)
		}
		return "", refused
	case err != nil:
		s.count(metrics.RenewalFailed)
		return "", err
	}
	s.count(metrics.RenewalRenewed)
	sealed, err := s.r.box.Seal([]byte(tok.Token), accessTokenAD(s.accountID))
	if err != nil {
		return "", fmt.Errorf("seal access token: %w", err)
	}
	if tok.RefreshToken != "" {
		if refreshEnc, err = s.r.box.Seal([]byte(tok.RefreshToken), refreshTokenAD(s.accountID)); err != nil {
			return "", fmt.Errorf("seal refresh token: %w", err)
		}
	}
	t := &db.AccessToken{CredentialsEnc: s.credEnc, TokenEnc: sealed, ExpiresAt: issued.Add(tok.Lifetime),
		RenewAt: issued.Add(tok.Lifetime - renewMargin(tok.Lifetime)), RefreshEnc: refreshEnc}
	// Not stored when the account's credentials changed meanwhile, nor
	// (without a rotated refresh token) when it was disabled: the token
	// still serves this send.
	if _, err := db.AccessTokenPut(ctx, tx, s.tenantID, s.accountID, t); err != nil {
		return "", err
	}
	return st.adopt(&storedToken{token: tok.Token, renewAt: t.RenewAt, expiresAt: t.ExpiresAt}), nil
}

func (s *source) count(outcome string) {
	if s.r.metrics != nil {
		s.r.metrics.Renewals.WithLabelValues(s.channelType, outcome).Inc()
	}
}

// Renewal describes how an account's platform tokens are obtained, for
// operators: "<grant kind>: renewed by MIO", "static access token: not
// renewed" for a channel that takes grants but whose credentials hold a
// bare token, "" for channels without grants or when the credentials do
// not open.
func Renewal(box *secretbox.Box, registry *channels.Registry, row *db.Account) string {
	if registry == nil {
		return ""
	}
	ch, _ := registry.Get(row.ChannelType)
	g, ok := ch.(channels.TokenGranter)
	if !ok || row.CredentialsEnc == nil {
		return ""
	}
	acct, err := open(box, row)
	if err != nil {
		return ""
	}
	grant, err := g.Grant(acct)
	switch {
	case err != nil:
		return ""
	case grant == nil:
		return "static access token: not renewed"
	}
	return grant.Kind() + ": renewed by MIO"
}
