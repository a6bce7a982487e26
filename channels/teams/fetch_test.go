package teams

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// An inline image on the service URL's host is fetched with the bot's
// token; a URL on another host never gets it.
func TestFetchSendsTokenOnlyToServiceHosts(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	auth := map[string]string{}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth[r.Host+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = io.WriteString(w, "\x89PNG")
	}))
	t.Cleanup(files.Close)
	ch := newTestChannel()
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	service := files.URL // 127.0.0.1: the account's api_base_url host
	other := strings.Replace(files.URL, "127.0.0.1", "localhost", 1)
	acct := channels.Account{Settings: []byte(`{"api_base_url":"` + service + `/teams"}`),
		Credentials: []byte(`{"app_id":"a","client_secret":"s"}`), Tokens: staticTestTokens("bot-token")}
	for _, u := range []string{service + "/teams/v3/attachments/1/views/original", other + "/elsewhere.png"} {
		f, err := ch.Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{URL: u}}, client)
		require.NoError(t, err, u)
		_ = f.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, auth, 2)
	for k, v := range auth {
		if strings.HasSuffix(k, "/views/original") {
			require.Equal(t, "Bearer bot-token", v, k)
		} else {
			require.Empty(t, v, k)
		}
	}
}
