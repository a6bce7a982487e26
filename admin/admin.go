// Package admin holds MIO's operator operations — tenants, accounts, API
// and admin tokens — independent of transport. The `mio admin` CLI calls it
// today; the admin HTTP API will call the same functions. A new account is
// validated and its secrets sealed by package accounts before it reaches
// the database; secrets are never returned.
//
// Internal to MIO; not a stable API.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// ErrInvalid wraps every validation failure of an operation's input.
var ErrInvalid = errors.New("invalid input")

// Service performs admin operations.
type Service struct {
	pool      *pgxpool.Pool
	box       *secretbox.Box // nil: operations needing secrets fail
	publicURL string
}

// New returns a Service. box may be nil when no master key is configured;
// then creating accounts with secrets fails with a clear error.
func New(pool *pgxpool.Pool, box *secretbox.Box, publicURL string) *Service {
	return &Service{pool: pool, box: box, publicURL: strings.TrimRight(publicURL, "/")}
}

// TenantCreate creates a tenant.
func (s *Service) TenantCreate(ctx context.Context, name string) (*db.Tenant, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, fmt.Errorf("%w: tenant name must be 1 to 200 characters", ErrInvalid)
	}
	return db.TenantInsert(ctx, s.pool, uuid.Nil, name)
}

// TenantList lists tenants.
func (s *Service) TenantList(ctx context.Context) ([]*db.Tenant, error) {
	return db.TenantList(ctx, s.pool)
}

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
}

// AccountCreate validates and stores an account with sealed secrets.
func (s *Service) AccountCreate(ctx context.Context, p AccountCreateParams) (*AccountInfo, error) {
	if strings.TrimSpace(p.DisplayName) == "" {
		p.DisplayName = p.ChannelType
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
		acct, err = db.AccountInsert(ctx, tx, row)
		return err
	})
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
		if err == nil {
			out = s.info(a)
		}
		return err
	})
	return out, err
}

// AccountSetStatus enables or disables an account.
func (s *Service) AccountSetStatus(ctx context.Context, tenantID, id uuid.UUID, status string) (*AccountInfo, error) {
	var out *AccountInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		a, err := db.AccountSetStatus(ctx, tx, tenantID, id, status)
		if err == nil {
			out = s.info(a)
		}
		return err
	})
	return out, err
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
		WebhookURL: WebhookURL(s.publicURL, a.ChannelType, a.ID)}
}

// WebhookURL is the URL a platform must call for an account.
func WebhookURL(publicURL, channelType string, id uuid.UUID) string {
	return strings.TrimRight(publicURL, "/") + "/webhooks/" + channelType + "/" + id.String()
}

// TokenCreate creates an API token for a tenant and returns it in plain
// text, the only time it is ever visible.
func (s *Service) TokenCreate(ctx context.Context, tenantID uuid.UUID, name string, roles []db.Role) (string, *db.APIToken, error) {
	if strings.TrimSpace(name) == "" {
		return "", nil, fmt.Errorf("%w: token name is required", ErrInvalid)
	}
	if len(roles) == 0 {
		return "", nil, fmt.Errorf("%w: at least one role (consume, produce, read) is required", ErrInvalid)
	}
	for _, r := range roles {
		if !r.Valid() {
			return "", nil, fmt.Errorf("%w: role %q: want consume, produce or read", ErrInvalid, r)
		}
	}
	roles = slices.Clone(roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	token, hash := db.NewAPITokenSecret(tenantID)
	var tok *db.APIToken
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		if _, err := db.TenantGet(ctx, tx, tenantID); err != nil {
			return fmt.Errorf("tenant %s: %w", tenantID, err)
		}
		var err error
		tok, err = db.APITokenInsert(ctx, tx, tenantID, name, roles, hash)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return token, tok, nil
}

// AdminTokenCreate creates an admin token.
func (s *Service) AdminTokenCreate(ctx context.Context, name string, roles []db.AdminRole) (string, *db.AdminToken, error) {
	token, hash := db.NewAdminTokenSecret()
	t, err := db.AdminTokenInsert(ctx, s.pool, name, roles, hash)
	if err != nil {
		return "", nil, err
	}
	return token, t, nil
}
