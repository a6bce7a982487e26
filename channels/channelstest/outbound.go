package channelstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

// ErrorKind names the typed error an outbound call returned: "none",
// "rate_limited", "transient", "permanent", or "untyped" for anything the
// dispatcher could not classify.
func ErrorKind(err error) string {
	var rl *channels.RateLimitedError
	var tr *channels.TransientError
	var pe *channels.PermanentError
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &rl):
		return "rate_limited"
	case errors.As(err, &tr):
		return "transient"
	case errors.As(err, &pe):
		return "permanent"
	}
	return "untyped"
}

// Answer is a fake platform's canned answer: the headers (name, value
// pairs), then status and body.
func Answer(status int, body string, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// RequireGoldenJSON compares got with the golden file at path as JSON.
// With update it first rewrites the file with got, indented (the adapters'
// tests pass their -update flag).
func RequireGoldenJSON(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		var v any
		require.NoError(t, json.Unmarshal(got, &v))
		var pretty bytes.Buffer
		enc := json.NewEncoder(&pretty)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(v))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, pretty.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
