package workers_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

const tgToken = "424242:enrich-test_token"

// fakePlatform speaks the Telegram Bot API file endpoints (token in the
// path) and serves plain files for webhook attachments.
type fakePlatform struct {
	srv  *httptest.Server
	hits sync.Map // path → *atomic.Int32
}

func newFakePlatform(t testing.TB) *fakePlatform {
	t.Helper()
	f := &fakePlatform{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := f.hits.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		switch {
		case r.URL.Path == "/bot"+tgToken+"/getFile":
			id := r.URL.Query().Get("file_id")
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"file_id":%q,"file_unique_id":"u","file_size":%d,"file_path":"photos/%s.jpg"}}`, id, len(fakePhoto(id)), id)
		case strings.HasPrefix(r.URL.Path, "/file/bot"+tgToken+"/photos/"):
			id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/file/bot"+tgToken+"/photos/"), ".jpg")
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = io.WriteString(w, fakePhoto(id))
		case strings.HasPrefix(r.URL.Path, "/files/"):
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "file:"+strings.TrimPrefix(r.URL.Path, "/files/"))
		case r.URL.Path == "/flaky":
			w.WriteHeader(http.StatusBadGateway)
		case strings.HasPrefix(r.URL.Path, "/big/"):
			size, _ := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/big/"), 10, 64)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			_, _ = io.Copy(w, newGenReader(size))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePlatform) count(path string) int {
	n, ok := f.hits.Load(path)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

// fakePhoto is a fake JPEG (its magic bytes make it sniff as image/jpeg).
func fakePhoto(id string) string { return "\xff\xd8\xff\xe0JFIF-photo-" + id }

// mediaBundle is a migrated database with one tenant, a Telegram account
// (with a bot token) and a webhook account, plus a fake platform.
type mediaBundle struct {
	env      *dbtest.Env
	box      *secretbox.Box
	tenant   uuid.UUID
	accounts map[string]uuid.UUID
	platform *fakePlatform
	registry *channels.Registry
	metrics  *metrics.Media
}

func newMediaBundle(t testing.TB) *mediaBundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "media")
	require.NoError(t, err)
	b := &mediaBundle{env: env, box: box, tenant: tenant.ID, accounts: map[string]uuid.UUID{},
		platform: newFakePlatform(t), metrics: metrics.NewMedia(nil)}
	for ct, creds := range map[string]string{
		envelope.ChannelTelegram: `{"bot_token":"` + tgToken + `"}`,
		envelope.ChannelWebhook:  "",
	} {
		p := admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: ct, WebhookSecret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}
		if creds != "" {
			p.Credentials = json.RawMessage(creds)
		}
		a, err := svc.AccountCreate(ctx, p)
		require.NoError(t, err)
		b.accounts[ct] = a.ID
	}
	b.registry = builtin.Registry(builtin.Options{APIBase: map[string]string{envelope.ChannelTelegram: b.platform.srv.URL}})
	return b
}

// testFetch is the test fetch policy: the loopback fake over plain HTTP.
func testFetch() workers.FetchOptions {
	return workers.FetchOptions{
		AllowHTTP:    true,
		AllowedNets:  []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		AllowedHosts: map[string][]string{envelope.ChannelTelegram: {"127.0.0.1"}},
	}
}

func (b *mediaBundle) worker(t testing.TB, store blob.Store, fo workers.FetchOptions) *workers.EnrichWorker {
	t.Helper()
	return &workers.EnrichWorker{
		Pool: b.env.Pool, Blob: store, Registry: b.registry,
		Accounts: accounts.NewResolver(b.env.Pool, accounts.ResolverConfig{Box: b.box, Registry: b.registry}),
		Clients:  workers.NewFetchClients(b.registry, fo), Metrics: b.metrics, TempDir: t.TempDir(),
	}
}

// insert commits one message with attachments of channel ct, as ingest
// does, and returns its id.
func (b *mediaBundle) insert(t testing.TB, ct string, atts ...envelope.Attachment) uuid.UUID {
	t.Helper()
	msg := envelope.Message{SourceMessageID: uuid.NewString(), Conversation: envelope.Conversation{ID: "c1", Type: envelope.ConversationDM},
		Sender: envelope.Sender{ID: "u1"}, Text: "with files", Attachments: atts, SentAt: time.Now()}
	req := ingest.Prepare(&accounts.Account{ID: b.accounts[ct], TenantID: b.tenant, ChannelType: ct},
		&channels.Parsed{Messages: []envelope.Message{msg}}, []byte(`{"raw":true}`), time.Now())
	_, err := db.IngestCommit(context.Background(), b.env.Pool, []db.IngestGroup{{TenantID: b.tenant, Rows: req.Messages}})
	require.NoError(t, err)
	return req.Messages[0].ID
}

func runEnrich(ctx context.Context, w *workers.EnrichWorker, tenant, msg uuid.UUID, attempt, maxAttempts int) error {
	return w.Work(ctx, &river.Job[jobs.EnrichArgs]{
		JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: maxAttempts},
		Args:   jobs.EnrichArgs{TenantID: tenant, MessageID: msg},
	})
}

// message returns the stored row and its envelope.
func (b *mediaBundle) message(t testing.TB, id uuid.UUID) (*db.InboxMessage, envelope.Message) {
	t.Helper()
	var row *db.InboxMessage
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var err error
		row, err = db.InboxGet(context.Background(), tx, b.tenant, id)
		return err
	}))
	var msg envelope.Message
	require.NoError(t, json.Unmarshal(row.Envelope, &msg))
	return row, msg
}

// readyXid reports whether the message has its ready-stream position.
func (b *mediaBundle) readyXid(t testing.TB, id uuid.UUID) bool {
	t.Helper()
	var ok bool
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(),
			"SELECT ready_xid IS NOT NULL AND ready_seq IS NOT NULL AND ready_at IS NOT NULL FROM mio.inbox WHERE id = $1", id).Scan(&ok)
	}))
	return ok
}

func mediaPending(src envelope.AttachmentSource, kind string) envelope.Attachment {
	return envelope.Attachment{Kind: kind, Status: envelope.AttachmentPending, Source: &src}
}

// mediaStores are the two blob stores every storing test runs against.
func mediaStores(t *testing.T) map[string]func(t *testing.T) blob.Store {
	gcs, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", NoListener: true})
	require.NoError(t, err)
	t.Cleanup(gcs.Stop)
	gcs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "mio-test"})
	return map[string]func(t *testing.T) blob.Store{
		"file": func(t *testing.T) blob.Store {
			s, err := blob.Open(context.Background(), "file://"+t.TempDir(), blob.Options{})
			require.NoError(t, err)
			return s
		},
		"gs": func(t *testing.T) blob.Store {
			s, err := blob.Open(context.Background(), "gs://mio-test/t-"+uuid.NewString(), blob.Options{GCSClient: gcs.Client()})
			require.NoError(t, err)
			return s
		},
	}
}

func TestEnrichStores(t *testing.T) {
	t.Parallel()
	for name, open := range mediaStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newMediaBundle(t)
			store := open(t)
			w := b.worker(t, store, testFetch())
			tg := b.insert(t, envelope.ChannelTelegram, mediaPending(envelope.AttachmentSource{Ref: "p1"}, envelope.KindImage))
			wh := b.insert(t, envelope.ChannelWebhook,
				mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/report.txt"}, envelope.KindFile),
				mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/report.txt"}, envelope.KindFile))
			// A second Telegram message with the same photo: same blob.
			tg2 := b.insert(t, envelope.ChannelTelegram, mediaPending(envelope.AttachmentSource{Ref: "p1"}, envelope.KindImage))

			for _, id := range []uuid.UUID{tg, wh, tg2} {
				row, _ := b.message(t, id)
				require.Equal(t, db.InboxReceived, row.State)
				require.NoError(t, runEnrich(ctx, w, b.tenant, id, 1, 8))
			}

			wantPhoto := sha256.Sum256([]byte(fakePhoto("p1")))
			for _, id := range []uuid.UUID{tg, tg2} {
				row, msg := b.message(t, id)
				require.Equal(t, db.InboxReady, row.State)
				require.True(t, b.readyXid(t, id))
				a := msg.Attachments[0]
				require.Equal(t, envelope.AttachmentStored, a.Status, a.Error)
				require.Equal(t, hex.EncodeToString(wantPhoto[:]), a.ContentSHA256)
				require.Equal(t, blob.AttachmentKey(a.ContentSHA256), a.StorageKey)
				require.Equal(t, int64(len(fakePhoto("p1"))), a.Size)
				require.Equal(t, "image/jpeg", a.MimeType, "sniffed: Telegram serves octet-stream")
				rc, info, err := store.Get(ctx, a.StorageKey)
				require.NoError(t, err)
				got, _ := io.ReadAll(rc)
				rc.Close()
				require.Equal(t, fakePhoto("p1"), string(got))
				require.Equal(t, "image/jpeg", info.ContentType)
			}
			_, msg := b.message(t, wh)
			require.Len(t, msg.Attachments, 2)
			for _, a := range msg.Attachments {
				require.Equal(t, envelope.AttachmentStored, a.Status)
				require.Equal(t, "text/plain", a.MimeType)
				require.Equal(t, int64(len("file:report.txt")), a.Size)
			}
			require.Equal(t, 2, b.platform.count("/file/bot"+tgToken+"/photos/p1.jpg"))

			// Blob registry: one row per content, counting its references.
			var refs map[string]int64 = map[string]int64{}
			rows, err := b.env.Pool.Query(ctx, "SELECT content_sha256, refs FROM mio.media_blobs")
			require.NoError(t, err)
			for rows.Next() {
				var sha string
				var n int64
				require.NoError(t, rows.Scan(&sha, &n))
				refs[sha] = n
			}
			require.NoError(t, rows.Err())
			require.Len(t, refs, 2)
			require.Equal(t, int64(2), refs[hex.EncodeToString(wantPhoto[:])])

			require.Equal(t, float64(4), testutil.ToFloat64(b.metrics.EnrichAttachments.WithLabelValues(envelope.ChannelTelegram, "stored"))+
				testutil.ToFloat64(b.metrics.EnrichAttachments.WithLabelValues(envelope.ChannelWebhook, "stored")))
			require.Equal(t, float64(len(fakePhoto("p1"))), testutil.ToFloat64(b.metrics.BytesStored.WithLabelValues(envelope.ChannelTelegram)),
				"the second copy of the photo is not written again")

			// A rerun of a settled job changes nothing.
			require.NoError(t, runEnrich(ctx, w, b.tenant, tg, 2, 8))
			require.Equal(t, 2, b.platform.count("/file/bot"+tgToken+"/photos/p1.jpg"))
		})
	}
}

func TestEnrichRetriesThenFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	w := b.worker(t, store, testFetch())
	id := b.insert(t, envelope.ChannelWebhook,
		mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/files/good.txt"}, envelope.KindFile),
		mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/flaky"}, envelope.KindFile),
		mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/missing"}, envelope.KindFile))

	// Attempt 1: the good file is stored, the 404 fails at once, the 502
	// asks for a retry and the message stays received.
	err = runEnrich(ctx, w, b.tenant, id, 1, 3)
	require.Error(t, err)
	row, _ := b.message(t, id)
	require.Equal(t, db.InboxReceived, row.State)

	// Attempt 2: only the flaky one is fetched again.
	require.Error(t, runEnrich(ctx, w, b.tenant, id, 2, 3))
	require.Equal(t, 1, b.platform.count("/files/good.txt"))
	require.Equal(t, 1, b.platform.count("/missing"))
	require.Equal(t, 2, b.platform.count("/flaky"))

	// The last attempt fails it; the message becomes ready all the same.
	require.NoError(t, runEnrich(ctx, w, b.tenant, id, 3, 3))
	row, msg := b.message(t, id)
	require.Equal(t, db.InboxReady, row.State)
	require.True(t, b.readyXid(t, id))
	require.Equal(t, envelope.AttachmentStored, msg.Attachments[0].Status)
	require.Equal(t, envelope.AttachmentFailed, msg.Attachments[1].Status)
	require.Contains(t, msg.Attachments[1].Error, "502")
	require.Equal(t, envelope.AttachmentFailed, msg.Attachments[2].Status)
	require.Contains(t, msg.Attachments[2].Error, "404")

	// Both failures are dead letters of kind attachment.
	var n int
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT count(*) FROM mio.dead_letters WHERE kind = 'attachment' AND detail->>'message_id' = $1 AND last_error <> ''", id.String()).Scan(&n)
	}))
	require.Equal(t, 2, n)
}

// An attachment URL whose host resolves to a private address is refused
// at connect time (no packet leaves) and ends failed.
func TestEnrichRefusesPrivateAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(b.platform.srv.Listener.Addr().String())
	fo := workers.FetchOptions{
		AllowHTTP: true, // production policy otherwise: no private ranges allowed
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	}
	w := b.worker(t, store, fo)
	id := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: "http://cdn.example.test:" + port + "/files/secret"}, envelope.KindFile))
	require.NoError(t, runEnrich(ctx, w, b.tenant, id, 1, 8), "refused destinations are permanent: no retry")
	row, msg := b.message(t, id)
	require.Equal(t, db.InboxReady, row.State)
	require.Equal(t, envelope.AttachmentFailed, msg.Attachments[0].Status)
	require.Contains(t, msg.Attachments[0].Error, "forbidden address")
	require.Zero(t, b.platform.count("/files/secret"))
}

// A 100 MB attachment goes through the whole enrich path (download, hash,
// temp file, blob Put) with the heap staying far below its size.
func TestEnrichStreams100MB(t *testing.T) {
	// Not parallel: the heap is measured process-wide.
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	fo := testFetch()
	fo.MaxBytes = 200 << 20
	w := b.worker(t, store, fo)
	const size = 100 << 20
	id := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/big/" + strconv.Itoa(size)}, envelope.KindFile))

	peak := measureHeap(t, func() {
		require.NoError(t, runEnrich(ctx, w, b.tenant, id, 1, 8))
	})
	t.Logf("enrich of %d MiB: peak HeapInuse growth %d KiB", size>>20, peak>>10)
	require.Less(t, peak, uint64(32<<20), "the enrich path must stream, not buffer")

	_, msg := b.message(t, id)
	a := msg.Attachments[0]
	require.Equal(t, envelope.AttachmentStored, a.Status)
	require.Equal(t, int64(size), a.Size)
	g := newGenReader(size)
	_, _ = io.Copy(io.Discard, g)
	require.Equal(t, hex.EncodeToString(g.hash.Sum(nil)), a.ContentSHA256)
	info, err := store.Stat(ctx, a.StorageKey)
	require.NoError(t, err)
	require.Equal(t, int64(size), info.Size)
}

// An attachment over the channel's cap fails permanently.
func TestEnrichSizeCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newMediaBundle(t)
	store, err := blob.Open(ctx, "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	fo := testFetch()
	fo.MaxBytesByChannel = map[string]int64{envelope.ChannelWebhook: 1 << 20}
	w := b.worker(t, store, fo)
	id := b.insert(t, envelope.ChannelWebhook, mediaPending(envelope.AttachmentSource{URL: b.platform.srv.URL + "/big/" + strconv.Itoa(2<<20)}, envelope.KindFile))
	require.NoError(t, runEnrich(ctx, w, b.tenant, id, 1, 8))
	_, msg := b.message(t, id)
	require.Equal(t, envelope.AttachmentFailed, msg.Attachments[0].Status)
	require.Contains(t, msg.Attachments[0].Error, "too large")
}

// genReader yields size deterministic pseudo-random bytes without holding
// them, hashing what it yields.
type genReader struct {
	left  int64
	state uint64
	hash  hash.Hash
}

func newGenReader(size int64) *genReader {
	return &genReader{left: size, state: 0x9E3779B97F4A7C15, hash: sha256.New()}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	var word [8]byte
	for i := 0; i < len(p); i += 8 {
		g.state ^= g.state << 13
		g.state ^= g.state >> 7
		g.state ^= g.state << 17
		binary.LittleEndian.PutUint64(word[:], g.state)
		copy(p[i:], word[:])
	}
	g.left -= int64(len(p))
	g.hash.Write(p)
	return len(p), nil
}

// measureHeap runs f while a sampler records HeapInuse and returns the peak
// growth over the starting value.
func measureHeap(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak - base
}
