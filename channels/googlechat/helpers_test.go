package googlechat

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/channelstest"
)

// hs256 signs claims with HMAC, keyed with a public value: an algorithm
// confusion attempt.
func hs256(t testing.TB, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = channelstest.FakeChatKeyID
	s, err := tok.SignedString([]byte("public"))
	require.NoError(t, err)
	return s
}

// none is an unsigned token (alg none).
func none(t testing.TB, claims jwt.MapClaims) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": channelstest.FakeChatKeyID})
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
