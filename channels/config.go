package channels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// DecodeObject decodes an account's settings or credentials JSON into v,
// the adapter's typed view of it. Absent, blank or null input leaves v
// untouched (both are optional as a whole); anything but a JSON object, or
// an object that does not fit v, is an error wrapping ErrInvalidConfig and
// naming what ("slack credentials"). Decoding into &struct{}{} checks that
// raw is an object without reading any key.
func DecodeObject(what string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] != '{' {
		return fmt.Errorf("%w: %s: not a JSON object", ErrInvalidConfig, what)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, what, err)
	}
	return nil
}

// HasSpaceOrControl reports whether s holds whitespace or an ASCII control
// character. A token sent in an HTTP header (Authorization) may hold
// neither: adapters refuse such credentials as ErrInvalidConfig.
func HasSpaceOrControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// IsHTTPURL reports whether s is an absolute http or https URL with a
// host, as account settings (API bases, endpoints) and webhook attachment
// URLs must be.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
