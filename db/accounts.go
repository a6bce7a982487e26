package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Account statuses.
const (
	AccountActive   = "active"
	AccountDisabled = "disabled"
)

// Account is one channel install. Secret columns hold sealed bytes
// (secretbox); this package never sees plaintext secrets.
type Account struct {
	TenantID    uuid.UUID `json:"tenant_id"`
	ID          uuid.UUID `json:"id"`
	ChannelType string    `json:"channel_type"`
	DisplayName string    `json:"display_name"`
	ExternalID  string    `json:"external_id"`
	Status      string    `json:"status"`
	// DisabledReason is why MIO disabled the account (its grant was
	// refused); empty when it is active or an operator disabled it.
	DisabledReason   string          `json:"disabled_reason,omitempty"`
	Settings         json.RawMessage `json:"settings"`
	CredentialsEnc   []byte          `json:"-"`
	WebhookSecretEnc []byte          `json:"-"`
	// WebhookSecretPrevEnc is the sealed previous webhook secret, which
	// keeps verifying until WebhookSecretPrevUntil (after a rotation).
	WebhookSecretPrevEnc   []byte     `json:"-"`
	WebhookSecretPrevUntil *time.Time `json:"webhook_secret_prev_until,omitempty"`
	RateLimitPerSec        *float64   `json:"rate_limit_per_sec,omitempty"`
	RateLimitBurst         *int32     `json:"rate_limit_burst,omitempty"`
	MaxAttempts            *int32     `json:"max_attempts,omitempty"`
	CreatedAt              time.Time  `json:"created_at"`
	UpdatedAt              time.Time  `json:"updated_at"`
}

func accountFrom(r dbsqlc.MioAccount) *Account {
	return &Account{
		TenantID: r.TenantID, ID: r.ID, ChannelType: r.ChannelType, DisplayName: r.DisplayName,
		ExternalID: r.ExternalID, Status: r.Status, DisabledReason: r.DisabledReason, Settings: r.Settings,
		CredentialsEnc: r.CredentialsEnc, WebhookSecretEnc: r.WebhookSecretEnc,
		WebhookSecretPrevEnc: r.WebhookSecretPrevEnc, WebhookSecretPrevUntil: r.WebhookSecretPrevUntil,
		RateLimitPerSec: r.RateLimitPerSec, RateLimitBurst: r.RateLimitBurst, MaxAttempts: r.MaxAttempts,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// AccountInsertParams are the fields of a new account.
type AccountInsertParams struct {
	TenantID         uuid.UUID
	ID               uuid.UUID // zero: a new id
	ChannelType      string
	DisplayName      string
	ExternalID       string
	Settings         json.RawMessage // nil: {}
	CredentialsEnc   []byte
	WebhookSecretEnc []byte
	RateLimitPerSec  *float64
	RateLimitBurst   *int32
	MaxAttempts      *int32
}

// AccountInsert creates an account in the transaction's tenant.
func AccountInsert(ctx context.Context, tx DBTX, p *AccountInsertParams) (*Account, error) {
	id := p.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	settings := p.Settings
	if len(settings) == 0 {
		settings = json.RawMessage(`{}`)
	}
	r, err := queries().AccountInsert(ctx, tx, &dbsqlc.AccountInsertParams{
		TenantID: p.TenantID, ID: id, ChannelType: p.ChannelType, DisplayName: p.DisplayName,
		ExternalID: p.ExternalID, Settings: settings, CredentialsEnc: p.CredentialsEnc,
		WebhookSecretEnc: p.WebhookSecretEnc, RateLimitPerSec: p.RateLimitPerSec,
		RateLimitBurst: p.RateLimitBurst, MaxAttempts: p.MaxAttempts,
	})
	if err = translate(err); errors.Is(err, ErrUnknownChannelType) {
		return nil, fmt.Errorf("%w: %q", err, p.ChannelType)
	}
	if err != nil {
		return nil, err
	}
	return accountFrom(r), nil
}

// AccountGet returns one account of the tenant.
func AccountGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*Account, error) {
	r, err := queries().AccountGet(ctx, tx, &dbsqlc.AccountGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}

// AccountGetMany returns the tenant's accounts among ids (missing ones
// are left out), in no particular order.
func AccountGetMany(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) ([]*Account, error) {
	rs, err := queries().AccountGetMany(ctx, tx, &dbsqlc.AccountGetManyParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Account, len(rs))
	for i, r := range rs {
		out[i] = accountFrom(r)
	}
	return out, nil
}

// AccountList returns the tenant's accounts, optionally of one channel.
func AccountList(ctx context.Context, tx DBTX, tenantID uuid.UUID, channelType string) ([]*Account, error) {
	var ct *string
	if channelType != "" {
		ct = &channelType
	}
	rows, err := queries().AccountList(ctx, tx, &dbsqlc.AccountListParams{TenantID: tenantID, ChannelType: ct})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Account, len(rows))
	for i, r := range rows {
		out[i] = accountFrom(r)
	}
	return out, nil
}

// AccountPage returns a keyset page of the tenant's accounts, oldest
// first, after cursor after.
func AccountPage(ctx context.Context, tx DBTX, tenantID uuid.UUID, after Cursor, limit int) ([]*Account, error) {
	rows, err := queries().AccountPage(ctx, tx, &dbsqlc.AccountPageParams{TenantID: tenantID, AfterCreatedAt: after.At,
		AfterID: after.ID, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Account, len(rows))
	for i, r := range rows {
		out[i] = accountFrom(r)
	}
	return out, nil
}

// AccountSetStatus enables or disables an account; either clears its
// DisabledReason.
func AccountSetStatus(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, status string) (*Account, error) {
	r, err := queries().AccountSetStatus(ctx, tx, &dbsqlc.AccountSetStatusParams{TenantID: tenantID, ID: id, Status: status})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}

// AccountRoute is where a webhook's account id leads: its tenant and
// channel.
type AccountRoute struct {
	AccountID   uuid.UUID
	TenantID    uuid.UUID
	ChannelType string
}

// AccountRouteGet resolves an account id to its tenant without a tenant
// context (the routing table is not tenant-scoped and holds no secrets).
func AccountRouteGet(ctx context.Context, tx DBTX, accountID uuid.UUID) (*AccountRoute, error) {
	r, err := queries().AccountRoute(ctx, tx, &dbsqlc.AccountRouteParams{AccountID: accountID})
	if err != nil {
		return nil, translate(err)
	}
	return &AccountRoute{AccountID: r.AccountID, TenantID: r.TenantID, ChannelType: r.ChannelType}, nil
}

// AccountDisableRefused disables an active account whose credential grant
// the platform refused, recording reason, only while the account's sealed
// credentials are still credEnc (the ones refused). It reports whether
// the account was disabled.
func AccountDisableRefused(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, credEnc []byte, reason string) (bool, error) {
	n, err := queries().AccountDisableRefused(ctx, tx, &dbsqlc.AccountDisableRefusedParams{
		TenantID: tenantID, ID: id, CredentialsEnc: credEnc, DisabledReason: reason})
	if err != nil {
		return false, translate(err)
	}
	return n > 0, nil
}

// ChannelTypesUnknown returns the slugs of the list that mio.channel_types
// does not hold (registered or not), sorted.
func ChannelTypesUnknown(ctx context.Context, tx DBTX, slugs []string) ([]string, error) {
	out, err := queries().ChannelTypesUnknown(ctx, tx, &dbsqlc.ChannelTypesUnknownParams{Slugs: slugs})
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}
