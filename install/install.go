// Package install installs accounts in one click: an operator names the
// platform app (its OAuth client) and gets the platform's consent page;
// the platform redirects the browser to MIO's public callback, which
// exchanges the code and creates (or updates) the account with sealed
// credentials. Between the two, the pending install waits in
// mio.pending_installs, named by a signed, expiring state that works
// once: the callback deletes the row in the transaction that writes the
// account. Each platform's pages and token endpoint are its channel's
// (channels.Installer).
//
// Internal to MIO; not a stable API.
package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// StateTTL is how long an install's state (its consent page link) works.
const StateTTL = 10 * time.Minute

// ErrInvalid wraps every failure of an install's input.
var ErrInvalid = errors.New("invalid install")

// ErrNotInstallable is a channel without one-click installs.
var ErrNotInstallable = errors.New("install: the channel has no one-click install")

// Service begins and completes installs.
type Service struct {
	pool      *pgxpool.Pool
	box       *secretbox.Box
	registry  *channels.Registry
	publicURL string
	state     signer
	now       func() time.Time
}

// Config configures a Service.
type Config struct {
	// Box seals the pending installs' and the accounts' secrets; its key
	// also signs states (a key derived for that purpose). Required.
	Box *secretbox.Box
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// PublicURL is the public listener's base URL: callbacks are
	// {PublicURL}/install/{channel}/callback. An install may name
	// another (BeginParams.PublicURL).
	PublicURL string
	// Registry holds the channels. Required.
	Registry *channels.Registry
}

// New returns a Service.
func New(pool *pgxpool.Pool, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{pool: pool, box: cfg.Box, registry: cfg.Registry, now: cfg.Now,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"), state: signer{key: cfg.Box.DeriveKey("install state")}}
}

// BeginParams describe an install.
type BeginParams struct {
	TenantID    uuid.UUID
	ChannelType string
	// DisplayName is the account's name. Default the channel's slug.
	DisplayName string
	// Credentials is the app's secret JSON: client_id, client_secret (and
	// Discord's bot_token). Sealed while the install waits.
	Credentials json.RawMessage
	// Settings is a JSON object: the account's settings and the consent
	// page's parameters (scopes, …; see the channel's InstallURL).
	Settings json.RawMessage
	// WebhookSecret is the account's webhook secret (Slack's signing
	// secret, Discord's public key, Cliq's shared token). Sealed.
	WebhookSecret string
	// PublicURL overrides Config.PublicURL for this install.
	PublicURL string
	// ReturnURL is where the browser is sent after the install, with
	// account_id (or error) added to its query; empty: a page of MIO's.
	ReturnURL string
	// Actor is who began the install, for the audit log.
	Actor string
}

// Begun is a begun install.
type Begun struct {
	// AuthorizeURL is the platform's consent page: open it in a browser.
	AuthorizeURL string `json:"authorize_url"`
	// RedirectURI is the callback the platform sends the browser to; it
	// must be registered with the platform app.
	RedirectURI    string    `json:"redirect_uri"`
	StateExpiresAt time.Time `json:"state_expires_at"`
}

// clientAD and secretAD bind a pending install's sealed secrets to it.
func clientAD(id uuid.UUID) []byte { return []byte(id.String() + "/install_client") }
func secretAD(id uuid.UUID) []byte { return []byte(id.String() + "/install_webhook_secret") }

func (s *Service) installer(channelType string) (channels.Installer, error) {
	ch, ok := s.registry.Get(channelType)
	if !ok {
		return nil, fmt.Errorf("%w: unknown channel %q", ErrNotInstallable, channelType)
	}
	inst, ok := ch.(channels.Installer)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotInstallable, channelType)
	}
	return inst, nil
}

// RedirectURI is a channel's callback under publicURL.
func RedirectURI(publicURL, channelType string) string {
	return strings.TrimRight(publicURL, "/") + "/install/" + url.PathEscape(channelType) + "/callback"
}

