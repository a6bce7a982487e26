// Package accounts is the one home of installed channel accounts at run
// time. It resolves an account for a webhook (by channel type and account
// id: mio.account_routes names the tenant, the row is then read under that
// tenant's row-level security) and for sending or fetching (by tenant and
// account id), opens the account's sealed credentials and webhook secret,
// and builds its channel adapters. It also validates a new account's
// configuration against the channel registry and seals its secrets before
// they are written. Nothing else in MIO opens or seals account secrets.
//
// # The cache and its one rule
//
// A process builds one Resolver and shares it: the webhook handler, the
// dispatcher and the enrich worker read through it. A resolved account is
// kept for at most CacheTTL (5 s); an id that names no account for at most
// AbsentTTL (1 s), which sheds floods of made-up webhook URLs. So a change
// to an account made anywhere — disabled, enabled, new credentials, limits,
// by `mio admin` or by another replica — takes effect in every process
// within CacheTTL. A change the process makes itself (the dispatcher
// disabling an account whose endpoint is gone) also calls Forget and takes
// effect there at once. The one exception by design is the send API,
// which checks the account's status in its own transaction, at once.
//
// # Secrets at rest
//
// Credentials (JSON) and the webhook secret are sealed with the master key
// (secretbox), bound to "<account id>/credentials" and
// "<account id>/webhook_secret". Those bytes are part of the stored
// format: rows sealed by earlier versions must keep opening.
//
// Internal to MIO; not a stable API.
package accounts

import (
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
)

// CacheTTL bounds how long a resolved account is reused: a change to an
// account takes effect in every process within it.
const CacheTTL = 5 * time.Second

// AbsentTTL is how long an id that names no account is remembered.
const AbsentTTL = time.Second

var (
	// ErrUnknown: no active account of that channel type has this id (the
	// webhook path answers 404).
	ErrUnknown = errors.New("unknown, disabled or mismatched account")
	// ErrNotFound: the tenant has no account with this id.
	ErrNotFound = errors.New("account not found")
	// ErrCannotSend marks an account that cannot send: not found, an
	// unknown channel or one without outbound support, secrets that do not
	// open, or a configuration the adapter refuses. The dispatcher makes
	// its messages dead letters with the reason.
	ErrCannotSend = errors.New("account cannot send")
)

// Account is an installed account as the process uses it: what callers
// need of its row, its secrets opened, and its adapters built. It is
// shared by every caller until it expires: treat it as read-only.
type Account struct {
	ID          uuid.UUID
	TenantID    uuid.UUID
	ChannelType string
	// Status is db.AccountActive or db.AccountDisabled.
	Status string
	// MaxAttempts is the account's own number of send attempts per series;
	// nil: the dispatcher's default.
	MaxAttempts *int32
	// RateLimited: the account sets its own rate limit.
	RateLimited bool
	// Capabilities are the channel's (zero for a channel not in the
	// registry).
	Capabilities channels.Capabilities
	// Secrets is the account as adapters read it: settings, opened
	// credentials and webhook secret.
	Secrets channels.Account
	// Inbound verifies and parses the account's webhooks; nil when it
	// cannot (Resolver.Inbound then returns why).
	Inbound channels.Inbound
	// Outbound sends; nil when it cannot (Resolver.Outbound then returns
	// an error wrapping ErrCannotSend).
	Outbound channels.Outbound

	// prevInbound verifies with the previous webhook secret until
	// prevUntil, after a rotation (VerifyWebhook).
	prevInbound channels.Inbound
	prevUntil   time.Time

	openErr     error // the secrets did not open
	inboundErr  error // why Inbound is nil
	outboundErr error // why Outbound is nil, wrapping ErrCannotSend
}
