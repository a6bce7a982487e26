package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/googlechat"
	"github.com/miohq/mio/channels/whatsapp"
)

func fixture(t *testing.T, channel, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "channels", channel, "testdata", name))
	require.NoError(t, err)
	return b
}

func TestWebhookStandardWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, hdr := b.webhookEvent(t, "msg_1", "conv-1", "hello")

	resp, out := post(t, b.url("webhook"), body, hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	require.JSONEq(t, `{"ok":true}`, out)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	envs := b.envelopes(t)
	require.Len(t, envs, 1)
	require.Equal(t, "hello", envs[0]["text"])
	require.Equal(t, "msg_1", envs[0]["source_message_id"])
	require.Equal(t, "webhook", envs[0]["channel_type"])
	require.Equal(t, b.tenant.String(), envs[0]["tenant_id"])

	// A redelivery (same webhook-id, new signature) writes nothing.
	hdr = b.signWebhook(t, "msg_1", body)
	resp, out = post(t, b.url("webhook"), body, hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	require.Equal(t, 1, b.count(t, "mio.inbox"))
	require.Equal(t, 1, b.count(t, "mio.inbound_dedup"))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.DedupTotal.WithLabelValues("webhook")))
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{maxBody: 4096})
	good, goodHdr := b.webhookEvent(t, "msg_ok", "c", "hi")

	// Disable the zoho account for the disabled case.
	_, err := b.svc.AccountSetStatus(context.Background(), b.tenant, b.accounts["zoho_cliq"], "disabled")
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		url    string
		method string
		body   []byte
		hdr    map[string]string
		ctype  string
		status int
		code   string
	}{
		{name: "UnknownChannel", url: b.srv.URL + "/webhooks/icq/" + b.accounts["webhook"].String(), body: good, hdr: goodHdr, status: 404},
		{name: "UnknownAccount", url: b.srv.URL + "/webhooks/webhook/00000000-0000-0000-0000-000000000001", body: good, hdr: goodHdr, status: 404},
		{name: "MalformedAccountID", url: b.srv.URL + "/webhooks/webhook/not-a-uuid", body: good, hdr: goodHdr, status: 404},
		{name: "MismatchedChannel", url: b.srv.URL + "/webhooks/slack/" + b.accounts["webhook"].String(), body: good, hdr: b.slackHeaders(good), status: 404},
		{name: "DisabledAccount", url: b.url("zoho_cliq"), body: good, hdr: map[string]string{"X-Mio-Token": "cliq-shared-token"}, status: 404},
		{name: "BadSignature", url: b.url("webhook"), body: good, hdr: map[string]string{"webhook-id": "msg_ok", "webhook-timestamp": goodHdr["webhook-timestamp"], "webhook-signature": "v1,AAAA"}, status: 401},
		{name: "MissingSignature", url: b.url("webhook"), body: good, status: 401},
		{name: "StaleSignature", url: b.url("slack"), body: []byte(`{"type":"event_callback"}`), hdr: map[string]string{"X-Slack-Request-Timestamp": strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10), "X-Slack-Signature": "v0=00"}, status: 401},
		{name: "MalformedJSON", url: b.url("webhook"), body: []byte(`{"type":`), hdr: b.signWebhook(t, "msg_bad", []byte(`{"type":`)), status: 400, code: "bad_request"},
		{name: "MissingFields", url: b.url("webhook"), body: []byte(`{"type":"message.created","timestamp":"2024-01-01T00:00:00Z","data":{}}`), hdr: b.signWebhook(t, "msg_missing", []byte(`{"type":"message.created","timestamp":"2024-01-01T00:00:00Z","data":{}}`)), status: 400},
		{name: "TooLarge", url: b.url("webhook"), body: bytes.Repeat([]byte("x"), 5000), hdr: goodHdr, status: 413},
		{name: "UnsupportedMediaType", url: b.url("webhook"), body: good, hdr: goodHdr, ctype: "text/xml", status: 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, tc.url, bytes.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
		})
	}
	require.Zero(t, b.count(t, "mio.inbox"), "no error case writes anything")
	require.Zero(t, b.count(t, "mio.inbound_dedup"))
}

