package channels

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCallAPI(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, contentType, auth, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)}
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
	}))
	t.Cleanup(srv.Close)

	t.Run("defaults", func(t *testing.T) {
		ans, err := CallAPI(context.Background(), srv.Client(), APIRequest{
			Op: "test: send", URL: srv.URL + "/send", Header: http.Header{"Authorization": {"Bearer t"}}, Body: []byte(`{"a":1}`),
		})
		require.NoError(t, err, "the status is the caller's to judge")
		require.Equal(t, seen{http.MethodPost, "/send", "application/json", "Bearer t", `{"a":1}`}, <-got)
		require.Equal(t, http.StatusTooManyRequests, ans.Status)
		require.Equal(t, "3", ans.Header.Get("Retry-After"))
		require.Len(t, ans.Body, 100)
	})

	t.Run("method, content type and answer bound", func(t *testing.T) {
		ans, err := CallAPI(context.Background(), srv.Client(), APIRequest{
			Op: "test: edit", Method: http.MethodPatch, URL: srv.URL + "/edit",
			Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, MaxAnswer: 10,
		})
		require.NoError(t, err)
		require.Equal(t, seen{http.MethodPatch, "/edit", "application/json; charset=utf-8", "", ""}, <-got)
		require.Len(t, ans.Body, 10)
	})
}

func TestCallAPIFailures(t *testing.T) {
	t.Parallel()
	const secretURL = "http://127.0.0.1:1/botSECRET-TOKEN/sendMessage"

	t.Run("connection refused is transient, without the URL", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		u := srv.URL + "/botSECRET-TOKEN/x"
		srv.Close()
		_, err := CallAPI(context.Background(), http.DefaultClient, APIRequest{Op: "test: send", URL: u})
		var tr *TransientError
		require.ErrorAs(t, err, &tr)
		require.NotContains(t, err.Error(), "SECRET-TOKEN")
		require.Contains(t, err.Error(), "test: send")
	})

	t.Run("unbuildable request is permanent, without the URL", func(t *testing.T) {
		t.Parallel()
		_, err := CallAPI(context.Background(), http.DefaultClient, APIRequest{Op: "test: send", URL: secretURL + "\x7f"})
		var pe *PermanentError
		require.ErrorAs(t, err, &pe)
		require.NotContains(t, err.Error(), "SECRET-TOKEN")
	})

	t.Run("cancelled ctx is reported", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := CallAPI(ctx, http.DefaultClient, APIRequest{Op: "test: send", URL: secretURL})
		var tr *TransientError
		require.ErrorAs(t, err, &tr)
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestBoundContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := BoundContext(context.Background())
	defer cancel()
	deadline, ok := ctx.Deadline()
	require.True(t, ok, "a send without a deadline gets one")
	require.WithinDuration(t, time.Now().Add(SendTimeout), deadline, 5*time.Second)

	parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
	defer cancelParent()
	ctx, cancel = BoundContext(parent)
	defer cancel()
	require.Equal(t, parent, ctx, "an existing deadline is kept")
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	err := Permanent("slack: chat.update", io.ErrUnexpectedEOF)
	var pe *PermanentError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, "permanent: slack: chat.update: unexpected EOF", err.Error())
}
