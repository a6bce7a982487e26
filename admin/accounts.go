package admin

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

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
)

// AccountCreateParams describe a new channel install.
type AccountCreateParams struct {
	TenantID    uuid.UUID
	ChannelType string
	DisplayName string
	ExternalID  string
	// Settings is plain JSON (object) of non-secret adapter settings.
	Settings json.RawMessage
	// Credentials is the adapter's secret JSON (object), sealed at rest.
	Credentials json.RawMessage
	// WebhookSecret is the secret verifying inbound webhooks, sealed.
	WebhookSecret string
	// Registry, when set, has the channel's adapter check the resulting
	// configuration before anything is written.
	Registry *channels.Registry
}

// AccountInfo is what operators see of an account: never its secrets.
type AccountInfo struct {
	*db.Account
	HasCredentials   bool   `json:"has_credentials"`
	HasWebhookSecret bool   `json:"has_webhook_secret"`
	WebhookURL       string `json:"webhook_url"`
	// ConfigInForce is, on creation, the channel's description of the
	// configuration it applies (channels.ConfigDescriber; Zoho Cliq's
	// payload mapping), when the channel gives one.
	ConfigInForce any `json:"config_in_force,omitempty"`
	// DisabledReason is, for a disabled account, why MIO disabled it: its
	// credential grant was refused ("zoho refresh token refused:
	// invalid_code"), or (in AccountShow) a platform connection closed for
	// good, e.g. the Discord Gateway refused the token: close 4004; empty
	// when an operator did. Enabling the account clears it.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// CredentialRenewal says how the account's platform tokens are
	// obtained, for channels whose tokens expire: "zoho refresh token:
	// renewed by MIO" or "static access token: not renewed".
	CredentialRenewal string `json:"credential_renewal,omitempty"`
	// AccessTokenExpiresAt is, in AccountShow, when the access token MIO
	// last obtained from the account's grant expires.
	AccessTokenExpiresAt *time.Time `json:"access_token_expires_at,omitempty"`
}

// AccountCreate validates and stores an account with sealed secrets.
func (s *Service) AccountCreate(ctx context.Context, p AccountCreateParams) (*AccountInfo, error) {
	if strings.TrimSpace(p.DisplayName) == "" {
		p.DisplayName = p.ChannelType
	}
	if p.Registry == nil {
		p.Registry = s.registry
	}
	spec := &accounts.Spec{TenantID: p.TenantID, ID: uuid.New(), ChannelType: p.ChannelType, DisplayName: p.DisplayName,
		ExternalID: p.ExternalID, Settings: p.Settings, Credentials: p.Credentials, WebhookSecret: p.WebhookSecret}
	if err := spec.Validate(p.Registry); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	row, err := spec.Seal(s.box)
	if err != nil {
		return nil, err
	}
	var acct *db.Account
	err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		if _, err := db.TenantGet(ctx, tx, p.TenantID); err != nil {
			return fmt.Errorf("tenant %s: %w", p.TenantID, err)
		}
		var err error
		if acct, err = db.AccountInsert(ctx, tx, row); err != nil {
			return err
		}
		return s.audit(ctx, tx, "account.create", p.TenantID, acct.ID.String(), nil, s.info(acct))
	})
	if errors.Is(err, db.ErrUnknownChannelType) {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err != nil {
		return nil, err
	}
	info := s.info(acct)
	if ch, ok := registryChannel(p.Registry, p.ChannelType).(channels.ConfigDescriber); ok {
		info.ConfigInForce, _ = ch.DescribeConfig(p.Settings) // validated above
	}
	return info, nil
}

func registryChannel(r *channels.Registry, channelType string) channels.Channel {
	if r == nil {
		return nil
	}
	ch, _ := r.Get(channelType)
	return ch
}

