package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// fakeGraphMedia is a Graph API fake: GET /{media-id} (Bearer) answers a
// fresh media URL each time; a URL expires after its first use when the
// media id is "expiring", like Meta's 5-minute URLs.
type fakeGraphMedia struct {
	srv     *httptest.Server
	lookups atomic.Int32
}

func newFakeGraphMedia(t *testing.T, token string) *fakeGraphMedia {
	t.Helper()
	f := &fakeGraphMedia{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Invalid OAuth access token","code":190}}`)
			return
		}
		switch r.URL.Path {
		case "/m1", "/expiring":
			n := f.lookups.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"url":"%s/download%s/%d","mime_type":"image/jpeg","file_size":5,"id":"m1","messaging_product":"whatsapp"}`, f.srv.URL, r.URL.Path, n)
		case "/download/m1/1", "/download/expiring/2":
			w.Header().Set("Content-Type", "image/jpeg")
			_, _ = io.WriteString(w, "JPEG!")
		case "/download/expiring/1":
			http.NotFound(w, r) // the URL expired before the download
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"Unsupported get request","code":100}}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func TestFetch(t *testing.T) {
	t.Parallel()
	const token = "EAAG-test-token"
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true})
	acct := channels.Account{Credentials: []byte(`{"access_token":"` + token + `"}`)}

	tests := []struct {
		name        string
		acct        channels.Account
		ref         string
		wantLookups int32
		permanent   bool
	}{
		{name: "LookupThenDownload", acct: acct, ref: "m1", wantLookups: 1},
		{name: "ExpiredURLReResolved", acct: acct, ref: "expiring", wantLookups: 2},
		{name: "UnknownMediaID", acct: acct, ref: "gone", permanent: true},
		{name: "WrongToken", acct: channels.Account{Credentials: []byte(`{"access_token":"nope"}`)}, ref: "m1", permanent: true},
		{name: "NoToken", acct: channels.Account{}, ref: "m1", permanent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeGraphMedia(t, token)
			ch := New(Options{APIBaseURL: fake.srv.URL})
			f, err := ch.Fetch(context.Background(), tc.acct, envelope.Attachment{Source: &envelope.AttachmentSource{Ref: tc.ref}}, client)
			if tc.permanent {
				var pe *channels.PermanentError
				require.True(t, errors.As(err, &pe), "want a permanent error, got %v", err)
				return
			}
			require.NoError(t, err)
			defer f.Body.Close()
			b, err := io.ReadAll(f.Body)
			require.NoError(t, err)
			require.Equal(t, "JPEG!", string(b))
			require.Equal(t, "image/jpeg", f.ContentType)
			require.Equal(t, tc.wantLookups, fake.lookups.Load())
		})
	}
}
