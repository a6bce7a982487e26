package main

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
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/channels/whatsapp"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// platformCall is one send or edit a fake platform received.
type platformCall struct {
	Channel, Op, Conversation, Text, EditID string
}

// fakePlatforms answers the send and edit APIs of Slack, Discord, Zoho
// Cliq, WhatsApp and a Standard Webhooks endpoint, each under its own path
// prefix (the accounts' api_base_url), and records what they received.
type fakePlatforms struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []platformCall
	seq   int
}

func newFakePlatforms(t *testing.T) *fakePlatforms {
	f := &fakePlatforms{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePlatforms) received(channel string) []platformCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []platformCall
	for _, c := range f.calls {
		if c.Channel == channel {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakePlatforms) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m := map[string]any{}
	_ = json.Unmarshal(body, &m)
	str := func(v any) string { s, _ := v.(string); return s }
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	f.mu.Lock()
	f.seq++
	pid := strconv.Itoa(f.seq)
	f.mu.Unlock()
	c := platformCall{Channel: parts[0], Op: "send"}
	var answer string
	switch parts[0] {
	case "slack": // /slack/{method}
		if parts[1] == "users.info" {
			_, _ = io.WriteString(w, `{"ok":false,"error":"user_not_found"}`)
			return
		}
		c.Conversation, c.Text = str(m["channel"]), str(m["text"])
		if parts[1] == "reactions.add" || parts[1] == "reactions.remove" {
			c.Op, c.EditID, c.Text = parts[1], str(m["timestamp"]), str(m["name"])
		}
		if parts[1] == "chat.update" {
			c.Op, c.EditID, pid = "edit", str(m["ts"]), strings.TrimSuffix(str(m["ts"]), ".000100")
		}
		answer = fmt.Sprintf(`{"ok":true,"channel":%q,"ts":"%s.000100"}`, c.Conversation, pid)
	case "discord": // /discord/channels/{id}/messages[/{mid}]
		c.Conversation, c.Text = parts[2], str(m["content"])
		if r.Method == http.MethodPatch {
			c.Op, c.EditID, pid = "edit", parts[4], parts[4]
		}
		if len(parts) > 6 && parts[5] == "reactions" { // .../{mid}/reactions/{emoji}/@me
			c.Op, c.EditID, c.Text = "react "+r.Method, parts[4], parts[6]
			w.WriteHeader(http.StatusNoContent)
			f.mu.Lock()
			f.calls = append(f.calls, c)
			f.mu.Unlock()
			return
		}
		answer = fmt.Sprintf(`{"id":%q,"channel_id":%q}`, pid, c.Conversation)
	case "zoho": // /zoho/api/v3/chats/{id}/messages
		c.Conversation, c.Text = parts[4], str(m["text"])
		answer = fmt.Sprintf(`{"message_id":%q}`, pid)
	case "whatsapp": // /whatsapp/{version}/{phone}/messages
		c.Conversation = str(m["to"]) + "@" + parts[1] + "/" + parts[2]
		if t, ok := m["text"].(map[string]any); ok {
			c.Text = str(t["body"])
		}
		answer = fmt.Sprintf(`{"messaging_product":"whatsapp","messages":[{"id":"wamid.out%s"}]}`, pid)
	case "webhook":
		if d, ok := m["data"].(map[string]any); ok {
			c.Text, c.EditID = str(d["text"]), str(d["edit_of_provider_message_id"])
			if conv, ok := d["conversation"].(map[string]any); ok {
				c.Conversation = str(conv["id"])
			}
		}
		if str(m["type"]) == webhook.EventMessageUpdated {
			c.Op = "edit"
		}
		answer = fmt.Sprintf(`{"id":"ext%s"}`, pid)
	default:
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, answer)
}

// e2e is one mio serve process (in this test process) with an account of
// every channel pointed at local fakes through api_base_url.
type e2e struct {
	public   string
	token    string
	accounts map[string]uuid.UUID
	fakes    *fakePlatforms
	tg       *channelstest.FakeTelegram
	teams    *channelstest.FakeTeams
	gchat    *channelstest.FakeGoogle
	api      *client.Client

	whsec, slackSecret, waSecret string
	discordKey                   ed25519.PrivateKey
}

func startE2E(t *testing.T) *e2e {
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
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	e := &e2e{accounts: map[string]uuid.UUID{}, fakes: newFakePlatforms(t), tg: channelstest.NewFakeTelegram(t),
		teams: channelstest.NewFakeTeams(t, time.Hour),
		gchat: channelstest.NewFakeGoogle(t, time.Hour),
		whsec: "whsec_" + base64.StdEncoding.EncodeToString(key), slackSecret: "slack-signing-secret",
		waSecret: "wa-app-secret", discordKey: priv}
	base := e.fakes.srv.URL
	for _, a := range []struct {
		channel, settings, creds, secret string
	}{
		{"webhook", `{"endpoint_url":"` + base + `/webhook"}`, ``, e.whsec},
		{"slack", `{"api_base_url":"` + base + `/slack"}`, `{"bot_token":"xoxb-e2e"}`, e.slackSecret},
		{"telegram", `{"mode":"polling","delete_webhook":true,"api_base_url":"` + e.tg.URL + `"}`, `{"bot_token":"123456:e2e-token"}`, ``},
		{"discord", `{"api_base_url":"` + base + `/discord"}`, `{"bot_token":"discord-e2e"}`, hex.EncodeToString(pub)},
		{"whatsapp", `{"api_base_url":"` + base + `/whatsapp","graph_version":"v21.0","phone_number_id":"106540352242922"}`,
			`{"access_token":"EAAe2e","verify_token":"v"}`, e.waSecret},
		{"zoho_cliq", `{"api_base_url":"` + base + `/zoho"}`, `{"access_token":"1000.e2e"}`, "cliq-shared-token"},
		{"teams", string(e.teams.Settings()), string(e.teams.Credentials()), ""},
		{"google_chat", string(e.gchat.Settings(e2eGoogleProject, "")), string(e.gchat.Credentials()), ""},
	} {
		p := admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: a.channel, Settings: json.RawMessage(a.settings), WebhookSecret: a.secret}
		if a.creds != "" {
			p.Credentials = json.RawMessage(a.creds)
		}
		if a.channel == "teams" {
			p.ExternalID = e.teams.AppID
		}
		info, err := svc.AccountCreate(ctx, p)
		require.NoError(t, err, a.channel)
		e.accounts[a.channel] = info.ID
	}
	e.token, _, err = svc.TokenCreate(ctx, tenant.ID, "e2e", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	vars := map[string]string{
		"MIO_DATABASE_URL": env.OwnerURL, "MIO_HTTP_ADDR": "127.0.0.1:0", "MIO_ADMIN_ADDR": "127.0.0.1:0",
		"MIO_MASTER_KEY": base64.StdEncoding.EncodeToString(key), "MIO_ENV": "dev",
		"MIO_BLOB_URL": "file://" + t.TempDir(), "MIO_LOG_LEVEL": "error",
	}
	cfg, _, err := config.Load("mio serve", nil, func(k string) string { return vars[k] }, io.Discard)
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(sctx, cfg, slog.New(slog.DiscardHandler), nil, nil, func(public, _ string) { listening <- public })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case addr := <-listening:
		e.public = "http://" + addr
	case err := <-done:
		t.Fatalf("mio serve stopped: %v", err)
	}
	e.api = client.New(e.public, e.token)
	_, err = e.api.PutConsumer(ctx, "e2e", client.ConsumerConfig{})
	require.NoError(t, err)
	return e
}

