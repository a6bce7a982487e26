package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Installer is implemented by channels whose accounts can be installed in
// one click: an operator names the platform app (its client credentials),
// MIO sends the browser to the platform's consent page, and the platform
// redirects back to MIO's callback with a code that MIO exchanges for the
// account's credentials. Package install keeps the state between the two
// (signed, expiring, single-use); the channel knows its platform's pages,
// parameters and token endpoint.
type Installer interface {
	// InstallURL checks app and returns the platform's consent page URL,
	// which redirects the browser to redirectURI with state. Errors wrap
	// ErrInvalidConfig.
	InstallURL(app InstallApp, redirectURI, state string) (string, error)
	// CompleteInstall reads the platform's redirect to redirectURI (its
	// query, state already checked), exchanges the code it carries and
	// returns the account's configuration. A consent the user or the
	// platform refused is an *InstallRefusedError; the exchange's failures
	// are *TransientError or *PermanentError. Errors never hold a secret.
	CompleteInstall(ctx context.Context, app InstallApp, redirectURI string, query url.Values) (*Installed, error)
}

// InstallApp is the platform app an install is made with.
type InstallApp struct {
	// Credentials is the app's secret JSON: client_id and client_secret,
	// and what else the platform needs (Discord: the bot_token).
	Credentials json.RawMessage
	// Settings is the install's settings (a JSON object): the account's
	// settings (api_base_url, …) and the consent page's parameters
	// (scopes, …), which the channel leaves out of the account's.
	Settings json.RawMessage
	// WebhookSecret is the account's webhook secret (Slack's signing
	// secret, Discord's public key); checked where the channel needs one.
	WebhookSecret string
}

// Installed is an installed account's configuration.
type Installed struct {
	// ExternalID names the installation on the platform (Slack's team id,
	// Discord's guild id, …); an account of the tenant with the same
	// channel and external id is updated instead of a new one created.
	ExternalID string
	// Credentials is the account's secret JSON.
	Credentials json.RawMessage
	// Settings is the account's settings (a JSON object).
	Settings json.RawMessage
}

// InstallRefusedError is a platform redirect that carries no grant: the
// user declined, or the platform refused the request.
type InstallRefusedError struct {
	// Reason is the platform's error code ("access_denied"), never a
	// secret.
	Reason string
}

func (e *InstallRefusedError) Error() string { return "install refused: " + e.Reason }

// SplitInstallSettings reads an install's settings (a JSON object; absent
// is empty): the keys named in params are the consent page's parameters,
// returned as strings (a JSON string, or an array of strings joined with
// sep) and left out of the account's settings, which are the other keys.
// Errors wrap ErrInvalidConfig.
func SplitInstallSettings(what string, raw json.RawMessage, sep string, params ...string) (json.RawMessage, map[string]string, error) {
	var all map[string]json.RawMessage
	if err := DecodeObject(what, raw, &all); err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	for _, k := range params {
		v, ok := all[k]
		if !ok {
			continue
		}
		delete(all, k)
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, nil, fmt.Errorf("%w: %s %s must be a string or an array of strings", ErrInvalidConfig, what, k)
		}
		out[k] = strings.Join(list, sep)
	}
	if all == nil {
		all = map[string]json.RawMessage{}
	}
	account, err := json.Marshal(all)
	if err != nil {
		return nil, nil, err
	}
	return account, out, nil
}

// InstallClient is an app's OAuth client in InstallApp.Credentials.
type InstallClient struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// ReadInstallClient reads client_id and client_secret (both required) from
// an app's credentials into dst, which embeds or is an InstallClient and
// may hold more keys. Errors wrap ErrInvalidConfig.
func ReadInstallClient(what string, creds json.RawMessage, dst any, c *InstallClient) error {
	if err := DecodeObject(what, creds, dst); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{{"client_id", c.ClientID}, {"client_secret", c.ClientSecret}} {
		if f.value == "" {
			return fmt.Errorf("%w: %s %s is required (the app's OAuth client)", ErrInvalidConfig, what, f.name)
		}
		if HasSpaceOrControl(f.value) {
			return fmt.Errorf("%w: %s %s contains whitespace or control characters", ErrInvalidConfig, what, f.name)
		}
	}
	return nil
}

// InstallQueryError reads a redirect's error parameter: an
// *InstallRefusedError when it has one, nil otherwise.
func InstallQueryError(query url.Values) error {
	code := query.Get("error")
	if code == "" {
		return nil
	}
	code = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, code)
	return &InstallRefusedError{Reason: code[:min(len(code), 64)]}
}
