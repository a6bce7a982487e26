package channelstest

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// tokenEndpoint is what the fakes' OAuth token endpoints share: the
// request count, the client's authentication, the form and its
// grant_type switch, and the access tokens issued with their expiry. The
// fake holds its own mutex around serve and the token methods.
type tokenEndpoint struct {
	// basicAuth: the client authenticates with HTTP Basic, checked before
	// the form is read (refused with badClient); otherwise grants that
	// take a client check it in the form (formClient).
	basicAuth bool
	// client returns the client id and secret accepted.
	client func() (id, secret string)
	// badClient, badForm: the error codes of a refused client and of a
	// form that does not parse (default unsupported_grant_type).
	badClient, badForm string
	// fault, when set, may answer a request itself before anything else
	// (an injected failure) and then returns true.
	fault func(w http.ResponseWriter) bool
	// refuse answers an OAuth error (code, and a description some
	// platforms add) in the platform's format.
	refuse func(w http.ResponseWriter, code, description string)

	tokens   map[string]time.Time // issued access token → expiry (zero: never)
	issued   int
	requests int
}

// grant answers a token request of one grant type, its form parsed.
type grant func(w http.ResponseWriter, form url.Values)

// serve counts a token request and hands it to the grant its grant_type
// names; any other grant type is refused unsupported_grant_type.
func (e *tokenEndpoint) serve(w http.ResponseWriter, r *http.Request, grants map[string]grant) {
	e.requests++
	if e.fault != nil && e.fault(w) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if e.basicAuth {
		id, secret, ok := r.BasicAuth()
		if wantID, wantSecret := e.client(); !ok || id != wantID || secret != wantSecret {
			e.refuse(w, e.badClient, "")
			return
		}
	}
	if r.ParseForm() != nil {
		e.refuse(w, cmp.Or(e.badForm, "unsupported_grant_type"), "Invalid grant_type")
		return
	}
	g, ok := grants[r.PostForm.Get("grant_type")]
	if !ok {
		e.refuse(w, "unsupported_grant_type", "Invalid grant_type")
		return
	}
	g(w, r.PostForm)
}

// formClient reports whether form carries the accepted client_id and
// client_secret.
func (e *tokenEndpoint) formClient(form url.Values) bool {
	id, secret := e.client()
	return form.Get("client_id") == id && form.Get("client_secret") == secret
}

// issue records a new access token, named by format with its number,
// valid until exp (zero: never), and returns it.
func (e *tokenEndpoint) issue(format string, exp time.Time) string {
	e.issued++
	tok := fmt.Sprintf(format, e.issued)
	e.tokens[tok] = exp
	return tok
}

// check reports whether tok was issued, and whether it is still valid at
// now.
func (e *tokenEndpoint) check(tok string, now time.Time) (known, valid bool) {
	exp, known := e.tokens[tok]
	return known, known && (exp.IsZero() || now.Before(exp))
}

// expireAll makes every issued token expired (the platform revoking them
// early).
func (e *tokenEndpoint) expireAll() {
	for tok := range e.tokens {
		e.tokens[tok] = time.Unix(1, 0)
	}
}
