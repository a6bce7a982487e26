package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/whatsapp"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/envelope"
)

// postRaw POSTs body to an account's webhook URL with the given headers
// and returns the status and answer.
func (e *e2e) postRaw(t *testing.T, channel string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.public+"/webhooks/"+channel+"/"+e.accounts[channel].String(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// pullNone requires that no message of channel is delivered within d.
func (e *e2e) pullNone(t *testing.T, channel string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	defer cancel()
	ds, err := e.api.Pull(ctx, "e2e", 10, d)
	require.NoError(t, err)
	for _, dl := range ds {
		_, err := e.api.Ack(ctx, "e2e", dl.DeliveryID)
		require.NoError(t, err)
		require.NotEqual(t, channel, dl.Message.ChannelType, "a second delivery: %+v", dl.Message)
	}
}

// TestEndToEndInteractions: a button click on Slack (a signed,
// form-encoded block_actions), Telegram (a callback_query polled with
// getUpdates), Discord (a signed component interaction), WhatsApp (a
// signed button_reply), Teams (an adaptiveCard/action invoke with a Bot
// Framework token) and Google Chat (a CARD_CLICKED event with Chat's
// token) is one interaction envelope a consumer pulls, delivered twice by
// the platform and stored once. Each acknowledgement is made within its
// platform's deadline: Telegram's query is answered
// (answerCallbackQuery), Discord's request with a deferred update (type
// 6), Teams' invoke with its invoke response, Google Chat's event with
// an empty message and Slack's and WhatsApp's with 200.
// Then POST /v1/reactions reaches each platform once (Teams at the
// conversation's service URL), and a channel without reactions is
// refused with 422.
func TestEndToEndInteractions(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	want := map[string]envelope.Interaction{
		"slack":       {ActionID: "approve", Value: "run-42", MessageID: "1717171717.000200"},
		"telegram":    {ActionID: "deploy", Value: "approve", MessageID: "1370"},
		"discord":     {ActionID: "approve_refund", Value: "4711", MessageID: "1240183690000000000"},
		"whatsapp":    {ActionID: "deploy", Value: "approve", MessageID: "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBJBQkNERUZBQkNERUZBQkNERUYA"},
		"teams":       {ActionID: "approve", Value: "run-42", MessageID: "1714564980123"},
		"google_chat": {ActionID: "approve", Value: "run-42", MessageID: "spaces/AAAAdRk7Z1M/messages/bOt.bOt"},
	}
	// acked POSTs a click and requires the platform's answer within
	// deadline.
	acked := func(t *testing.T, channel string, body []byte, hdr map[string]string, answer string) {
		start := time.Now()
		status, got := e.postRaw(t, channel, body, hdr)
		require.Equal(t, http.StatusOK, status, got)
		if answer != "" {
			require.JSONEq(t, answer, got)
		}
		require.Less(t, time.Since(start), 3*time.Second, "%s: the acknowledgement's deadline", channel)
	}
	click := map[string]func(t *testing.T){
		"slack": func(t *testing.T) {
			form := bytes.TrimSpace(readTestdata(t, "slack", "block_actions.form"))
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			status, body := e.postRaw(t, "slack", form, map[string]string{"Content-Type": "application/x-www-form-urlencoded",
				"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature(e.slackSecret, ts, form)})
			require.Equal(t, http.StatusOK, status, body)
		},
		"telegram": func(*testing.T) {
			e.tg.AddUpdate(`"callback_query":{"id":"4382bfdwdsb323b2d9","from":{"id":4242,"is_bot":false,"first_name":"Ada"},` +
				`"message":{"message_id":1370,"date":1717173000,"chat":{"id":4242,"type":"private"},"text":"Approve the deploy?"},` +
				`"chat_instance":"-88","data":"deploy:approve"}`)
		},
		"discord": func(t *testing.T) {
			body := readTestdata(t, "discord", "component_button.json")
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			sig := ed25519.Sign(e.discordKey, append([]byte(ts), body...))
			start := time.Now()
			status, answer := e.postRaw(t, "discord", body, map[string]string{"X-Signature-Ed25519": hex.EncodeToString(sig), "X-Signature-Timestamp": ts})
			require.Equal(t, http.StatusOK, status, answer)
			require.JSONEq(t, `{"type":6}`, answer, "DEFERRED_UPDATE_MESSAGE")
			require.Less(t, time.Since(start), 3*time.Second, "Discord's deadline")
		},
		"whatsapp": func(t *testing.T) {
			body := bytes.ReplaceAll(readTestdata(t, "whatsapp", "interactive_reply.json"), []byte(`"approve-1"`), []byte(`"deploy:approve"`))
			acked(t, "whatsapp", body, map[string]string{"X-Hub-Signature-256": whatsapp.Sign(e.waSecret, body)}, "")
		},
		"teams": func(t *testing.T) {
			// The activity's service URL is the fake's (a regional one), so
			// the reaction below goes there.
			body := bytes.ReplaceAll(readTestdata(t, "teams", "invoke_action_execute.json"),
				[]byte("https://smba.trafficmanager.net/emea/"), []byte(e.teams.URL+"/emea/"))
			acked(t, "teams", body, map[string]string{"Authorization": e.teams.Sign(t, body, time.Now(), channelstest.TokenOptions{})},
				`{"statusCode":200,"type":"application/vnd.microsoft.activity.message","value":"Approve"}`)
		},
		"google_chat": func(t *testing.T) {
			acked(t, "google_chat", readTestdata(t, "googlechat", "card_clicked_button.json"),
				map[string]string{"Authorization": "Bearer " + e.gchat.ChatToken(t, e2eGoogleProject, time.Now())}, `{}`)
		},
	}
	for _, ch := range []string{"slack", "telegram", "discord", "whatsapp", "teams", "google_chat"} {
		t.Run(ch, func(t *testing.T) {
			click[ch](t)
			got := e.pull(t, ch)
			require.Equal(t, envelope.KindInteraction, got.Kind)
			require.NotNil(t, got.Interaction)
			require.Equal(t, want[ch], *got.Interaction)
			if ch == "telegram" {
				// The same update is not polled twice (the offset moved on):
				// the query's answer is what shows the click was taken.
				require.Eventually(t, func() bool { return len(e.tg.Calls("answerCallbackQuery")) == 1 }, 10*time.Second, 20*time.Millisecond)
				require.Equal(t, "4382bfdwdsb323b2d9", e.tg.Calls("answerCallbackQuery")[0].Body["callback_query_id"])
				return
			}
			click[ch](t) // the platform's redelivery
			e.pullNone(t, ch, time.Second)
		})
	}

	targets := map[string]struct{ conv, msg, emoji string }{
		"slack":    {"C0CA5", "1717171717.000200", "thumbsup"},
		"telegram": {"4242", "1370", "👍"},
		"discord":  {"881207955029110858", "1240183690000000000", "👍"},
		"teams":    {"a:1XJKJMvc5GBtc2JwZq0oj8tHZmzrQgFmB39ATiQWA85gQtHieVkKilBZ9XHoq9j7Zaqt7CZ-NJWi7me2kHTL3Bw", "1714564980123", "👍"},
	}
	for _, ch := range []string{"slack", "telegram", "discord", "teams"} {
		t.Run(ch+" reaction", func(t *testing.T) {
			tg := targets[ch]
			sent, err := e.api.React(context.Background(), envelope.ReactionCommand{IdempotencyKey: ch + "-react",
				AccountID: e.accounts[ch], ConversationID: tg.conv, MessageID: tg.msg, Emoji: tg.emoji})
			require.NoError(t, err)
			var o *client.Outbound
			require.Eventually(t, func() bool {
				o, err = e.api.GetOutbound(context.Background(), sent.ID)
				return err == nil && (o.HandoffState == "handed_off" || o.HandoffState == "dead")
			}, 30*time.Second, 20*time.Millisecond)
			require.Equal(t, "handed_off", o.HandoffState, o.LastError)
			require.Equal(t, envelope.KindReaction, o.Kind)
			require.Equal(t, &envelope.ReactionSend{MessageID: tg.msg, Emoji: tg.emoji}, o.Reaction)
			var calls []string
			switch ch {
			case "telegram":
				for _, c := range e.tg.Calls("setMessageReaction") {
					calls = append(calls, fmt.Sprint(c.Body["chat_id"], " ", c.Body["message_id"], " ", c.Body["reaction"]))
				}
				require.Equal(t, []string{"4242 1370 [map[emoji:👍 type:emoji]]"}, calls)
			case "teams":
				for _, c := range e.teams.Calls() {
					if strings.Contains(c.Path, "/reactions/") {
						calls = append(calls, c.Method+" "+c.Region+" "+c.Path)
					}
				}
				require.Equal(t, []string{"PUT emea /v3/conversations/" + tg.conv + "/activities/1714564980123/reactions/like"}, calls,
					"at the service URL of the conversation's invoke")
			default:
				for _, c := range e.fakes.received(ch) {
					if strings.HasPrefix(c.Op, "react") {
						calls = append(calls, c.Op+" "+c.Conversation+" "+c.EditID+" "+c.Text)
					}
				}
				wantCall := "reactions.add C0CA5 1717171717.000200 thumbsup"
				if ch == "discord" {
					wantCall = "react PUT 881207955029110858 1240183690000000000 👍" // the path as decoded
				}
				require.Equal(t, []string{wantCall}, calls)
			}
		})
	}
	t.Run("channel without reactions", func(t *testing.T) {
		_, err := e.api.React(context.Background(), envelope.ReactionCommand{AccountID: e.accounts["zoho_cliq"],
			ConversationID: "c", MessageID: "m", Emoji: "👍"})
		var apiErr *client.APIError
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, http.StatusUnprocessableEntity, apiErr.Status)
		require.Contains(t, apiErr.Message, "reactions capability")
	})
}
