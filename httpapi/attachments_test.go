package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	neturl "net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
	"github.com/miohq/mio/workers"
)

const (
	e2eBotToken = "777:e2e-bot_token"
	e2eTGSecret = "tg-e2e-secret"
	e2ePhoto    = "\xff\xd8\xff\xe0JFIF e2e photo bytes"
)

// mediaServer is the whole inbound media path: webhook listener, ingest
// with River, the enrich worker running, a Telegram Bot API fake, and a
// blob store.
type mediaServer struct {
	env     *dbtest.Env
	srv     *httptest.Server
	tenant  uuid.UUID
	account uuid.UUID
	svc     *admin.Service
	store   blob.Store
	jobs    <-chan *river.Event
}

func newMediaServer(t *testing.T, store blob.Store, urlTTL time.Duration) *mediaServer {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "e2e")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: envelope.ChannelTelegram,
		WebhookSecret: e2eTGSecret, Credentials: json.RawMessage(`{"bot_token":"` + e2eBotToken + `"}`)})
	require.NoError(t, err)

	// The Bot API fake: the token in the path authenticates.
	botAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bot" + e2eBotToken + "/getFile":
			_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"file_id":%q,"file_unique_id":"u1","file_size":%d,"file_path":"photos/file_0.jpg"}}`,
				r.URL.Query().Get("file_id"), len(e2ePhoto))
		case "/file/bot" + e2eBotToken + "/photos/file_0.jpg":
			_, _ = io.WriteString(w, e2ePhoto)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(botAPI.Close)

	registry := builtin.Registry(builtin.Options{APIBase: map[string]string{envelope.ChannelTelegram: botAPI.URL}})
	resolver := accounts.NewResolver(env.Pool, accounts.ResolverConfig{Box: box, Registry: registry})
	set := workers.NewSet()
	set.AddEnrich(&workers.EnrichWorker{
		Pool: env.Pool, Blob: store, Registry: registry, Accounts: resolver,
		Clients: workers.NewFetchClients(registry, workers.FetchOptions{
			AllowHTTP: true, AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			AllowedHosts: map[string][]string{envelope.ChannelTelegram: {"127.0.0.1"}},
		}),
		TempDir: t.TempDir(),
	}, 2)
	rc, err := workers.NewClient(env.Pool, set, workers.Config{Work: true})
	require.NoError(t, err)
	jobs, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	t.Cleanup(cancel)
	require.NoError(t, rc.Start(ctx))
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = rc.Stop(sctx)
	})

	ing := ingest.New(env.Pool, ingest.Config{River: rc})
	ing.Start()
	t.Cleanup(ing.Stop)
	api := httpapi.New(httpapi.Deps{
		Pool: env.Pool, Metrics: metrics.New(), Registry: registry,
		Accounts: resolver, Ingester: ing,
		Blob: store, AttachmentURLTTL: urlTTL,
	})
	srv := httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(srv.Close)
	return &mediaServer{env: env, srv: srv, tenant: tenant.ID, account: acct.ID, svc: svc, store: store, jobs: jobs}
}

func (m *mediaServer) token(t *testing.T, roles ...db.Role) string {
	t.Helper()
	tok, _, err := m.svc.TokenCreate(context.Background(), m.tenant, "agent", roles)
	require.NoError(t, err)
	return tok
}

// postPhoto sends a Telegram update with a photo and waits for its enrich
// job to finish; it returns the stored envelope.
func (m *mediaServer) postPhoto(t *testing.T, updateID int) envelope.Message {
	t.Helper()
	body := fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1700000000,"chat":{"id":42,"type":"private"},
		"from":{"id":42,"is_bot":false,"first_name":"Ann"},"caption":"look",
		"photo":[{"file_id":"small","file_unique_id":"s","width":90,"height":90,"file_size":100},
		         {"file_id":"large","file_unique_id":"l","width":1280,"height":960,"file_size":%d}]}}`, updateID, updateID, len(e2ePhoto))
	resp, out := post(t, m.srv.URL+"/webhooks/telegram/"+m.account.String(), []byte(body),
		map[string]string{"X-Telegram-Bot-Api-Secret-Token": e2eTGSecret})
	require.Equal(t, http.StatusOK, resp.StatusCode, out)

	select {
	case ev := <-m.jobs:
		require.Equal(t, river.EventKindJobCompleted, ev.Kind, "enrich job: %v", ev.Job.Errors)
		require.Equal(t, (jobs.EnrichArgs{}).Kind(), ev.Job.Kind)
	case <-time.After(30 * time.Second):
		t.Fatal("the enrich job did not finish")
	}
	var env []byte
	var state string
	require.NoError(t, db.InTenantTx(context.Background(), m.env.Pool, m.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT envelope, state FROM mio.inbox WHERE source_message_id = $1",
			fmt.Sprint(updateID)).Scan(&env, &state)
	}))
	require.Equal(t, db.InboxReady, state)
	var msg envelope.Message
	require.NoError(t, json.Unmarshal(env, &msg))
	return msg
}

