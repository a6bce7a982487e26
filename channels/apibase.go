package channels

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// SettingAPIBaseURL is the account setting that points an adapter at
// another API base than the platform's public one: a self-hosted Telegram
// Bot API server, a Discord REST proxy, GovSlack, a local fake in tests.
const SettingAPIBaseURL = "api_base_url"

// APIBasePolicy says which API base URLs account settings may name. The
// zero value is the production policy: absolute https URLs only.
type APIBasePolicy struct {
	// AllowHTTP permits plain http:// bases on any host (MIO_ENV=dev).
	// Default false.
	AllowHTTP bool
	// HTTPHosts are the hosts (names or IP literals, port ignored) whose
	// bases may be plain http:// (MIO_API_ALLOW_HTTP_HOSTS). Default none.
	HTTPHosts []string
}

// Check validates one API base URL: absolute, http(s), a host, no query,
// fragment or user info, and https unless the policy allows http for its
// host. It returns the URL without trailing slashes. Errors wrap
// ErrInvalidConfig and name what ("slack settings api_base_url").
func (p APIBasePolicy) Check(what, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%w: %s %q is not an absolute URL", ErrInvalidConfig, what, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: %s must not carry user info, a query or a fragment", ErrInvalidConfig, what)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !p.HTTPAllowed(u.Hostname()) {
			return "", fmt.Errorf("%w: %s %q must be https (http only with MIO_ENV=dev or a host in MIO_API_ALLOW_HTTP_HOSTS)", ErrInvalidConfig, what, raw)
		}
	default:
		return "", fmt.Errorf("%w: %s %q is not an http(s) URL", ErrInvalidConfig, what, raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// HTTPAllowed reports whether plain http may be used with host.
func (p APIBasePolicy) HTTPAllowed(host string) bool {
	if p.AllowHTTP {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.HTTPHosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

// AccountAPIBase returns an account's API base: its settings'
// api_base_url when set (checked by Check), else def. channel names the
// adapter in errors ("telegram"). Settings that are not a JSON object are
// an error wrapping ErrInvalidConfig.
func (p APIBasePolicy) AccountAPIBase(channel string, settings json.RawMessage, def string) (string, error) {
	var s struct {
		APIBaseURL string `json:"api_base_url"`
	}
	if err := DecodeObject(channel+" settings", settings, &s); err != nil {
		return "", err
	}
	if s.APIBaseURL == "" {
		return strings.TrimRight(def, "/"), nil
	}
	return p.Check(channel+" settings "+SettingAPIBaseURL, s.APIBaseURL)
}

// BaseHost is the host (without port) of an API base URL, "" when it has
// none. Adapters add it to the hosts attachments may be downloaded from.
func BaseHost(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