// AccountList lists a tenant's accounts.
// AccountPage lists a keyset page of the tenant's accounts (metadata, never
// secrets), oldest first; after is the previous page's Next.
func (s *Service) AccountPage(ctx context.Context, tenantID uuid.UUID, after string, limit int) (*Page[*AccountInfo], error) {
	cur, err := db.ParseCursor(after)
	if err != nil {
		return nil, invalidf("after: %v", err)
	}
	if limit, err = clampLimit(limit); err != nil {
		return nil, err
	}
	p := &Page[*AccountInfo]{Items: []*AccountInfo{}}
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		accts, err := db.AccountPage(ctx, tx, tenantID, cur, limit)
		for _, a := range accts {
			p.Items = append(p.Items, s.info(a))
		}
		if len(accts) == limit {
			last := accts[len(accts)-1]
			p.Next = db.Cursor{At: last.CreatedAt, ID: last.ID}.String()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (s *Service) AccountList(ctx context.Context, tenantID uuid.UUID) ([]*AccountInfo, error) {
	var out []*AccountInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		accts, err := db.AccountList(ctx, tx, tenantID, "")
		for _, a := range accts {
			out = append(out, s.info(a))
		}
		return err
	})
	return out, err
}

// AccountShow returns one account.
func (s *Service) AccountShow(ctx context.Context, tenantID, id uuid.UUID) (*AccountInfo, error) {
	var out *AccountInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		a, err := db.AccountGet(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		out = s.info(a)
		if a.Status == db.AccountDisabled && out.DisabledReason == "" {
			if out.DisabledReason, err = db.GatewayError(ctx, tx, tenantID, id); err != nil {
				return err
			}
		}
		if out.CredentialRenewal != "" {
			out.AccessTokenExpiresAt, err = db.AccessTokenExpiry(ctx, tx, tenantID, id)
		}
		return err
	})
	return out, err
}

// AccountSetStatus enables or disables an account (a no-op when it
// already has that status: nothing is audited).
func (s *Service) AccountSetStatus(ctx context.Context, tenantID, id uuid.UUID, status string) (*AccountInfo, error) {
	if status != db.AccountActive && status != db.AccountDisabled {
		return nil, invalidf("account status: want active or disabled")
	}
	action := "account.disable"
	if status == db.AccountActive {
		action = "account.enable"
	}
	return s.accountChange(ctx, tenantID, id, action, func(tx pgx.Tx, before *db.Account) (*db.Account, error) {
		if before.Status == status {
			return nil, nil
		}
		return db.AccountSetStatus(ctx, tx, tenantID, id, status)
	})
}

