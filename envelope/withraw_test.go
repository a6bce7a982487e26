package envelope

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWithRaw(t *testing.T) {
	for _, tc := range []struct {
		name, stored, raw, want string
	}{
		{"jsonb's text form", `{"id": "m1", "text": "hi <b>"}`, `{"k": 1}`, `{"id": "m1", "text": "hi <b>","raw":{"k": 1}}`},
		{"compact", `{"id":"m1"}`, `[1,2]`, `{"id":"m1","raw":[1,2]}`},
		{"empty object", `{}`, `{"k":1}`, `{"raw":{"k":1}}`},
		{"empty object with space", `{ }`, `true`, `{ "raw":true}`},
		{"surrounding space", " {\"id\":\"m1\"}\n", `1`, `{"id":"m1","raw":1}`},
		{"no raw", `{"id":"m1"}`, ``, `{"id":"m1"}`},
		{"raw not JSON", `{"id":"m1"}`, `chat_id=1&text=hi`, `{"id":"m1"}`},
		{"raw truncated", `{"id":"m1"}`, `{"k":`, `{"id":"m1"}`},
		{"stored not an object", `["m1"]`, `{"k":1}`, `["m1"]`},
		{"stored empty", ``, `{"k":1}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(WithRaw([]byte(tc.stored), []byte(tc.raw)))
			if got != tc.want {
				t.Fatalf("WithRaw(%q, %q) = %q, want %q", tc.stored, tc.raw, got, tc.want)
			}
		})
	}
}

// TestWithRawAsDecoded: the splice reads as the envelope decoded with
// Raw set, the form GET /v1/messages/{id} encodes.
func TestWithRawAsDecoded(t *testing.T) {
	stored := []byte(`{"id": "0192f0c4-8f5e-7a4b-9c1d-2e3f4a5b6c7d", "text": "a \"quoted\" <tag> & more", "channel_type": "slack", "conversation": {"id": "C1", "type": "channel"}}`)
	raw := []byte(`{"event":{"text":"a \"quoted\" <tag> & more"}}`)
	var spliced, decoded Message
	if err := json.Unmarshal(WithRaw(stored, raw), &spliced); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored, &decoded); err != nil {
		t.Fatal(err)
	}
	decoded.Raw = raw
	a, _ := json.Marshal(&spliced)
	b, _ := json.Marshal(&decoded)
	if !bytes.Equal(a, b) {
		t.Fatalf("spliced %s\ndecoded %s", a, b)
	}
}

// FuzzWithRaw: whatever the inputs, a stored JSON object stays a JSON
// object, with "raw" exactly when raw is JSON.
func FuzzWithRaw(f *testing.F) {
	f.Add([]byte(`{"id":"m1"}`), []byte(`{"k":1}`))
	f.Add([]byte(`{}`), []byte(`null`))
	f.Add([]byte(` { } `), []byte(`"s"`))
	f.Add([]byte(`{"raw":1}`), []byte(`x`))
	f.Fuzz(func(t *testing.T, stored, raw []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(stored, &obj) != nil || obj == nil {
			return
		}
		if _, ok := obj["raw"]; ok {
			return // stored envelopes never hold raw
		}
		out := WithRaw(stored, raw)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("WithRaw(%q, %q) = %q: %v", stored, raw, out, err)
		}
		_, has := got["raw"]
		if want := len(raw) > 0 && json.Valid(raw); has != want {
			t.Fatalf("WithRaw(%q, %q) = %q: raw present %v, want %v", stored, raw, out, has, want)
		}
		if len(got)-len(obj) != map[bool]int{true: 1, false: 0}[has] {
			t.Fatalf("WithRaw(%q, %q) = %q: keys %d from %d", stored, raw, out, len(got), len(obj))
		}
	})
}
