package channelstest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/miohq/mio/channels"
)

// CheckDecodesLikeEncodingJSON decodes data into two fresh values of
// newV() — with channels.UnmarshalJSON and with encoding/json — and fails
// unless both refuse it or both accept it with equal values: the adapters'
// decoder must accept exactly what encoding/json accepted.
func CheckDecodesLikeEncodingJSON(t testing.TB, data []byte, newV func() any) {
	t.Helper()
	v2, v1 := newV(), newV()
	err2 := channels.UnmarshalJSON(data, v2)
	err1 := json.Unmarshal(data, v1)
	switch {
	case (err1 == nil) != (err2 == nil):
		t.Fatalf("decoders disagree on %q: encoding/json: %v; channels.UnmarshalJSON: %v", data, err1, err2)
	case err1 == nil && !reflect.DeepEqual(v1, v2):
		t.Fatalf("decoders disagree on %q:\nencoding/json:         %+v\nchannels.UnmarshalJSON: %+v", data, v1, v2)
	}
}

// FuzzDecodesLikeEncodingJSON runs CheckDecodesLikeEncodingJSON as a fuzz
// target over an adapter's bodies: the hostile bodies, the adapter's
// fixtures in dir, and seeds.
func FuzzDecodesLikeEncodingJSON(f *testing.F, dir string, newV func() any, seeds ...string) {
	SeedBodies(f, func(b []byte) { f.Add(b) })
	for _, fx := range ReadFixtures(f, dir) {
		f.Add(fx.Body)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { CheckDecodesLikeEncodingJSON(t, body, newV) })
}
