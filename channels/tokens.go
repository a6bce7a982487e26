package channels

import (
	"context"
	"errors"
	"time"
)

// Platforms whose API tokens expire (Zoho Cliq's OAuth access tokens live
// an hour) keep a grant in the account's credentials — a refresh token, a
// client secret, a service-account key — and MIO exchanges it for access
// tokens before they expire. The channel reads the grant and knows its
// platform's token endpoint (TokenGranter, Grant); one renewal engine
// outside the adapters (package accounts) decides when to renew, shares
// the token across processes and disables an account whose grant is
// refused; the adapter asks a TokenSource for the token it sends with.

// TokenGranter is implemented by channels whose accounts may hold a
// credential grant instead of a static token.
type TokenGranter interface {
	// Grant reads the account's grant from its credentials: nil and no
	// error when the credentials hold none (a static token). A grant
	// that is present but malformed is an error wrapping
	// ErrInvalidConfig.
	Grant(acct Account) (Grant, error)
}

// Grant is one account's credential grant.
type Grant interface {
	// Kind names the grant in reasons and logs ("zoho refresh token").
	// Never a secret.
	Kind() string
	// Exchange obtains a new access token from the platform. A grant the
	// platform refuses for good (revoked, invalid client) is a
	// *GrantRefusedError; other failures are *TransientError (5xx,
	// network) or *PermanentError. Errors never hold a secret.
	Exchange(ctx context.Context) (*AccessToken, error)
}

// AccessToken is a token obtained from a grant.
type AccessToken struct {
	// Token is the secret sent to the platform.
	Token string
	// Lifetime is how long the platform says the token lives from now.
	Lifetime time.Duration
	// RefreshToken is the grant's next refresh token when the platform
	// rotates it with every exchange (Slack): the one just used is spent.
	// Empty when the grant's refresh token stands.
	RefreshToken string
}

// RotatingGrant is a Grant whose refresh token the platform replaces at
// every exchange (AccessToken.RefreshToken). The renewal engine keeps the
// latest one, sealed, with the access token it came with, and exchanges
// the grant only under the account's renewal lock, so a spent refresh
// token is never sent.
type RotatingGrant interface {
	Grant
	// WithRefreshToken returns the grant with the refresh token the
	// platform last issued instead of the credentials' one.
	WithRefreshToken(refreshToken string) Grant
}

// TokenSource gives an adapter the account's current access token. Errors
// are *TransientError, *PermanentError or wrap a *GrantRefusedError.
type TokenSource interface {
	// Token returns a token that has not expired, renewing it first when
	// it is due.
	Token(ctx context.Context) (string, error)
	// Renew is called after the platform refused stale (HTTP 401): it
	// returns a newer token, renewing it unless another caller already
	// did.
	Renew(ctx context.Context, stale string) (string, error)
}

// GrantRefusedError is a grant the platform refuses for good: the
// account cannot obtain tokens until its credentials change.
type GrantRefusedError struct {
	// Kind is the grant's Kind.
	Kind string
	// Reason is the platform's error code ("invalid_code"), never a
	// secret.
	Reason string
}

func (e *GrantRefusedError) Error() string { return e.Kind + " refused: " + e.Reason }

// ErrStaticTokenRefused marks a send refused (HTTP 401) with a static
// access token, which MIO does not renew. It is wrapped in a
// *PermanentError.
var ErrStaticTokenRefused = errors.New("the static access token was refused (it is not renewed: give the account a grant)")
