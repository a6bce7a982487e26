package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
	"github.com/miohq/mio/secretbox"
)

// testBundle is a full public listener on a fresh database with one
// account per channel.
type testBundle struct {
	env      *dbtest.Env
	srv      *httptest.Server
	metrics  *metrics.Metrics
	ingester *ingest.Ingester
	hub      *notify.Hub
	svc      *admin.Service
	tenant   uuid.UUID
	accounts map[string]uuid.UUID

	webhookSecret string
	slackSecret   string
	tgSecret      string
	waSecret      string
	waVerify      string
	discordPriv   ed25519.PrivateKey
	// tg fakes the Bot API of Telegram accounts that have a bot token.
	tg *channelstest.FakeTelegram
}

type bundleOpts struct {
	maxBody  int64
	deadline time.Duration
}

func setup(t testing.TB, opts ...bundleOpts) *testBundle {
	t.Helper()
	var o bundleOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "t")
	require.NoError(t, err)

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	b := &testBundle{env: env, svc: svc, tenant: tenant.ID, accounts: map[string]uuid.UUID{},
		webhookSecret: "whsec_" + base64.StdEncoding.EncodeToString(randBytes(32)),
		slackSecret:   "8f742231b10e8888abcd99yyyzzz85a5",
		tgSecret:      "tg_secret_token-1",
		waSecret:      "wa-app-secret",
		waVerify:      "verify-me",
		discordPriv:   priv,
	}
	create := func(ct, secret string, creds string) {
		p := admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: ct, WebhookSecret: secret}
		if creds != "" {
			p.Credentials = json.RawMessage(creds)
		}
		a, err := svc.AccountCreate(ctx, p)
		require.NoError(t, err, ct)
		b.accounts[ct] = a.ID
	}
	create("webhook", b.webhookSecret, "")
	create("slack", b.slackSecret, "")
	create("telegram", b.tgSecret, "")
	create("whatsapp", b.waSecret, `{"verify_token":"`+b.waVerify+`"}`)
	create("discord", hex.EncodeToString(pub), "")
	create("zoho_cliq", "cliq-shared-token", "")

	b.metrics = metrics.New()
	b.tg = channelstest.NewFakeTelegram(t)
	registry := builtin.Registry(builtin.Options{APIBase: map[string]string{"telegram": b.tg.URL}})
	b.hub = notify.New(nil, nil, notify.Options{})
	b.ingester = ingest.New(env.Pool, ingest.Config{OnCommit: b.hub.Publish})
	b.ingester.Start()
	t.Cleanup(b.ingester.Stop)
	api := httpapi.New(httpapi.Deps{
		Pool: env.Pool, Metrics: b.metrics, Registry: registry,
		Accounts: accounts.NewResolver(env.Pool, accounts.ResolverConfig{Box: box, Registry: registry}), Ingester: b.ingester,
		WebhookMaxBody: o.maxBody, WebhookDeadline: o.deadline,
	})
	b.srv = httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(b.srv.Close)
	return b
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func (b *testBundle) url(ct string) string {
	return b.srv.URL + "/webhooks/" + ct + "/" + b.accounts[ct].String()
}

// post sends body with headers to url.
func post(t testing.TB, url string, body []byte, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// webhookEvent builds a signed Standard Webhooks message.created.
func (b *testBundle) webhookEvent(t *testing.T, id, conv, text string) ([]byte, map[string]string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":%q},"sender":{"id":"u1","display_name":"Ann"},"text":%q}}`,
		time.Now().UTC().Format(time.RFC3339), conv, text))
	return body, b.signWebhook(t, id, body)
}

func (b *testBundle) signWebhook(t testing.TB, id string, body []byte) map[string]string {
	t.Helper()
	now := time.Now()
	sig, err := webhook.Sign(b.webhookSecret, id, now, body)
	require.NoError(t, err)
	return map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(now.Unix(), 10), "webhook-signature": sig}
}

func (b *testBundle) slackHeaders(body []byte) map[string]string {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature(b.slackSecret, ts, body)}
}

// count runs a count query under the bundle's tenant.
func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n)
	}))
	return n
}

func (b *testBundle) envelopes(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), "SELECT envelope FROM mio.inbox ORDER BY seq")
		if err != nil {
			return err
		}
		for rows.Next() {
			var m map[string]any
			if err := rows.Scan(&m); err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
	}))
	return out
}

var _ = pgxpool.Pool{}
