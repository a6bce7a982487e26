package accounts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// InvalidError is an account configuration that cannot work: an unknown
// channel type, settings or credentials that are not JSON objects, or a
// configuration the channel's adapter refuses.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }

func (e *InvalidError) Unwrap() error { return e.Err }

func invalidf(format string, args ...any) error {
	return &InvalidError{Err: fmt.Errorf(format, args...)}
}

// Spec is a new account as an operator describes it, its secrets in plain
// text.
type Spec struct {
	TenantID uuid.UUID
	// ID is the new account's id; its sealed secrets are bound to it.
	ID          uuid.UUID
	ChannelType string
	DisplayName string
	ExternalID  string
	// Settings is plain JSON (an object) of non-secret adapter settings.
	Settings json.RawMessage
	// Credentials is the adapter's secret JSON (an object), sealed at rest.
	Credentials json.RawMessage
	// WebhookSecret verifies inbound webhooks; sealed at rest.
	WebhookSecret string
}

// Validate checks the spec before anything is written: a channel type of
// the slug's form, settings and credentials that are JSON objects and,
// when registry is not nil, a channel of the registry and a configuration
// its adapter accepts for webhooks (without a registry the database's
// mio.channel_types refuses an unknown slug). Every failure is an
// *InvalidError.
func (s *Spec) Validate(registry *channels.Registry) error {
	if !envelope.ValidChannelType(s.ChannelType) {
		return invalidf("channel type %q: want a slug of lower-case letters, digits and _", s.ChannelType)
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"settings", s.Settings}, {"credentials", s.Credentials}} {
		if len(f.raw) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(f.raw, &obj); err != nil {
			return invalidf("%s must be a JSON object: %v", f.name, err)
		}
	}
	if registry == nil {
		return nil
	}
	ch, ok := registry.Get(s.ChannelType)
	if !ok {
		return invalidf("channel type %q: want one of %s", s.ChannelType, strings.Join(registry.Types(), ", "))
	}
	if _, err := ch.NewInbound(s.account()); err != nil {
		return &InvalidError{Err: err}
	}
	return nil
}

// Seal seals the spec's secrets with box, bound to its id, and returns
// the row to insert (db.AccountInsert). box may be nil when the spec has
// no secrets.
func (s *Spec) Seal(box *secretbox.Box) (*db.AccountInsertParams, error) {
	if s.ID == uuid.Nil {
		return nil, errors.New("accounts: a new account needs its id before its secrets are sealed")
	}
	credEnc, secretEnc, err := seal(box, s.ID, s.Credentials, s.WebhookSecret)
	if err != nil {
		return nil, err
	}
	return &db.AccountInsertParams{
		TenantID: s.TenantID, ID: s.ID, ChannelType: s.ChannelType, DisplayName: s.DisplayName,
		ExternalID: s.ExternalID, Settings: s.Settings, CredentialsEnc: credEnc, WebhookSecretEnc: secretEnc,
	}, nil
}

// account is the spec as an adapter reads it.
func (s *Spec) account() channels.Account {
	return channels.Account{ID: s.ID, TenantID: s.TenantID, ExternalID: s.ExternalID, Settings: s.Settings,
		Credentials: s.Credentials, WebhookSecret: s.WebhookSecret}
}