// Optional is a field of an update: Set when the caller gave it; Value
// nil then means "back to the default". In JSON, an absent field is not
// Set and null is Set with a nil Value.
type Optional[T any] struct {
	Set   bool
	Value *T
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// AccountUpdate is a change to an account's settings and limits; unset
// fields keep their value.
type AccountUpdate struct {
	DisplayName Optional[string] `json:"display_name"`
	// Settings is merged into the account's settings object: each key
	// replaces the stored one, a null value removes it (RFC 7396 at the
	// top level). api_base_url lives here.
	Settings        json.RawMessage   `json:"settings"`
	RateLimitPerSec Optional[float64] `json:"rate_limit_per_sec"`
	RateLimitBurst  Optional[int32]   `json:"rate_limit_burst"`
	MaxAttempts     Optional[int32]   `json:"max_attempts"`
}

// validate checks the update's values.
func (u *AccountUpdate) validate() error {
	if !u.DisplayName.Set && len(u.Settings) == 0 && !u.RateLimitPerSec.Set && !u.RateLimitBurst.Set && !u.MaxAttempts.Set {
		return invalidf("nothing to change: give display_name, settings, rate_limit_per_sec, rate_limit_burst or max_attempts")
	}
	if v := u.DisplayName.Value; u.DisplayName.Set && (v == nil || strings.TrimSpace(*v) == "" || len(*v) > 200) {
		return invalidf("display_name must be 1 to 200 characters")
	}
	if v := u.RateLimitPerSec.Value; v != nil && !(*v > 0 && *v <= 1e6) {
		return invalidf("rate_limit_per_sec must be above 0 (at most 1e6), or null for the channel default")
	}
	if v := u.RateLimitBurst.Value; v != nil && (*v < 1 || *v > 1e6) {
		return invalidf("rate_limit_burst must be 1 to 1000000, or null for the channel default")
	}
	if v := u.MaxAttempts.Value; v != nil && (*v < 1 || *v > 100) {
		return invalidf("max_attempts must be 1 to 100, or null for the default")
	}
	return nil
}

// mergeSettings applies patch (a JSON object) to settings.
func mergeSettings(settings, patch json.RawMessage) (json.RawMessage, error) {
	cur := map[string]json.RawMessage{}
	if len(settings) > 0 {
		if err := json.Unmarshal(settings, &cur); err != nil {
			return nil, fmt.Errorf("stored settings: %w", err)
		}
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil || p == nil {
		return nil, invalidf("settings must be a JSON object")
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(cur, k)
			continue
		}
		cur[k] = v
	}
	if raw, ok := cur["api_base_url"]; ok {
		var base string
		if err := json.Unmarshal(raw, &base); err != nil {
			return nil, invalidf("settings.api_base_url must be a string")
		}
		if u, err := url.Parse(base); err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, invalidf("settings.api_base_url must be an absolute http(s) URL")
		}
	}
	return json.Marshal(cur)
}

// AccountUpdate changes an account's display name, settings and limits.
// The new settings are checked by the channel's adapter (with the
// account's secrets) when the Service has a registry.
func (s *Service) AccountUpdate(ctx context.Context, tenantID, id uuid.UUID, u AccountUpdate) (*AccountInfo, error) {
	if err := u.validate(); err != nil {
		return nil, err
	}
	return s.accountChange(ctx, tenantID, id, "account.update", func(tx pgx.Tx, before *db.Account) (*db.Account, error) {
		l := db.AccountLimits{DisplayName: before.DisplayName, Settings: before.Settings,
			RateLimitPerSec: before.RateLimitPerSec, RateLimitBurst: before.RateLimitBurst, MaxAttempts: before.MaxAttempts}
		if u.DisplayName.Set {
			l.DisplayName = strings.TrimSpace(*u.DisplayName.Value)
		}
		if u.RateLimitPerSec.Set {
			l.RateLimitPerSec = u.RateLimitPerSec.Value
		}
		if u.RateLimitBurst.Set {
			l.RateLimitBurst = u.RateLimitBurst.Value
		}
		if u.MaxAttempts.Set {
			l.MaxAttempts = u.MaxAttempts.Value
		}
		if len(u.Settings) > 0 {
			merged, err := mergeSettings(before.Settings, u.Settings)
			if err != nil {
				return nil, err
			}
			l.Settings = merged
			if s.registry != nil && s.box != nil {
				if _, err := accounts.Reseal(s.box, s.registry, before, accounts.Change{Settings: merged}); err != nil {
					return nil, invalidErr(err)
				}
			}
		}
		return db.AccountUpdateLimits(ctx, tx, tenantID, id, l)
	})
}

// DefaultSecretGrace is how long a rotated-out webhook secret keeps
// verifying when the caller gives no grace period.
const DefaultSecretGrace = 24 * time.Hour

// MaxSecretGrace bounds the grace period of a webhook secret rotation.
const MaxSecretGrace = 30 * 24 * time.Hour

