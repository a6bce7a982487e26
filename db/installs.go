package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// PendingInstall is an install begun by an operator and waiting for the
// platform's redirect (package install). Its secrets are sealed.
type PendingInstall struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	ChannelType string
	DisplayName string
	// Settings is the install's settings (a JSON object).
	Settings json.RawMessage
	// ClientEnc is the app's sealed client credentials (JSON).
	ClientEnc        []byte
	WebhookSecretEnc []byte
	// RedirectURI is the callback URL the platform was given.
	RedirectURI string
	// ReturnURL is where the browser goes after the install; empty: a
	// page of MIO's.
	ReturnURL string
	// CreatedBy is the actor who began the install.
	CreatedBy string
	ExpiresAt time.Time
}

// PendingInstallInsert stores a pending install in the transaction's
// tenant.
func PendingInstallInsert(ctx context.Context, tx DBTX, p *PendingInstall) error {
	settings := p.Settings
	if len(settings) == 0 {
		settings = json.RawMessage(`{}`)
	}
	return translate(queries().PendingInstallInsert(ctx, tx, &dbsqlc.PendingInstallInsertParams{
		TenantID: p.TenantID, ID: p.ID, ChannelType: p.ChannelType, DisplayName: p.DisplayName,
		Settings: settings, ClientEnc: p.ClientEnc, WebhookSecretEnc: p.WebhookSecretEnc,
		RedirectUri: p.RedirectURI, ReturnUrl: p.ReturnURL, CreatedBy: p.CreatedBy, ExpiresAt: p.ExpiresAt}))
}

// PendingInstallTake deletes and returns the tenant's pending install id of
// channelType unless it expired by now: ErrNotFound when there is none
// (never begun, taken already, expired). The row stays locked until tx
// ends, so a concurrent take of the same install waits and finds nothing.
func PendingInstallTake(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, channelType string, now time.Time) (*PendingInstall, error) {
	r, err := queries().PendingInstallTake(ctx, tx, &dbsqlc.PendingInstallTakeParams{
		TenantID: tenantID, ID: id, ChannelType: channelType, Now: now})
	if err != nil {
		return nil, translate(err)
	}
	return &PendingInstall{TenantID: r.TenantID, ID: r.ID, ChannelType: r.ChannelType, DisplayName: r.DisplayName,
		Settings: r.Settings, ClientEnc: r.ClientEnc, WebhookSecretEnc: r.WebhookSecretEnc,
		RedirectURI: r.RedirectUri, ReturnURL: r.ReturnUrl, CreatedBy: r.CreatedBy, ExpiresAt: r.ExpiresAt}, nil
}

// PendingInstallPurge deletes the tenant's installs that expired before
// before and returns how many.
func PendingInstallPurge(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time) (int64, error) {
	n, err := queries().PendingInstallPurge(ctx, tx, &dbsqlc.PendingInstallPurgeParams{TenantID: tenantID, Before: before})
	return n, translate(err)
}

// PendingInstallCount counts the tenant's pending installs, expired ones
// included.
func PendingInstallCount(ctx context.Context, tx DBTX, tenantID uuid.UUID) (int64, error) {
	n, err := queries().PendingInstallCount(ctx, tx, &dbsqlc.PendingInstallCountParams{TenantID: tenantID})
	return n, translate(err)
}

// AccountByExternalID returns the tenant's oldest account of channelType
// with that external id, or ErrNotFound.
func AccountByExternalID(ctx context.Context, tx DBTX, tenantID uuid.UUID, channelType, externalID string) (*Account, error) {
	r, err := queries().AccountByExternalID(ctx, tx, &dbsqlc.AccountByExternalIDParams{
		TenantID: tenantID, ChannelType: channelType, ExternalID: externalID})
	if err != nil {
		return nil, translate(err)
	}
	return accountFrom(r), nil
}