func get(t *testing.T, url, token string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// End to end: a Telegram webhook with a photo → ingest (enrich job in the
// same transaction) → the enrich worker fetches it from the Bot API fake
// → the message is ready with a storage key → GET /v1/attachments/{id}
// returns the bytes.
func TestAttachmentEndToEnd(t *testing.T) {
	t.Parallel()
	store, err := blob.Open(context.Background(), "file://"+t.TempDir(), blob.Options{})
	require.NoError(t, err)
	m := newMediaServer(t, store, 0)
	msg := m.postPhoto(t, 9001)
	require.Len(t, msg.Attachments, 1)
	a := msg.Attachments[0]
	require.Equal(t, envelope.AttachmentStored, a.Status)
	require.Equal(t, blob.AttachmentKey(a.ContentSHA256), a.StorageKey)
	require.Equal(t, int64(len(e2ePhoto)), a.Size)

	token := m.token(t, "read")
	url := m.srv.URL + "/v1/attachments/" + a.ID
	resp, body := get(t, url, token, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, e2ePhoto, string(body))
	require.Equal(t, "image/jpeg", resp.Header.Get("Content-Type"))
	require.Equal(t, fmt.Sprint(len(e2ePhoto)), resp.Header.Get("Content-Length"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")

	t.Run("Range", func(t *testing.T) {
		resp, body := get(t, url, token, map[string]string{"Range": "bytes=0-3"})
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, e2ePhoto[:4], string(body))
	})
	t.Run("NotModified", func(t *testing.T) {
		resp, _ := get(t, url, token, map[string]string{"If-None-Match": `"` + a.ContentSHA256 + `"`})
		require.Equal(t, http.StatusNotModified, resp.StatusCode)
	})
	t.Run("Errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, url, token string
			status           int
			code             string
		}{
			{"NoToken", url, "", http.StatusUnauthorized, ""},
			{"WrongRole", url, m.token(t, "produce"), http.StatusForbidden, ""},
			{"BadID", m.srv.URL + "/v1/attachments/nope", token, http.StatusBadRequest, "bad_request"},
			{"Unknown", m.srv.URL + "/v1/attachments/" + uuid.NewString(), token, http.StatusNotFound, "not_found"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := get(t, tc.url, tc.token, nil)
				require.Equal(t, tc.status, resp.StatusCode, string(body))
				if tc.code != "" {
					require.Contains(t, string(body), `"code":"`+tc.code+`"`)
				}
			})
		}
	})
	t.Run("OtherTenantSees404", func(t *testing.T) {
		other, _, err := m.svc.TenantCreate(context.Background(), "other")
		require.NoError(t, err)
		tok, _, err := m.svc.TokenCreate(context.Background(), other.ID, "agent", []db.Role{db.RoleRead, db.RoleConsume})
		require.NoError(t, err)
		resp, _ := get(t, url, tok, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

// With a gs:// store that signs URLs and a URL TTL, the endpoint
// redirects to a short-lived signed URL.
func TestAttachmentSignedRedirect(t *testing.T) {
	t.Parallel()
	gcs, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", NoListener: true})
	require.NoError(t, err)
	t.Cleanup(gcs.Stop)
	gcs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "mio-e2e"})
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	store, err := blob.Open(context.Background(), "gs://mio-e2e/vault", blob.Options{
		GCSClient: gcs.Client(), SignURLs: true, SignerEmail: "mio@project.iam.gserviceaccount.com",
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
	})
	require.NoError(t, err)
	m := newMediaServer(t, store, 5*time.Minute)
	msg := m.postPhoto(t, 9002)
	a := msg.Attachments[0]
	require.Equal(t, envelope.AttachmentStored, a.Status)

	resp, _ := get(t, m.srv.URL+"/v1/attachments/"+a.ID, m.token(t, "consume"), nil)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.Contains(loc, "/mio-e2e/vault/"+a.StorageKey), loc)
	u, err := neturl.Parse(loc)
	require.NoError(t, err)
	expires, err := strconv.Atoi(u.Query().Get("X-Goog-Expires"))
	require.NoError(t, err)
	require.True(t, expires > 240 && expires <= 300, "short-lived: %d s", expires)
}