// Begin stores a pending install and returns the platform's consent page.
// Failures of the input wrap ErrInvalid or ErrNotInstallable; nothing is
// written then.
func (s *Service) Begin(ctx context.Context, p BeginParams) (*Begun, error) {
	inst, err := s.installer(p.ChannelType)
	if err != nil {
		return nil, err
	}
	public := s.publicURL
	if p.PublicURL != "" {
		public = strings.TrimRight(p.PublicURL, "/")
	}
	if u, err := url.Parse(public); public == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%w: the public URL %q is not an absolute http(s) URL (set MIO_PUBLIC_URL or give one)", ErrInvalid, public)
	}
	if p.ReturnURL != "" {
		if u, err := url.Parse(p.ReturnURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("%w: the return URL is not an absolute http(s) URL", ErrInvalid)
		}
	}
	name := strings.TrimSpace(p.DisplayName)
	if name == "" {
		name = p.ChannelType
	}
	if len(name) > 200 {
		return nil, fmt.Errorf("%w: the name is longer than 200 characters", ErrInvalid)
	}
	p.WebhookSecret = strings.TrimRight(p.WebhookSecret, "\r\n")
	id, now := uuid.New(), s.now()
	expires := now.Add(StateTTL)
	redirect := RedirectURI(public, p.ChannelType)
	state := s.state.sign(p.TenantID, id, expires)
	authURL, err := inst.InstallURL(channels.InstallApp{Credentials: p.Credentials, Settings: p.Settings, WebhookSecret: p.WebhookSecret}, redirect, state)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	clientEnc, err := s.box.Seal([]byte(p.Credentials), clientAD(id))
	if err != nil {
		return nil, err
	}
	var secretEnc []byte
	if p.WebhookSecret != "" {
		if secretEnc, err = s.box.Seal([]byte(p.WebhookSecret), secretAD(id)); err != nil {
			return nil, err
		}
	}
	row := &db.PendingInstall{TenantID: p.TenantID, ID: id, ChannelType: p.ChannelType, DisplayName: name,
		Settings: p.Settings, ClientEnc: clientEnc, WebhookSecretEnc: secretEnc, RedirectURI: redirect,
		ReturnURL: p.ReturnURL, CreatedBy: p.Actor, ExpiresAt: expires}
	err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		if _, err := db.TenantGet(ctx, tx, p.TenantID); err != nil {
			return fmt.Errorf("tenant %s: %w", p.TenantID, err)
		}
		if _, err := db.PendingInstallPurge(ctx, tx, p.TenantID, now); err != nil {
			return err
		}
		return db.PendingInstallInsert(ctx, tx, row)
	})
	if err != nil {
		return nil, err
	}
	return &Begun{AuthorizeURL: authURL, RedirectURI: redirect, StateExpiresAt: expires}, nil
}

// Result is a completed install.
type Result struct {
	TenantID    uuid.UUID `json:"tenant_id"`
	AccountID   uuid.UUID `json:"account_id"`
	ChannelType string    `json:"channel_type"`
	DisplayName string    `json:"display_name"`
	ExternalID  string    `json:"external_id"`
	// Created is false when an account with the same external id was
	// updated.
	Created bool `json:"created"`
	// ReturnURL is the install's return URL ("" for none).
	ReturnURL string `json:"-"`
}

// Complete handles the platform's redirect to channelType's callback.
// The state is checked first: a state MIO did not sign, an expired one,
// one used already or begun for another channel is ErrState, and then no
// code is exchanged and nothing written. Otherwise the pending install
// is taken (deleted), the channel exchanges the code, and the account is
// created — or, when the tenant has an account of the channel with the
// same external id, its credentials, webhook secret and settings are
// replaced — all in one transaction: a failure leaves the pending install
// as it was, until it expires. A consent refused on the platform is a
// *channels.InstallRefusedError; the exchange's failures are the
// channel's typed errors; a configuration the adapter refuses wraps
// ErrInvalid.
func (s *Service) Complete(ctx context.Context, channelType string, query url.Values) (*Result, error) {
	tenantID, id, err := s.state.verify(query.Get("state"), s.now())
	if err != nil {
		return nil, err
	}
	inst, err := s.installer(channelType)
	if err != nil {
		return nil, ErrState
	}
	var res *Result
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		p, err := db.PendingInstallTake(ctx, tx, tenantID, id, channelType, s.now())
		if errors.Is(err, db.ErrNotFound) {
			return ErrState
		}
		if err != nil {
			return err
		}
		app, err := s.openApp(p)
		if err != nil {
			return err
		}
		installed, err := inst.CompleteInstall(ctx, app, p.RedirectURI, query)
		if err != nil {
			return err
		}
		res, err = s.store(ctx, tx, p, app.WebhookSecret, installed)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Service) openApp(p *db.PendingInstall) (channels.InstallApp, error) {
	client, err := s.box.Open(p.ClientEnc, clientAD(p.ID))
	if err != nil {
		return channels.InstallApp{}, fmt.Errorf("open the install's client credentials: %w", err)
	}
	secret, err := s.box.Open(p.WebhookSecretEnc, secretAD(p.ID))
	if err != nil {
		return channels.InstallApp{}, fmt.Errorf("open the install's webhook secret: %w", err)
	}
	return channels.InstallApp{Credentials: client, Settings: p.Settings, WebhookSecret: string(secret)}, nil
}

