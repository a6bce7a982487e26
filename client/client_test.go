package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetryManyAttempts: a retry policy of many attempts waits at most Max
// between them (the doubled base once overflowed into a negative wait
// after about forty attempts and the client panicked).
func TestRetryManyAttempts(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r := Retry{Attempts: 80, Base: 20 * time.Millisecond, Max: time.Millisecond * 2}
	for attempt := 1; attempt < r.Attempts; attempt++ {
		if d := r.backoff(attempt); d <= 0 || d > r.Max {
			t.Fatalf("backoff(%d) = %s, want (0, %s]", attempt, d, r.Max)
		}
	}
	c := New(srv.URL, "t", WithRetry(r))
	if _, err := c.Pull(context.Background(), "c", 1, 0); err == nil {
		t.Fatal("want the last 503")
	}
	if calls.Load() != int64(r.Attempts) {
		t.Fatalf("%d calls, want %d", calls.Load(), r.Attempts)
	}
}