func TestWebhookTooLargeChunked(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{maxBody: 2048})
	// No Content-Length: the limit is enforced while reading.
	pr, pw := io_pipe()
	go func() {
		for i := 0; i < 100; i++ {
			if _, err := pw.Write(bytes.Repeat([]byte("y"), 1024)); err != nil {
				break
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, b.url("webhook"), pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

func TestWebhookDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, hdr := b.webhookEvent(t, "msg_warm", "c", "warm")
	resp, _ := post(t, b.url("webhook"), body, hdr) // warms the account cache
	require.Equal(t, http.StatusOK, resp.StatusCode)

	b.env.Pool.Close() // the database goes away
	body, hdr = b.webhookEvent(t, "msg_down", "c", "down")
	resp, out := post(t, b.url("webhook"), body, hdr)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, out)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
}

func TestWebhookHandshakes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("SlackURLVerification", func(t *testing.T) {
		body := fixture(t, "slack", "url_verification.json")
		resp, out := post(t, b.url("slack"), body, b.slackHeaders(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
		require.Contains(t, out, "challenge")
	})
	t.Run("DiscordPing", func(t *testing.T) {
		body := []byte(`{"type":1,"id":"1","application_id":"2"}`)
		resp, out := post(t, b.url("discord"), body, b.discordHeaders(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
		require.JSONEq(t, `{"type":1}`, out)
		resp, _ = post(t, b.url("discord"), body, map[string]string{"X-Signature-Ed25519": strings.Repeat("0", 128), "X-Signature-Timestamp": "1"})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Discord's deliberately invalid signature")
	})
	t.Run("MetaHubChallenge", func(t *testing.T) {
		resp, err := http.Get(b.url("whatsapp") + "?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=" + b.waVerify)
		require.NoError(t, err)
		out := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "1158201444", out)
		resp, err = http.Get(b.url("whatsapp") + "?hub.mode=subscribe&hub.challenge=1&hub.verify_token=wrong")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	require.Zero(t, b.count(t, "mio.inbox"))
}

func (b *testBundle) discordHeaders(body []byte) map[string]string {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := ed25519.Sign(b.discordPriv, append([]byte(ts), body...))
	return map[string]string{"X-Signature-Ed25519": hex.EncodeToString(sig), "X-Signature-Timestamp": ts}
}

func TestWebhookEveryChannel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slackBody := fixture(t, "slack", "file_share.json")
	tgBody := fixture(t, "telegram", "photo.json")
	waBody := fixture(t, "whatsapp", "batch.json")
	discordBody := fixture(t, "discord", "command_guild.json")
	cliqBody := fixture(t, "zohocliq", "message_handler_dm.json")

	for _, tc := range []struct {
		name  string
		url   string
		body  []byte
		hdr   map[string]string
		reply string
	}{
		{"Slack", b.url("slack"), slackBody, b.slackHeaders(slackBody), ""},
		{"Telegram", b.url("telegram"), tgBody, map[string]string{"X-Telegram-Bot-Api-Secret-Token": b.tgSecret}, ""},
		{"WhatsApp", b.url("whatsapp"), waBody, map[string]string{"X-Hub-Signature-256": whatsapp.Sign(b.waSecret, waBody)}, ""},
		{"Discord", b.url("discord"), discordBody, b.discordHeaders(discordBody), `{"type":5}`},
		{"ZohoCliq", b.url("zoho_cliq"), cliqBody, map[string]string{"X-Mio-Token": "cliq-shared-token"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := post(t, tc.url, tc.body, tc.hdr)
			require.Equal(t, http.StatusOK, resp.StatusCode, out)
			if tc.reply != "" {
				require.JSONEq(t, tc.reply, out)
			}
			// Redelivery: same answer, nothing new.
			before := b.count(t, "mio.inbox")
			resp, _ = post(t, tc.url, tc.body, tc.hdr)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, before, b.count(t, "mio.inbox"))
		})
	}
	byChannel := map[string]int{}
	pending := 0
	for _, e := range b.envelopes(t) {
		byChannel[e["channel_type"].(string)]++
		for _, a := range e["attachments"].([]any) {
			am := a.(map[string]any)
			require.NotEmpty(t, am["id"])
			if am["status"] == "pending" {
				pending++
			}
		}
	}
	require.Equal(t, 1, byChannel["slack"])
	require.Equal(t, 1, byChannel["telegram"])
	require.GreaterOrEqual(t, byChannel["whatsapp"], 2, "one POST carries several messages, all written")
	require.Equal(t, 1, byChannel["discord"])
	require.Equal(t, 1, byChannel["zoho_cliq"])
	require.Positive(t, pending, "file_share / photo become pending attachments")
	require.Positive(t, b.count(t, "mio.provider_events"), "WhatsApp statuses recorded")
	var received int
	require.NoError(t, b.env.Pool.QueryRow(context.Background(), "SELECT 0").Scan(&received))
}

func TestWebhookConcurrentSameEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, _ := b.webhookEvent(t, "msg_same", "c", "same")
	var wg sync.WaitGroup
	statuses := make([]int, 50)
	start := make(chan struct{})
	for i := range 50 {
		hdr := b.signWebhook(t, "msg_same", body)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, b.url("webhook"), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, s := range statuses {
		require.Equal(t, http.StatusOK, s)
	}
	require.Equal(t, 1, b.count(t, "mio.inbox"))
	require.Equal(t, 49.0, testutil.ToFloat64(b.metrics.DedupTotal.WithLabelValues("webhook")))
}

func TestWebhookWakesSubscribers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := b.hub.Subscribe(b.tenant)
	defer sub.Close()
	body, hdr := b.webhookEvent(t, "msg_wake", "c", "wake")
	resp, _ := post(t, b.url("webhook"), body, hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	select {
	case <-sub.C:
	case <-time.After(2 * time.Second):
		t.Fatal("commit did not wake the subscriber")
	}
}

// TestWebhookKeysUnavailable: a platform whose signing keys cannot be read
// (Google's key server unreachable) gets 503 with Retry-After — it
// delivers the event again — not 401, which it would take as final; and
// nothing is written.
func TestWebhookKeysUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "google_chat",
		ExternalID: "123456789012", Settings: json.RawMessage(`{"project_number":"123456789012","certs_url":"https://127.0.0.1:1/certs"}`)})
	require.NoError(t, err)
	g := channelstest.NewFakeGoogle(t, time.Hour)
	tok := channelstest.SignGoogleToken(t, g.ChatKey(), channelstest.FakeChatKeyID, jwt.MapClaims{"iss": googlechat.ChatIssuer,
		"aud": "123456789012", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	before := b.count(t, "mio.inbox")
	resp, out := post(t, b.srv.URL+"/webhooks/google_chat/"+a.ID.String(), fixture(t, "googlechat", "message_dm.json"),
		map[string]string{"Authorization": "Bearer " + tok})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, out)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, before, b.count(t, "mio.inbox"), "nothing written")
}