// store creates the installed account, or updates the tenant's account
// with the same external id, and audits it, in tx.
func (s *Service) store(ctx context.Context, tx pgx.Tx, p *db.PendingInstall, webhookSecret string, in *channels.Installed) (*Result, error) {
	spec := &accounts.Spec{TenantID: p.TenantID, ID: uuid.New(), ChannelType: p.ChannelType, DisplayName: p.DisplayName,
		ExternalID: in.ExternalID, Settings: in.Settings, Credentials: in.Credentials, WebhookSecret: webhookSecret}
	var existing *db.Account
	if in.ExternalID != "" {
		a, err := db.AccountByExternalID(ctx, tx, p.TenantID, p.ChannelType, in.ExternalID)
		switch {
		case err == nil:
			existing, spec.ID = a, a.ID
		case !errors.Is(err, db.ErrNotFound):
			return nil, err
		}
	}
	if err := spec.Validate(s.registry); err != nil {
		return nil, fmt.Errorf("%w: the installed account: %v", ErrInvalid, err)
	}
	row, err := spec.Seal(s.box)
	if err != nil {
		return nil, err
	}
	actor := "install"
	if p.CreatedBy != "" {
		actor = p.CreatedBy
	}
	var acct *db.Account
	action := "account.install"
	if existing == nil {
		if acct, err = db.AccountInsert(ctx, tx, row); err != nil {
			return nil, err
		}
	} else {
		action = "account.reinstall"
		if acct, err = s.update(ctx, tx, existing, row); err != nil {
			return nil, err
		}
	}
	after := map[string]any{"account_id": acct.ID, "channel_type": acct.ChannelType, "display_name": acct.DisplayName,
		"external_id": acct.ExternalID, "install_id": p.ID}
	if _, err := db.AuditInsert(ctx, tx, &db.AuditInsertParams{Actor: actor, Action: action, TenantID: p.TenantID,
		Target: acct.ID.String(), After: after}); err != nil {
		return nil, err
	}
	return &Result{TenantID: acct.TenantID, AccountID: acct.ID, ChannelType: acct.ChannelType, DisplayName: acct.DisplayName,
		ExternalID: acct.ExternalID, Created: existing == nil, ReturnURL: p.ReturnURL}, nil
}

// update replaces an account's credentials, webhook secret (when the
// install has one) and settings with an install's.
func (s *Service) update(ctx context.Context, tx pgx.Tx, a *db.Account, row *db.AccountInsertParams) (*db.Account, error) {
	acct, err := db.AccountSetCredentials(ctx, tx, a.TenantID, a.ID, row.CredentialsEnc)
	if err != nil {
		return nil, err
	}
	if row.WebhookSecretEnc != nil {
		if acct, err = db.AccountRotateWebhookSecret(ctx, tx, a.TenantID, a.ID, row.WebhookSecretEnc, nil); err != nil {
			return nil, err
		}
	}
	return db.AccountUpdateLimits(ctx, tx, a.TenantID, a.ID, db.AccountLimits{DisplayName: row.DisplayName,
		Settings: row.Settings, RateLimitPerSec: acct.RateLimitPerSec, RateLimitBurst: acct.RateLimitBurst,
		MaxAttempts: acct.MaxAttempts})
}