// postWebhook POSTs a signed webhook and requires 200.
func (e *e2e) postWebhook(t *testing.T, channel string, body []byte, hdr map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.public+"/webhooks/"+channel+"/"+e.accounts[channel].String(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", channel, out)
}

// inbound delivers one message of channel to MIO the way the platform
// would (a signed webhook, or an update for the Telegram poller).
func (e *e2e) inbound(t *testing.T, channel string) {
	t.Helper()
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	switch channel {
	case "webhook":
		body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"message_id":"in-1","conversation":{"id":"conv-e2e"},"sender":{"id":"u1"},"text":"hello webhook"}}`,
			now.UTC().Format(time.RFC3339)))
		sig, err := webhook.Sign(e.whsec, "msg_e2e_1", now, body)
		require.NoError(t, err)
		e.postWebhook(t, channel, body, map[string]string{"webhook-id": "msg_e2e_1", "webhook-timestamp": ts, "webhook-signature": sig})
	case "slack":
		body := []byte(`{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"EvE2E1","event_time":1700000000,` +
			`"event":{"type":"message","channel":"C0E2E","channel_type":"channel","user":"U1","text":"hello slack","ts":"1700000000.000100"}}`)
		e.postWebhook(t, channel, body, map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature(e.slackSecret, ts, body)})
	case "telegram":
		e.tg.AddUpdate(`"message":{"message_id":77,"date":1717171717,"chat":{"id":4242,"type":"private"},"from":{"id":4242,"is_bot":false,"first_name":"Ada"},"text":"hello telegram"}`)
	case "discord":
		body := readTestdata(t, "discord", "command_dm.json")
		sig := ed25519.Sign(e.discordKey, append([]byte(ts), body...))
		e.postWebhook(t, channel, body, map[string]string{"X-Signature-Ed25519": hex.EncodeToString(sig), "X-Signature-Timestamp": ts})
	case "whatsapp":
		body := readTestdata(t, "whatsapp", "text.json")
		e.postWebhook(t, channel, body, map[string]string{"X-Hub-Signature-256": whatsapp.Sign(e.waSecret, body)})
	case "zoho_cliq":
		e.postWebhook(t, channel, readTestdata(t, "zohocliq", "message_handler_dm.json"), map[string]string{"X-Mio-Token": "cliq-shared-token"})
	case "teams":
		body := e.teamsActivity(t, "message_channel_thread_mention.json")
		e.postWebhook(t, channel, body, map[string]string{"Authorization": e.teams.Sign(t, body, now, channelstest.TokenOptions{})})
	case "google_chat":
		e.postWebhook(t, channel, readTestdata(t, "googlechat", "message_dm.json"),
			map[string]string{"Authorization": "Bearer " + e.gchat.ChatToken(t, e2eGoogleProject, now)})
	}
}

func readTestdata(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "channels", dir, "testdata", name))
	require.NoError(t, err)
	return b
}

// pull waits for the next delivered message of channel and acks it.
func (e *e2e) pull(t *testing.T, channel string) envelope.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ds, err := e.api.Pull(ctx, "e2e", 10, 2*time.Second)
		require.NoError(t, err)
		for _, d := range ds {
			_, err := e.api.Ack(ctx, "e2e", d.DeliveryID)
			require.NoError(t, err)
			if d.Message.ChannelType == channel {
				return d.Message
			}
		}
	}
}

// send POSTs a SendCommand and waits until its handoff is over; it returns
// the outbound id.
func (e *e2e) send(t *testing.T, cmd map[string]any) uuid.UUID {
	t.Helper()
	body, _ := json.Marshal(cmd)
	req, err := http.NewRequest(http.MethodPost, e.public+"/v1/outbound", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var out struct {
		ID uuid.UUID `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, string(raw))
	require.NoError(t, json.Unmarshal(raw, &out))
	var state struct {
		HandoffState string `json:"handoff_state"`
		LastError    string `json:"last_error"`
	}
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, e.public+"/v1/outbound/"+out.ID.String(), nil)
		req.Header.Set("Authorization", "Bearer "+e.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&state)
		return state.HandoffState == "handed_off" || state.HandoffState == "dead"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "handed_off", state.HandoffState, state.LastError)
	return out.ID
}

