package envelope_test

import (
	"testing"

	"github.com/miohq/mio/envelope"
)

func TestStoredTraceparent(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for name, tc := range map[string]struct {
		env, want string
	}{
		"as written":         {`{"id":"x","text":"hi","trace_id":"` + tp + `"}`, tp},
		"as jsonb prints it": {`{"id": "x", "text": "hi", "trace_id": "` + tp + `", "received_at": "2026"}`, tp},
		"none":               {`{"id":"x","text":"hi"}`, ""},
		"in the text only":   {`{"id":"x","text":"\"trace_id\":\"` + tp + `\""}`, ""},
		"not a traceparent":  {`{"trace_id":"abc"}`, ""},
		"upper case":         {`{"trace_id":"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"}`, ""},
		"cut short":          {`{"trace_id":"` + tp[:40], ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := string(envelope.StoredTraceparent([]byte(tc.env))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStoredTraceparentAllocatesNothing: every pulled message is scanned,
// traced or not.
func TestStoredTraceparentAllocatesNothing(t *testing.T) {
	env := []byte(`{"id": "x", "text": "hi", "trace_id": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)
	untraced := []byte(`{"id": "x", "text": "hi", "received_at": "2026-01-01T00:00:00Z"}`)
	if n := testing.AllocsPerRun(100, func() {
		_ = envelope.StoredTraceparent(env)
		_ = envelope.StoredTraceparent(untraced)
	}); n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}
