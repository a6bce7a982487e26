package zohocliq

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
	const token = "1000.cliq-oauth"
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Zoho-oauthtoken "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Invalid OAuth token"}`)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = io.WriteString(w, "%PDF-1.7")
	}))
	t.Cleanup(files.Close)
	ch := New(Options{})
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	att := envelope.Attachment{Source: &envelope.AttachmentSource{URL: files.URL + "/api/v2/files/abc"}}

	t.Run("WithOAuthToken", func(t *testing.T) {
		t.Parallel()
		f, err := ch.Fetch(context.Background(), channels.Account{Credentials: []byte(`{"access_token":"` + token + `"}`)}, att, client)
		require.NoError(t, err)
		defer f.Body.Close()
		b, err := io.ReadAll(f.Body)
		require.NoError(t, err)
		require.Equal(t, "%PDF-1.7", string(b))
	})
	t.Run("UnauthorizedIsPermanent", func(t *testing.T) {
		t.Parallel()
		_, err := ch.Fetch(context.Background(), channels.Account{}, att, client)
		var pe *channels.PermanentError
		require.True(t, errors.As(err, &pe), "%v", err)
	})
}