// TestEndToEndEveryChannel: for each channel startE2E has a fake platform
// and an account for, through its account's api_base_url: a message in (webhook, or getUpdates polling for
// Telegram) → consumer pull → reply (POST /v1/outbound) → the fake platform
// receives it exactly once; then an edit of the reply reaches the fake as
// an edit (as a new message on WhatsApp and Zoho Cliq, whose adapters
// cannot edit). Finally a Slack edit arrives pointing at its original
// (edit_of).
func TestEndToEndEveryChannel(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	for _, ch := range slices.Sorted(maps.Keys(e.accounts)) {
		t.Run(ch, func(t *testing.T) {
			e.inbound(t, ch)
			msg := e.pull(t, ch)
			require.Equal(t, e.accounts[ch], msg.AccountID)
			replyText, editText := "reply on "+ch, "edited reply on "+ch
			reply := e.send(t, map[string]any{"idempotency_key": ch + "-reply", "account_id": e.accounts[ch],
				"conversation_id": msg.Conversation.ID, "text": replyText})
			e.send(t, map[string]any{"idempotency_key": ch + "-edit", "account_id": e.accounts[ch],
				"conversation_id": msg.Conversation.ID, "text": editText, "edit_of": reply})

			var sends, edits []platformCall
			switch ch {
			case "teams":
				sends = teamsCalls(e.teams)
			case "google_chat":
				sends = googleCalls(e.gchat)
			case "telegram":
				for _, c := range e.tg.Calls("") {
					pc := platformCall{Channel: ch, Op: "send", Text: fmt.Sprint(c.Body["text"]), Conversation: fmt.Sprint(c.Body["chat_id"])}
					if c.Method == "editMessageText" {
						pc.Op = "edit"
					}
					sends = append(sends, pc)
				}
			default:
				sends = e.fakes.received(fakePrefix(ch))
			}
			for _, c := range sends {
				if c.Op == "edit" {
					edits = append(edits, c)
				}
			}
			byText := map[string]int{}
			for _, c := range sends {
				byText[c.Text]++
			}
			require.Equal(t, 1, byText[replyText], "%s: the reply reached the platform exactly once: %+v", ch, sends)
			require.Equal(t, 1, byText[editText], "%s: the edit reached the platform exactly once: %+v", ch, sends)
			switch ch {
			case "whatsapp", "zoho_cliq":
				require.Empty(t, edits, "%s cannot edit: the edit is sent as a new message", ch)
			default:
				require.Len(t, edits, 1, "%s: the edit arrived as an edit", ch)
				require.Equal(t, editText, edits[0].Text)
			}
			if ch == "whatsapp" {
				require.Equal(t, "16505551234@v21.0/106540352242922", sends[0].Conversation, "graph_version and phone number in the path")
			}
		})
	}
	// An edit of the Slack message pulled above points at it.
	t.Run("slack edit_of", func(t *testing.T) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		body := []byte(`{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"EvE2E2","event_time":1700000100,` +
			`"event":{"type":"message","subtype":"message_changed","channel":"C0E2E","channel_type":"channel","ts":"1700000100.000200",` +
			`"message":{"type":"message","user":"U1","text":"hello slack, edited","ts":"1700000000.000100"},` +
			`"previous_message":{"type":"message","user":"U1","text":"hello slack","ts":"1700000000.000100"}}}`)
		e.postWebhook(t, "slack", body, map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature(e.slackSecret, ts, body)})
		edit := e.pull(t, "slack")
		require.True(t, edit.Edited)
		require.NotNil(t, edit.EditOf)
		require.NotNil(t, edit.EditOf.ID, "the original was stored: its MIO id")
		require.Equal(t, "EvE2E1", edit.EditOf.SourceMessageID)
		require.Equal(t, "1700000000.000100", edit.EditOf.PlatformMessageID)
		orig, err := e.api.GetMessage(context.Background(), *edit.EditOf.ID)
		require.NoError(t, err)
		require.Equal(t, "hello slack", orig.Text)
	})
	// A batch of replies: one transaction, each reaches the platform once.
	t.Run("batch", func(t *testing.T) {
		var cmds []envelope.SendCommand
		for i := range 3 {
			cmds = append(cmds, envelope.SendCommand{IdempotencyKey: fmt.Sprintf("batch-%d", i), AccountID: e.accounts["webhook"],
				ConversationID: "batch-conv", Text: fmt.Sprintf("batch reply %d", i)})
		}
		cmds = append(cmds, envelope.SendCommand{IdempotencyKey: "batch-bad", AccountID: uuid.New(), ConversationID: "batch-conv", Text: "x"})
		items, err := e.api.SendBatch(context.Background(), cmds)
		require.NoError(t, err)
		require.Len(t, items, 4)
		for _, it := range items[:3] {
			require.Equal(t, http.StatusAccepted, it.Status)
			require.Nil(t, it.Err)
		}
		require.Equal(t, http.StatusBadRequest, items[3].Status)
		require.Equal(t, "bad_request", items[3].Err.Code)
		require.Eventually(t, func() bool {
			n := map[string]int{}
			for _, c := range e.fakes.received("webhook") {
				n[c.Text]++
			}
			return n["batch reply 0"] == 1 && n["batch reply 1"] == 1 && n["batch reply 2"] == 1
		}, 20*time.Second, 20*time.Millisecond, "each batch reply handed off once")
	})
	_, conflicts, deletes := e.tg.PollStats()
	require.Zero(t, conflicts)
	require.Equal(t, 1, deletes, "delete_webhook once when polling starts")
}

// e2eGoogleProject is the Cloud project number of the Google Chat account.
const e2eGoogleProject = "123456789012"

// googleCalls are the creates and updates the fake Chat API accepted.
func googleCalls(f *channelstest.FakeGoogle) []platformCall {
	var out []platformCall
	for _, c := range f.Calls() {
		text, _ := c.Body["text"].(string)
		pc := platformCall{Channel: "google_chat", Op: "send", Text: text, Conversation: strings.TrimSuffix(strings.TrimPrefix(c.Path, "/v1/"), "/messages")}
		switch c.Method {
		case http.MethodPatch:
			pc.Op, pc.EditID = "edit", strings.TrimPrefix(c.Path, "/v1/")
		case http.MethodDelete:
			pc.Op = "delete"
		}
		out = append(out, pc)
	}
	return out
}

// fakePrefix is the fake's path prefix (and call channel) of a channel.
func fakePrefix(ch string) string {
	if ch == "zoho_cliq" {
		return "zoho"
	}
	return ch
}
