package bridge_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/bridge"
)

func TestToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                "%",
		"C0123":           "C0123",
		"-100123456":      "-100123456",
		"a.b c":           "a%2Eb%20c",
		"*":               "%2A",
		">":               "%3E",
		"%41":             "%2541",
		"ü":               "%C3%BC",
		"user@x.com":      "user@x%2Ecom",
		"15551234567:wa":  "15551234567:wa",
		"tab\there\r\n":   "tab%09here%0D%0A",
		"$JS.API.STREAM.": "%24JS%2EAPI%2ESTREAM%2E",
	} {
		require.Equal(t, want, bridge.Token(in), "%q", in)
	}
}

// unescape inverts bridge.Token.
func unescape(tok string) (string, bool) {
	if tok == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '%' {
			b.WriteByte(tok[i])
			continue
		}
		if i+2 >= len(tok) {
			return "", false
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// FuzzToken: a token never holds subject syntax and decodes back to its
// value (so escaping is one-to-one).
func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "a.b", "*", ">", " ", "%", "%%", "ü", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := bridge.Token(s)
		require.NotEmpty(t, tok)
		require.False(t, strings.ContainsAny(tok, ".*> \t\r\n\x00"), "%q -> %q", s, tok)
		for i := 0; i < len(tok); i++ {
			require.Less(t, tok[i], byte(0x80), "ASCII only: %q", tok)
		}
		back, ok := unescape(tok)
		require.True(t, ok, "%q", tok)
		require.Equal(t, s, back)
	})
}

func TestSubject(t *testing.T) {
	t.Parallel()
	require.Equal(t, "mio.outbound_status.slack.A%2E1.C%20X.%",
		bridge.Subject(bridge.SubjectOutboundStatus, "slack", "A.1", "C X", ""))
}
