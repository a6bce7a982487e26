package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Operators' changes to accounts and tenants (package admin calls them in
// the transaction that also writes the audit row).

// Tenant statuses.
const (
	TenantActive   = "active"
	TenantDisabled = "disabled"
)

// AccountLimits are an account's editable settings: nil pointers mean the
// channel default.
type AccountLimits struct {
	DisplayName     string
	Settings        json.RawMessage
	RateLimitPerSec *float64
	RateLimitBurst  *int32
	MaxAttempts     *int32
}

// AccountUpdateLimits replaces an account's display name, settings and
// limits.
func AccountUpdateLimits(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, l AccountLimits) (*Account, error) {
	r, err := queries().AccountUpdateLimits(ctx, tx, &dbsqlc.AccountUpdateLimitsParams{TenantID: tenantID, ID: id,
		DisplayName: l.DisplayName, Settings: l.Settings, RateLimitPerSec: l.RateLimitPerSec,
		RateLimitBurst: l.RateLimitBurst, MaxAttempts: l.MaxAttempts})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}

// AccountRotateWebhookSecret stores a new sealed webhook secret; the
// current one keeps verifying until prevUntil (nil: not at all).
func AccountRotateWebhookSecret(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, secretEnc []byte, prevUntil *time.Time) (*Account, error) {
	r, err := queries().AccountRotateWebhookSecret(ctx, tx, &dbsqlc.AccountRotateWebhookSecretParams{
		TenantID: tenantID, ID: id, WebhookSecretEnc: secretEnc, PrevUntil: prevUntil})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}

// AccountSetCredentials replaces an account's sealed credentials. An
// account MIO disabled for a refused grant (a DisabledReason) is active
// again; one an operator disabled stays disabled.
func AccountSetCredentials(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, credEnc []byte) (*Account, error) {
	r, err := queries().AccountSetCredentials(ctx, tx, &dbsqlc.AccountSetCredentialsParams{
		TenantID: tenantID, ID: id, CredentialsEnc: credEnc})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}

// TenantSetStatus enables or disables a tenant.
func TenantSetStatus(ctx context.Context, tx DBTX, id uuid.UUID, status string) (*Tenant, error) {
	r, err := queries().TenantSetStatus(ctx, tx, &dbsqlc.TenantSetStatusParams{ID: id, Status: status})
	if err != nil {
		return nil, translate(err)
	}
	return tenantFrom(r), nil
}

// TenantPage returns a keyset page of tenants, oldest first.
func TenantPage(ctx context.Context, tx DBTX, after Cursor, limit int) ([]*Tenant, error) {
	rows, err := queries().TenantPage(ctx, tx, &dbsqlc.TenantPageParams{AfterCreatedAt: after.At, AfterID: after.ID, MaxRows: int32(limit)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Tenant, len(rows))
	for i, r := range rows {
		out[i] = tenantFrom(r)
	}
	return out, nil
}
