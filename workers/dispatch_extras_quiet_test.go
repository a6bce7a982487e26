package workers

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestExtrasQuietAfterNoneFound: after a request for extras found none,
// claims of that tenant ask for none for extrasQuietFor; other tenants
// are not affected, and a request that found some ends the quiet.
func TestExtrasQuietAfterNoneFound(t *testing.T) {
	d := NewDispatcher(nil, DispatchConfig{})
	a, b := uuid.New(), uuid.New()
	t0 := time.Now()
	if !d.extrasWanted(a, t0) {
		t.Fatal("extras not wanted before any request")
	}
	d.extrasFound(a, false, t0)
	if d.extrasWanted(a, t0.Add(extrasQuietFor/2)) {
		t.Fatal("extras wanted right after a request found none")
	}
	if !d.extrasWanted(b, t0.Add(extrasQuietFor/2)) {
		t.Fatal("another tenant's empty request stopped this tenant's extras")
	}
	if !d.extrasWanted(a, t0.Add(extrasQuietFor+time.Millisecond)) {
		t.Fatal("extras still not wanted after the quiet period")
	}
	d.extrasFound(a, false, t0)
	d.extrasFound(a, true, t0.Add(time.Millisecond))
	if !d.extrasWanted(a, t0.Add(2*time.Millisecond)) {
		t.Fatal("a request that found extras did not end the quiet")
	}
}
