package discord

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

func TestFetch(t *testing.T) {
	t.Parallel()
	// A CDN fake: signed URLs (ex, is, hm) need no token; an expired one
	// is refused.
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "no credentials expected", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("hm") != "valid" {
			http.Error(w, "This content is no longer available.", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "image/gif")
		_, _ = io.WriteString(w, "GIF89a")
	}))
	t.Cleanup(cdn.Close)
	ch := New(Options{})
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	acct := channels.Account{Credentials: []byte(`{"bot_token":"bot-secret"}`)}

	t.Run("SignedURL", func(t *testing.T) {
		t.Parallel()
		f, err := ch.Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{URL: cdn.URL + "/attachments/1/2/a.gif?ex=1&is=2&hm=valid"}}, client)
		require.NoError(t, err)
		defer f.Body.Close()
		b, err := io.ReadAll(f.Body)
		require.NoError(t, err)
		require.Equal(t, "GIF89a", string(b))
	})
	t.Run("ExpiredURLIsPermanent", func(t *testing.T) {
		t.Parallel()
		_, err := ch.Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{URL: cdn.URL + "/attachments/1/2/a.gif?ex=1&is=2&hm=old"}}, client)
		var pe *channels.PermanentError
		require.True(t, errors.As(err, &pe), "%v", err)
	})
	t.Run("OnlyCDNHostsInProduction", func(t *testing.T) {
		t.Parallel()
		prod := fetch.NewClient(fetch.Policy{AllowedHosts: ch.FetchHosts()})
		_, err := ch.Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{URL: "https://example.com/a.gif"}}, prod)
		require.ErrorIs(t, err, fetch.ErrForbiddenHost)
	})
}
