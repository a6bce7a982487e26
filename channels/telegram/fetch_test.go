package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

const fetchToken = "123456:ABC-fetch_test"

// fakeBotFiles is a Bot API fake: getFile answers per file_id and
// /file/bot<token>/<path> serves the bytes; the token in the path is the
// authentication, so a wrong one gets 401 (and 404 for files).
type fakeBotFiles struct {
	srv      *httptest.Server
	requests atomic.Int32
}

func newFakeBotFiles(t *testing.T) *fakeBotFiles {
	t.Helper()
	f := &fakeBotFiles{}
	files := map[string]struct {
		path string
		size int64
		body func(w io.Writer)
	}{
		"photo1": {path: "photos/file_1.jpg", size: 9, body: func(w io.Writer) { _, _ = io.WriteString(w, "JPEGBYTES") }},
		"huge":   {path: "documents/big.bin", size: MaxBotDownload + 1},
		// The size is unknown to getFile but the stream is over the limit.
		"liar": {path: "documents/liar.bin", body: func(w io.Writer) {
			chunk := make([]byte, 1<<20)
			for range MaxBotDownload/len(chunk) + 1 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		switch {
		case r.URL.Path == "/bot"+fetchToken+"/getFile":
			file, ok := files[r.URL.Query().Get("file_id")]
			w.Header().Set("Content-Type", "application/json")
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}`)
				return
			}
			size := ""
			if file.size > 0 {
				size = fmt.Sprintf(`,"file_size":%d`, file.size)
			}
			_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"file_id":"x","file_unique_id":"u","file_path":%q%s}}`, file.path, size)
		case strings.HasPrefix(r.URL.Path, "/file/bot"+fetchToken+"/"):
			p := strings.TrimPrefix(r.URL.Path, "/file/bot"+fetchToken+"/")
			for _, file := range files {
				if file.path == p && file.body != nil {
					w.Header().Set("Content-Type", "application/octet-stream")
					file.body(w)
					return
				}
			}
			http.NotFound(w, r)
		case strings.HasSuffix(r.URL.Path, "/getFile"):
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func TestFetch(t *testing.T) {
	t.Parallel()
	fake := newFakeBotFiles(t)
	ch := New(Options{APIBaseURL: fake.srv.URL})
	client := fetch.NewClient(fetch.Policy{AllowHTTP: true, AllowPrivate: true, MaxBytes: 64 << 20})
	acct := channels.Account{Credentials: []byte(`{"bot_token":"` + fetchToken + `"}`)}

	tests := []struct {
		name      string
		acct      channels.Account
		att       envelope.Attachment
		want      string
		permanent bool
		tooLarge  bool
	}{
		{name: "GetFileThenDownload", acct: acct, att: envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "photo1"}}, want: "JPEGBYTES"},
		{name: "OverBotLimitPerGetFile", acct: acct, att: envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "huge"}}, permanent: true, tooLarge: true},
		{name: "OverBotLimitPerWebhookSize", acct: acct, att: envelope.Attachment{Size: MaxBotDownload + 1, Source: &envelope.AttachmentSource{Ref: "photo1"}}, permanent: true, tooLarge: true},
		{name: "InvalidFileID", acct: acct, att: envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "nope"}}, permanent: true},
		{name: "WrongToken", acct: channels.Account{Credentials: []byte(`{"bot_token":"1:wrong"}`)}, att: envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "photo1"}}, permanent: true},
		{name: "NoToken", acct: channels.Account{}, att: envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "photo1"}}, permanent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := ch.Fetch(context.Background(), tc.acct, tc.att, client)
			if tc.permanent {
				var pe *channels.PermanentError
				require.True(t, errors.As(err, &pe), "want a permanent error, got %v", err)
				require.Equal(t, tc.tooLarge, errors.Is(err, fetch.ErrTooLarge), "%v", err)
				require.NotContains(t, err.Error(), fetchToken, "errors never carry the bot token")
				return
			}
			require.NoError(t, err)
			defer f.Body.Close()
			b, err := io.ReadAll(f.Body)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}

	t.Run("StreamOverBotLimit", func(t *testing.T) {
		t.Parallel()
		f, err := ch.Fetch(context.Background(), acct, envelope.Attachment{Source: &envelope.AttachmentSource{Ref: "liar"}}, client)
		require.NoError(t, err)
		defer f.Body.Close()
		_, err = io.Copy(io.Discard, f.Body)
		var pe *channels.PermanentError
		require.True(t, errors.As(err, &pe), "%v", err)
		require.ErrorIs(t, err, fetch.ErrTooLarge)
	})
}
