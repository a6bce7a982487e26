package slack

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

// fakeSlackFiles serves files.info and one private file; like Slack, an
// unauthorized download gets the HTML sign-in page with status 200.
func fakeSlackFiles(t *testing.T, token string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authed := r.Header.Get("Authorization") == "Bearer "+token
		switch r.URL.Path {
		case "/api/files.info":
			w.Header().Set("Content-Type", "application/json")
			if !authed {
				_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
				return
			}
			if r.URL.Query().Get("file") != "F1" {
				_, _ = io.WriteString(w, `{"ok":false,"error":"file_not_found"}`)
				return
			}
			_, _ = io.WriteString(w, `{"ok":true,"file":{"id":"F1","url_private_download":"`+srv.URL+`/files-pri/T1-F1/download/a.png"}}`)
		case "/files-pri/T1-F1/download/a.png":
			if !authed {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = io.WriteString(w, "<html>Sign in to Slack</html>")
				return
			}
			w.Header().Set("Content-Type", "image/png")
			_, _ = io.WriteString(w, "PNGBYTES")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	t.Parallel()
	const token = "xoxb-fetch-test"
	srv := fakeSlackFiles(t, token)
	ch := New(Options{APIBaseURL: srv.URL + "/api"})
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	acct := channels.Account{WebhookSecret: "s", Credentials: []byte(`{"bot_token":"` + token + `"}`)}
	fileURL := srv.URL + "/files-pri/T1-F1/download/a.png"

	tests := []struct {
		name      string
		acct      channels.Account
		src       envelope.AttachmentSource
		want      string
		permanent bool
	}{
		{name: "URLWithBotToken", acct: acct, src: envelope.AttachmentSource{URL: fileURL}, want: "PNGBYTES"},
		{name: "FileIDResolvedWithFilesInfo", acct: acct, src: envelope.AttachmentSource{Ref: "F1"}, want: "PNGBYTES"},
		{name: "UnknownFileID", acct: acct, src: envelope.AttachmentSource{Ref: "F9"}, permanent: true},
		{name: "WrongTokenGetsSignInPage", acct: channels.Account{Credentials: []byte(`{"bot_token":"xoxb-wrong"}`)},
			src: envelope.AttachmentSource{URL: fileURL}, permanent: true},
		{name: "NoBotToken", acct: channels.Account{}, src: envelope.AttachmentSource{URL: fileURL}, permanent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := tc.src
			f, err := ch.Fetch(context.Background(), tc.acct, envelope.Attachment{Source: &src, MimeType: "image/png"}, client)
			if tc.permanent {
				var pe *channels.PermanentError
				require.True(t, errors.As(err, &pe), "want a permanent error, got %v", err)
				return
			}
			require.NoError(t, err)
			defer f.Body.Close()
			b, err := io.ReadAll(f.Body)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
			require.Equal(t, "image/png", f.ContentType)
		})
	}
}

func TestFetchRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	// The production policy: Slack's hosts over HTTPS only.
	client := fetch.NewClient(fetch.Policy{AllowedHosts: New(Options{}).FetchHosts()})
	acct := channels.Account{Credentials: []byte(`{"bot_token":"xoxb-1"}`)}
	for _, u := range []string{"https://evil.example.com/x", "http://files.slack.com/x", "https://169.254.169.254/latest"} {
		_, err := New(Options{}).Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{URL: u}}, client)
		var pe *channels.PermanentError
		require.True(t, errors.As(err, &pe), "%s: %v", u, err)
	}
}