// AccountRotateWebhookSecret replaces the account's webhook secret; the
// previous one keeps verifying for grace (0: not at all). Webhooks signed
// with either are accepted during the grace period, within the account
// cache bound (accounts.CacheTTL) of the change.
func (s *Service) AccountRotateWebhookSecret(ctx context.Context, tenantID, id uuid.UUID, secret string, grace time.Duration) (*AccountInfo, error) {
	secret = strings.TrimRight(secret, "\r\n")
	if secret == "" {
		return nil, invalidf("the new webhook secret is empty")
	}
	if grace < 0 || grace > MaxSecretGrace {
		return nil, invalidf("grace must be between 0 and %s", MaxSecretGrace)
	}
	return s.accountChange(ctx, tenantID, id, "account.rotate_webhook_secret", func(tx pgx.Tx, before *db.Account) (*db.Account, error) {
		sealed, err := accounts.Reseal(s.box, s.registry, before, accounts.Change{WebhookSecret: &secret})
		if err != nil {
			return nil, invalidErr(err)
		}
		var until *time.Time
		if grace > 0 && before.WebhookSecretEnc != nil {
			t := s.now().Add(grace)
			until = &t
		}
		return db.AccountRotateWebhookSecret(ctx, tx, tenantID, id, sealed.WebhookSecretEnc, until)
	})
}

// AccountRotateCredentials replaces the account's credentials (a JSON
// object), checked by the channel's adapter when the Service has a
// registry. An account MIO disabled because its grant was refused is
// enabled again (its DisabledReason cleared); one an operator disabled
// stays disabled.
func (s *Service) AccountRotateCredentials(ctx context.Context, tenantID, id uuid.UUID, credentials json.RawMessage) (*AccountInfo, error) {
	var obj map[string]any
	if err := json.Unmarshal(credentials, &obj); err != nil || obj == nil {
		return nil, invalidf("credentials must be a JSON object")
	}
	return s.accountChange(ctx, tenantID, id, "account.rotate_credentials", func(tx pgx.Tx, before *db.Account) (*db.Account, error) {
		sealed, err := accounts.Reseal(s.box, s.registry, before, accounts.Change{Credentials: credentials})
		if err != nil {
			return nil, invalidErr(err)
		}
		return db.AccountSetCredentials(ctx, tx, tenantID, id, sealed.CredentialsEnc)
	})
}

// accountChange runs one audited change of an account: fn gets the row
// (locked by the update that follows in the same transaction) and returns
// the updated row, or nil when nothing changes.
func (s *Service) accountChange(ctx context.Context, tenantID, id uuid.UUID, action string,
	fn func(tx pgx.Tx, before *db.Account) (*db.Account, error)) (*AccountInfo, error) {
	var out *AccountInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		before, err := db.AccountGet(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		after, err := fn(tx, before)
		if err != nil {
			return err
		}
		if after == nil {
			out = s.info(before)
			return nil
		}
		out = s.info(after)
		return s.audit(ctx, tx, action, tenantID, id.String(), s.info(before), out)
	})
	return out, err
}

// invalidErr maps the accounts package's refusal to ErrInvalid.
func invalidErr(err error) error {
	var inv *accounts.InvalidError
	if errors.As(err, &inv) {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return err
}

// TenantOfAccount resolves an account id to its tenant.
func (s *Service) TenantOfAccount(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	r, err := db.AccountRouteGet(ctx, s.pool, id)
	if err != nil {
		return uuid.Nil, err
	}
	return r.TenantID, nil
}

func (s *Service) info(a *db.Account) *AccountInfo {
	return &AccountInfo{Account: a, HasCredentials: a.CredentialsEnc != nil, HasWebhookSecret: a.WebhookSecretEnc != nil,
		WebhookURL: WebhookURL(s.publicURL, a.ChannelType, a.ID), DisabledReason: a.DisabledReason,
		CredentialRenewal: accounts.Renewal(s.box, s.registry, a)}
}

// WebhookURL is the URL a platform must call for an account.
func WebhookURL(publicURL, channelType string, id uuid.UUID) string {
	return strings.TrimRight(publicURL, "/") + "/webhooks/" + channelType + "/" + id.String()
}
