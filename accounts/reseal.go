package accounts

import (
	"context"
	"encoding/json"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// Change is an operator's change to an existing account: new settings
// and/or new secrets. Nil fields keep the row's value.
type Change struct {
	Settings      json.RawMessage
	Credentials   json.RawMessage
	WebhookSecret *string
}

// Resealed is the result of Reseal: the columns to write.
type Resealed struct {
	CredentialsEnc   []byte
	WebhookSecretEnc []byte
}

// Reseal validates row with the change applied (the channel's adapter must
// accept it, when registry is not nil) and returns its sealed secrets:
// the current ones resealed unchanged where the change keeps them. A
// refused configuration is an *InvalidError.
func Reseal(box *secretbox.Box, registry *channels.Registry, row *db.Account, c Change) (*Resealed, error) {
	cur, err := open(box, row)
	if err != nil {
		return nil, err
	}
	spec := &Spec{TenantID: row.TenantID, ID: row.ID, ChannelType: row.ChannelType, DisplayName: row.DisplayName,
		ExternalID: row.ExternalID, Settings: row.Settings, Credentials: cur.Credentials, WebhookSecret: cur.WebhookSecret}
	if c.Settings != nil {
		spec.Settings = c.Settings
	}
	if c.Credentials != nil {
		spec.Credentials = c.Credentials
	}
	if c.WebhookSecret != nil {
		spec.WebhookSecret = *c.WebhookSecret
	}
	if err := spec.Validate(registry); err != nil {
		return nil, err
	}
	credEnc, secretEnc, err := seal(box, row.ID, spec.Credentials, spec.WebhookSecret)
	if err != nil {
		return nil, err
	}
	return &Resealed{CredentialsEnc: credEnc, WebhookSecretEnc: secretEnc}, nil
}

// VerifyWebhook authenticates a webhook with the account's current
// webhook secret and, within the grace period after a rotation, with the
// previous one: a request either verifies is accepted.
func (a *Account) VerifyWebhook(ctx context.Context, req *channels.Request, now time.Time) error {
	err := a.Inbound.Verify(ctx, req)
	if err == nil || a.prevInbound == nil || !now.Before(a.prevUntil) {
		return err
	}
	if perr := a.prevInbound.Verify(ctx, req); perr == nil {
		return nil
	}
	return err
}

// buildPrevious builds the inbound adapter of the previous webhook secret
// while it is still in its grace period; errors leave it unbuilt (the
// current secret alone verifies).
func (r *Resolver) buildPrevious(a *Account, row *db.Account) {
	if row.WebhookSecretPrevEnc == nil || row.WebhookSecretPrevUntil == nil || !r.now().Before(*row.WebhookSecretPrevUntil) {
		return
	}
	if r.box == nil || a.Inbound == nil {
		return
	}
	prev, err := r.box.Open(row.WebhookSecretPrevEnc, webhookSecretAD(row.ID))
	if err != nil {
		return
	}
	ch, ok := r.registry.Get(row.ChannelType)
	if !ok {
		return
	}
	acct := a.Secrets
	acct.WebhookSecret = string(prev)
	in, err := ch.NewInbound(acct)
	if err != nil {
		return
	}
	a.prevInbound, a.prevUntil = in, *row.WebhookSecretPrevUntil
}
