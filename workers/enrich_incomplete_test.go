package workers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// wholeBody is what cutServer's /whole serves.
const wholeBody = "the whole attachment, sent chunked in two pieces"

// cutServer is an attachment host whose downloads end in every way a
// download can end.
type cutServer struct {
	srv  *httptest.Server
	hits sync.Map // path → *atomic.Int32
}

func newCutServer(t *testing.T) *cutServer {
	t.Helper()
	s := &cutServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/whole", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.(http.Flusher).Flush() // no Content-Length: chunked
		io.WriteString(w, wholeBody[:10])
		w.(http.Flusher).Flush()
		io.WriteString(w, wholeBody[10:])
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		// Chunked: three bytes, then nothing until the client goes away.
		io.WriteString(w, "abc")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, strings.Repeat("s", 10))
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("r", 10))
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.(*net.TCPConn).SetLinger(0) // close with RST
			conn.Close()
		}
	})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := s.hits.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *cutServer) count(path string) int {
	n, ok := s.hits.Load(path)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

// TestEnrichIncompleteDownloads: a download cut by the timeout, cut short
// of its Content-Length or reset is never stored: the attachment stays
// pending while the job retries, then fails with the reason; nothing of it
// reaches the blob store or the temporary directory. A whole chunked body
// in the same message is stored.
func TestEnrichIncompleteDownloads(t *testing.T) {
	// Not parallel: TMPDIR is set for the process.
	ctx := context.Background()
	gcs := mediaStores(t)["gs"]
	for _, name := range []string{"file", "gs"} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			root := t.TempDir()
			var store blob.Store
			if name == "file" {
				var err error
				store, err = blob.Open(ctx, "file://"+root, blob.Options{})
				require.NoError(t, err)
			} else {
				store = gcs(t)
			}
			b := newMediaBundle(t)
			host := newCutServer(t)
			fo := testFetch()
			fo.Timeout = 300 * time.Millisecond
			w := b.worker(t, store, fo)
			w.TempDir = "" // the default: os.TempDir(), i.e. $TMPDIR
			t.Setenv("TMPDIR", tmp)

			paths := []string{"/stall", "/short", "/reset", "/whole"}
			var atts []envelope.Attachment
			for _, p := range paths {
				atts = append(atts, mediaPending(envelope.AttachmentSource{URL: host.srv.URL + p}, envelope.KindFile))
			}
			id := b.insert(t, envelope.ChannelWebhook, atts...)

			const attempts = 3
			for attempt := 1; attempt < attempts; attempt++ {
				err := runEnrich(ctx, w, b.tenant, id, attempt, attempts)
				require.ErrorIs(t, err, fetch.ErrIncomplete, "attempt %d asks for a retry", attempt)
				require.ErrorIs(t, err, fetch.ErrTimeout)
				row, msg := b.message(t, id)
				require.Equal(t, db.InboxReceived, row.State, "attempt %d", attempt)
				for i, a := range msg.Attachments {
					require.Equal(t, envelope.AttachmentPending, a.Status, "attempt %d: %s", attempt, paths[i])
					require.Zero(t, a.Size)
					require.Empty(t, a.ContentSHA256)
				}
				require.Equal(t, map[string]string{msg.Attachments[3].ID: db.AttachmentStored}, attachmentRows(t, b, id),
					"attempt %d: only the whole body is settled", attempt)
				requireEmptyDir(t, tmp)
			}
			for _, p := range paths[:3] {
				require.Equal(t, attempts-1, host.count(p), "%s fetched once per attempt", p)
			}

			// The last attempt records the failures; the message is ready.
			require.NoError(t, runEnrich(ctx, w, b.tenant, id, attempts, attempts))
			row, msg := b.message(t, id)
			require.Equal(t, db.InboxReady, row.State)
			for i, reason := range []string{"incomplete body: timed out after 300ms, 3 bytes read", "incomplete body: 10 of 100 bytes", "incomplete body after"} {
				a := msg.Attachments[i]
				require.Equal(t, envelope.AttachmentFailed, a.Status, paths[i])
				require.Contains(t, a.Error, reason, paths[i])
				require.Zero(t, a.Size, paths[i])
				require.Empty(t, a.ContentSHA256, paths[i])
				require.Empty(t, a.StorageKey, paths[i])
			}
			for _, p := range paths[:3] {
				require.Equal(t, attempts, host.count(p), p)
			}
			whole := msg.Attachments[3]
			sum := sha256.Sum256([]byte(wholeBody))
			require.Equal(t, envelope.AttachmentStored, whole.Status, whole.Error)
			require.Equal(t, int64(len(wholeBody)), whole.Size)
			require.Equal(t, hex.EncodeToString(sum[:]), whole.ContentSHA256)
			require.Equal(t, 1, host.count("/whole"))

			// The store holds the whole body and nothing else.
			var keys []string
			require.NoError(t, store.List(ctx, "", func(i blob.Info) error {
				keys = append(keys, i.Key)
				return nil
			}))
			require.Equal(t, []string{whole.StorageKey}, keys)
			if name == "file" {
				require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
					require.NoError(t, err)
					require.NotContains(t, d.Name(), ".tmp-", "a temporary object file is left")
					return nil
				}))
			}
			requireEmptyDir(t, tmp)
			var dead int
			require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, "SELECT count(*) FROM mio.dead_letters WHERE kind = 'attachment' AND detail->>'message_id' = $1", id.String()).Scan(&dead)
			}))
			require.Equal(t, 3, dead)
		})
	}
}

// attachmentRows returns the status of each mio.attachments row of the
// message, by attachment id.
func attachmentRows(t *testing.T, b *mediaBundle, msg uuid.UUID) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := db.AttachmentListByMessage(context.Background(), tx, b.tenant, msg)
		for _, r := range rows {
			out[r.ID.String()] = r.Status
		}
		return err
	}))
	return out
}

func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Empty(t, names, "left in %s", dir)
}
