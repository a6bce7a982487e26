package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/mcpserver"
)

// TestMCPToolsList: both transports list every tool with an input and an
// output schema, a description and annotations.
func TestMCPToolsList(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			res, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
				require.NotEmpty(t, tl.Description, tl.Name)
				require.NotNil(t, tl.InputSchema, tl.Name)
				require.NotNil(t, tl.OutputSchema, tl.Name)
				require.NotNil(t, tl.Annotations, tl.Name)
				objectSchemas(t, tl.Name, tl.InputSchema)
				objectSchemas(t, tl.Name, tl.OutputSchema)
			}
			require.ElementsMatch(t, mcpserver.ToolNames, names)
			tpl, err := cs.ListResourceTemplates(context.Background(), nil)
			require.NoError(t, err)
			var uris []string
			for _, r := range tpl.ResourceTemplates {
				uris = append(uris, r.URITemplate)
			}
			require.ElementsMatch(t, []string{"mio://messages/{id}", "mio://attachments/{id}"}, uris)
		})
	}
}

// objectSchemas fails on a property schema that is not a JSON object:
// clients (the TypeScript SDK's) refuse a tool list holding a boolean
// schema such as true.
func objectSchemas(t *testing.T, tool string, schema any) {
	t.Helper()
	b, err := json.Marshal(schema)
	require.NoError(t, err)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s: schema at %s is %v, not an object", tool, path, v)
		if props, ok := m["properties"].(map[string]any); ok {
			for k, p := range props {
				walk(path+"."+k, p)
			}
		}
		if items, ok := m["items"]; ok {
			walk(path+"[]", items)
		}
	}
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	walk("$", v)
}

// TestMCPPullReplyHistory: a message that arrived by webhook is pulled,
// answered with reply (twice: sent once), and shows in the
// conversation's history with its answer; send_message, get_send_status,
// show_typing and get_message work on it. Over both transports.
func TestMCPPullReplyHistory(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			consumer := "agent-" + tr
			// The first pull creates the consumer (deliver policy new).
			require.Empty(t, deliveries(ok(t, cs, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})))
			conv := "conv-" + tr
			st.webhook(t, st.a, conv, "hello "+tr)
			d := pullOne(t, cs, consumer)
			msg := d["message"].(map[string]any)
			require.Equal(t, "hello "+tr, msg["text"])
			require.NotContains(t, msg, "raw")
			require.EqualValues(t, 1, d["delivery_count"])
			lease, err := time.Parse(time.RFC3339Nano, d["lease_expires_at"].(string))
			require.NoError(t, err)
			require.WithinDuration(t, time.Now().Add(30*time.Second), lease, 5*time.Second)

			got := ok(t, cs, "get_message", map[string]any{"id": msg["id"]})
			require.Equal(t, msg["text"], got["text"])

			typing := ok(t, cs, "show_typing", map[string]any{"account_id": msg["account_id"],
				"conversation_id": conv})
			require.Equal(t, "unsupported", typing["status"]) // the webhook channel has no indicator

			before := st.count(t, "mio.outbox")
			r1 := ok(t, cs, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"], "text": "answer"})
			require.Equal(t, "queued", r1["handoff_state"])
			r2 := ok(t, cs, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"], "text": "answer"})
			require.Equal(t, r1["outbound_id"], r2["outbound_id"], "calling reply twice sends once")
			require.Equal(t, before+1, st.count(t, "mio.outbox"))
			// The reply acknowledged the delivery.
			res := ok(t, cs, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}})
			require.Equal(t, false, res["results"].([]any)[0].(map[string]any)["ok"])

			status := ok(t, cs, "get_send_status", map[string]any{"id": r1["outbound_id"]})
			require.Equal(t, "answer", status["text"])
			require.Equal(t, conv, status["conversation_id"])

			s1 := ok(t, cs, "send_message", map[string]any{"account_id": msg["account_id"], "conversation_id": conv,
				"text": "follow-up", "idempotency_key": "f-" + tr})
			s2 := ok(t, cs, "send_message", map[string]any{"account_id": msg["account_id"], "conversation_id": conv,
				"text": "follow-up", "idempotency_key": "f-" + tr})
			require.Equal(t, s1["outbound_id"], s2["outbound_id"])

			h := ok(t, cs, "conversation_history", map[string]any{"account_id": msg["account_id"], "conversation_id": conv})
			var seen []string
			for _, it := range h["items"].([]any) {
				it := it.(map[string]any)
				if it["direction"] == "inbound" {
					seen = append(seen, "in:"+it["message"].(map[string]any)["text"].(string))
				} else {
					seen = append(seen, "out:"+it["outbound"].(map[string]any)["text"].(string))
				}
			}
			require.Equal(t, []string{"in:hello " + tr, "out:answer", "out:follow-up"}, seen)
			require.NotContains(t, h, "next_cursor")
			// Paged: one at a time, newest first, each page oldest first.
			p1 := ok(t, cs, "conversation_history", map[string]any{"account_id": msg["account_id"], "conversation_id": conv, "limit": 2})
			require.Len(t, p1["items"], 2)
			p2 := ok(t, cs, "conversation_history", map[string]any{"account_id": msg["account_id"], "conversation_id": conv,
				"limit": 2, "before": p1["next_cursor"]})
			require.Len(t, p2["items"], 1)
			require.Equal(t, "inbound", p2["items"].([]any)[0].(map[string]any)["direction"])
		})
	}
}

// TestMCPReact: react queues a reaction like POST /v1/reactions (the
// same idempotency key twice is one outbox row), takes it back with
// remove, and
// an account whose channel cannot react answers capability_missing with
// nothing written.
func TestMCPReact(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			args := map[string]any{"account_id": st.a.telegram.String(), "conversation_id": "chat-" + tr, "message_id": "42", "emoji": "👍",
				"idempotency_key": "r-" + tr}
			before := st.count(t, "mio.outbox")
			r1 := ok(t, cs, "react", args)
			require.Equal(t, "queued", r1["handoff_state"])
			r2 := ok(t, cs, "react", args)
			require.Equal(t, r1["outbound_id"], r2["outbound_id"], "the same key twice is one reaction")
			delete(args, "idempotency_key")
			args["remove"] = true
			r3 := ok(t, cs, "react", args)
			require.NotEqual(t, r1["outbound_id"], r3["outbound_id"])
			require.Equal(t, before+2, st.count(t, "mio.outbox"))
			status := ok(t, cs, "get_send_status", map[string]any{"id": r3["outbound_id"]})
			require.Equal(t, "chat-"+tr, status["conversation_id"])

			msg := fails(t, cs, "react", map[string]any{"account_id": st.a.account.String(), "conversation_id": "c",
				"message_id": "1", "emoji": "👍"})
			require.Contains(t, msg, "webhook channel has no reactions capability")
			require.Equal(t, before+2, st.count(t, "mio.outbox"))
			for field, a := range map[string]map[string]any{
				"account_id":      {"account_id": "x", "conversation_id": "c", "message_id": "1", "emoji": "👍"},
				"conversation_id": {"account_id": st.a.telegram.String(), "message_id": "1", "emoji": "👍"},
				"message_id":      {"account_id": st.a.telegram.String(), "conversation_id": "c", "emoji": "👍"},
				"emoji":           {"account_id": st.a.telegram.String(), "conversation_id": "c", "message_id": "1"},
			} {
				require.Contains(t, fails(t, cs, "react", a), field)
			}
			// Another tenant's account is no account.
			require.Contains(t, fails(t, st.connect(t, tr, st.b.agent), "react", map[string]any{"account_id": st.a.telegram.String(),
				"conversation_id": "c", "message_id": "1", "emoji": "👍"}), "account")
			require.Contains(t, fails(t, st.connect(t, tr, st.a.read), "react", args), "produce")
		})
	}
}

// TestMCPSettle: ack, release (delivered again) and extend report per id;
// an unknown id is ok false, not an error.
func TestMCPSettle(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			consumer := "settle-" + tr
			ok(t, cs, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})
			st.webhook(t, st.a, "s1-"+tr, "one")
			d := pullOne(t, cs, consumer)
			ext := ok(t, cs, "extend_lease", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"], uuid.NewString()}})
			rs := ext["results"].([]any)
			require.Equal(t, true, rs[0].(map[string]any)["ok"])
			require.Equal(t, false, rs[1].(map[string]any)["ok"])
			require.NotEmpty(t, ext["lease_expires_at"])
			rel := ok(t, cs, "release_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}})
			require.Equal(t, true, rel["results"].([]any)[0].(map[string]any)["ok"])
			again := pullOne(t, cs, consumer)
			require.Equal(t, d["message"].(map[string]any)["id"], again["message"].(map[string]any)["id"])
			require.EqualValues(t, 2, again["delivery_count"])
			ack := ok(t, cs, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{again["delivery_id"]}})
			require.Equal(t, true, ack["results"].([]any)[0].(map[string]any)["ok"])
			require.Empty(t, deliveries(ok(t, cs, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})))
		})
	}
}

// TestMCPCrashBetweenPullAndReply: an agent that pulled and died comes
// back after the lease: the message is delivered again, and a reply to
// the old delivery is refused with nothing written.
func TestMCPCrashBetweenPullAndReply(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			consumer := "crash-" + tr
			_, err := client.New(st.srv.URL, st.a.agent).PutConsumer(context.Background(), consumer,
				client.ConsumerConfig{DeliverPolicy: "new", AckWait: client.Duration(time.Second)})
			require.NoError(t, err)
			first := st.connect(t, tr, st.a.agent)
			st.webhook(t, st.a, "crash-"+tr, "are you there?")
			lost := pullOne(t, first, consumer)
			_ = first.Close() // the agent dies before replying

			cs := st.connect(t, tr, st.a.agent)
			again := pullOne(t, cs, consumer) // waits out the 1 s lease
			require.Equal(t, lost["message"].(map[string]any)["id"], again["message"].(map[string]any)["id"])
			require.EqualValues(t, 2, again["delivery_count"])

			before := st.count(t, "mio.outbox")
			msg := fails(t, cs, "reply", map[string]any{"consumer": consumer, "delivery_id": lost["delivery_id"], "text": "late"})
			require.Contains(t, msg, "no longer leased")
			require.Contains(t, msg, "nothing was sent")
			require.Equal(t, before, st.count(t, "mio.outbox"), "a reply to a lost lease writes nothing")
			ok(t, cs, "reply", map[string]any{"consumer": consumer, "delivery_id": again["delivery_id"], "text": "yes"})
			require.Equal(t, before+1, st.count(t, "mio.outbox"))
		})
	}
}

// TestMCPBadInput: a malformed argument is a tool error naming the field.
func TestMCPBadInput(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			for _, c := range []struct {
				tool  string
				args  map[string]any
				field string
			}{
				{"pull_messages", map[string]any{"max_messages": 0}, "max_messages"},
				{"pull_messages", map[string]any{"max_messages": 101}, "max_messages"},
				{"pull_messages", map[string]any{"wait": "forever"}, "wait"},
				{"pull_messages", map[string]any{"wait": "61s"}, "wait"},
				{"pull_messages", map[string]any{"consumer": "no spaces"}, "consumer"},
				{"ack_messages", map[string]any{"delivery_ids": []any{"x"}}, "delivery_ids"},
				{"ack_messages", map[string]any{"delivery_ids": []any{}}, "delivery_ids"},
				{"ack_messages", map[string]any{}, "delivery_ids"},
				{"release_messages", map[string]any{"delivery_ids": []any{uuid.NewString()}, "delay": "13h"}, "delay"},
				{"reply", map[string]any{"delivery_id": "nope", "text": "x"}, "delivery_id"},
				{"reply", map[string]any{"text": "x"}, "delivery_id"},
				{"send_message", map[string]any{"account_id": "a", "conversation_id": "c", "text": "x"}, "account_id"},
				{"send_message", map[string]any{"account_id": st.a.account.String(), "conversation_id": "c", "text": "x", "edit_of": "e"}, "edit_of"},
				{"send_message", map[string]any{"account_id": st.a.account.String(), "conversation_id": "c"}, "text"},
				{"get_message", map[string]any{"id": "nope"}, "id"},
				{"get_send_status", map[string]any{"id": 42}, "id"},
				{"show_typing", map[string]any{"account_id": st.a.account.String()}, "conversation_id"},
				{"conversation_history", map[string]any{"account_id": st.a.account.String(), "conversation_id": "c", "limit": 500}, "limit"},
				{"conversation_history", map[string]any{"account_id": st.a.account.String(), "conversation_id": "c", "before": "junk"}, "before"},
			} {
				msg := fails(t, cs, c.tool, c.args)
				require.Contains(t, msg, c.field, "%s %v", c.tool, c.args)
			}
		})
	}
}

// TestMCPRolesAndIsolation: a token without a tool's role gets a tool
// error naming the role; another tenant's token never sees this
// tenant's messages, deliveries, sends or attachments.
func TestMCPRolesAndIsolation(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	attID := st.storeAttachment(t, st.a, "hello bytes", "text/plain")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			agent := st.connect(t, tr, st.a.agent)
			consumer := "iso-" + tr
			ok(t, agent, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})
			st.webhook(t, st.a, "iso-"+tr, "secret of a")
			d := pullOne(t, agent, consumer)
			msgID := d["message"].(map[string]any)["id"]
			sent := ok(t, agent, "send_message", map[string]any{"account_id": st.a.account.String(), "conversation_id": "iso-" + tr, "text": "x"})

			read := st.connect(t, tr, st.a.read)
			require.Contains(t, fails(t, read, "pull_messages", map[string]any{"consumer": consumer}), "consume")
			require.Contains(t, fails(t, read, "send_message", map[string]any{"account_id": st.a.account.String(),
				"conversation_id": "c", "text": "x"}), "produce")
			require.Contains(t, fails(t, read, "show_typing", map[string]any{"account_id": st.a.account.String(),
				"conversation_id": "c"}), "produce")
			require.Contains(t, fails(t, read, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"],
				"text": "x"}), "consume")
			consumeOnly := st.connect(t, tr, st.a.consume)
			require.Contains(t, fails(t, consumeOnly, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"],
				"text": "x"}), "produce")
			require.Contains(t, fails(t, consumeOnly, "conversation_history", map[string]any{"account_id": st.a.account.String(),
				"conversation_id": "c"}), "read")
			produce := st.connect(t, tr, st.a.produce)
			require.Contains(t, fails(t, produce, "get_message", map[string]any{"id": msgID}), "read")
			require.Contains(t, fails(t, produce, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}}), "consume")

			other := st.connect(t, tr, st.b.agent)
			require.Contains(t, fails(t, other, "get_message", map[string]any{"id": msgID}), "no such message")
			require.Contains(t, fails(t, other, "get_send_status", map[string]any{"id": sent["outbound_id"]}), "no such")
			// b has no consumer of that name: a's deliveries are not b's.
			require.Contains(t, fails(t, other, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}}),
				"no such consumer")
			require.Empty(t, deliveries(ok(t, other, "pull_messages", map[string]any{"consumer": consumer, "wait": "0s"})))
			res := ok(t, other, "ack_messages", map[string]any{"consumer": consumer, "delivery_ids": []any{d["delivery_id"]}})
			require.Equal(t, false, res["results"].([]any)[0].(map[string]any)["ok"])
			require.Contains(t, fails(t, other, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"],
				"text": "x"}), "no longer leased")
			h := ok(t, other, "conversation_history", map[string]any{"account_id": st.a.account.String(), "conversation_id": "iso-" + tr})
			require.Empty(t, h["items"])
			require.Contains(t, fails(t, other, "send_message", map[string]any{"account_id": st.a.account.String(),
				"conversation_id": "iso-" + tr, "text": "x"}), "account")
			_, err := other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://attachments/" + attID})
			require.Error(t, err)
			require.Contains(t, err.Error(), "not found")
			_, err = other.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://messages/" + msgID.(string)})
			require.Error(t, err)

			// The message is still a's, and a's delivery still live.
			ok(t, agent, "reply", map[string]any{"consumer": consumer, "delivery_id": d["delivery_id"], "text": "done"})
		})
	}
	// Tokens never reach the logs.
	for _, tok := range []string{st.a.agent, st.a.read, st.a.consume, st.a.produce, st.b.agent} {
		require.NotContains(t, st.logs.String(), tok)
		_, secret, _ := strings.Cut(tok, "_")
		require.NotContains(t, st.logs.String(), secret)
	}
}

// storeAttachment stores bytes as a settled attachment of tenant tn and
// returns its id.
func (st *stack) storeAttachment(t *testing.T, tn tenant, data, mimeType string) string {
	t.Helper()
	ctx := context.Background()
	key := "attachments/test/" + uuid.NewString()
	_, _, err := st.store.Put(ctx, key, strings.NewReader(data), blob.PutOptions{ContentType: mimeType})
	require.NoError(t, err)
	id := uuid.New()
	_, err = st.owner.Exec(ctx, `INSERT INTO mio.attachments (tenant_id, id, message_id, account_id, channel_type, status,
		kind, name, mime_type, size, storage_key, content_sha256) VALUES ($1, $2, $3, $4, 'webhook', 'stored', 'file', 'a.txt', $5, $6, $7, 'x')`,
		tn.id, id, uuid.New(), tn.account, mimeType, len(data), key)
	require.NoError(t, err)
	return id.String()
}

// TestMCPResources: an attachment's bytes with its MIME type, and a
// message as JSON, over both transports.
func TestMCPResources(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	attID := st.storeAttachment(t, st.a, "\x89PNG fake image", "image/png")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := st.connect(t, tr, st.a.agent)
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://attachments/" + attID})
			require.NoError(t, err)
			require.Len(t, res.Contents, 1)
			require.Equal(t, "image/png", res.Contents[0].MIMEType)
			require.Equal(t, []byte("\x89PNG fake image"), res.Contents[0].Blob)

			ok(t, cs, "pull_messages", map[string]any{"consumer": "res-" + tr, "wait": "0s"})
			st.webhook(t, st.a, "res-"+tr, "read me")
			d := pullOne(t, cs, "res-"+tr)
			id := d["message"].(map[string]any)["id"].(string)
			res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://messages/" + id})
			require.NoError(t, err)
			require.Equal(t, "application/json", res.Contents[0].MIMEType)
			require.Contains(t, res.Contents[0].Text, `"read me"`)

			_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://attachments/" + uuid.NewString()})
			require.Error(t, err)
			_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mio://messages/not-a-uuid"})
			require.Error(t, err)
		})
	}
}

// TestMCPHTTPOriginAndToken: /mcp refuses a browser Origin that is not
// allowed (403) and a missing or bad token (401); an allowed Origin and
// no Origin pass, and so does a public Host name reaching a loopback
// listener through a proxy.
func TestMCPHTTPOriginAndToken(t *testing.T) {
	t.Parallel()
	st := newStack(t, "https://agent.example.com")
	post := func(token, origin string, host ...string) int {
		req, _ := http.NewRequest(http.MethodPost, st.srv.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if len(host) > 0 {
			req.Host = host[0]
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post(st.a.agent, ""))
	require.Equal(t, http.StatusOK, post(st.a.agent, "https://agent.example.com"))
	require.Equal(t, http.StatusForbidden, post(st.a.agent, "https://evil.example.com"))
	require.Equal(t, http.StatusForbidden, post(st.a.agent, "http://agent.example.com"))
	require.Equal(t, http.StatusUnauthorized, post("", ""))
	require.Equal(t, http.StatusUnauthorized, post("mio_bogus", ""))
	// Behind a reverse proxy on the same host (a sidecar, nginx to
	// 127.0.0.1) the Host header is the public name: served, as /v1 is.
	require.Equal(t, http.StatusOK, post(st.a.agent, "", "mio.example.com"))

	// Stateless: a lone tools/call, as README's curl sends it, is answered.
	req, _ := http.NewRequest(http.MethodPost, st.srv.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pull_messages","arguments":{"wait":"0s"}}}`))
	req.Header.Set("Authorization", "Bearer "+st.a.agent)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.False(t, answer.Result.IsError)
	require.Contains(t, answer.Result.StructuredContent, "deliveries")
}

// TestMCPServerUnreachable: over stdio, a MIO that cannot be reached is a
// tool error saying so.
func TestMCPServerUnreachable(t *testing.T) {
	t.Parallel()
	backend := mcpserver.NewClientBackend(client.New("http://127.0.0.1:1", "mio_x", client.WithRetry(client.Retry{Attempts: 1})))
	srv := mcpserver.New(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
		return backend, nil
	}})
	t1, t2 := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, t1, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, t2, nil)
	require.NoError(t, err)
	defer cs.Close()
	msg := fails(t, cs, "get_message", map[string]any{"id": uuid.NewString()})
	require.Contains(t, msg, "could not be reached")
	require.NotContains(t, msg, "mio_x")
}

// TestMCPCreateKeepsConfigured: `mio mcp`'s backend creates the consumer
// a pull names only when there is none: a consumer configured in the
// meantime (a PUT between the pull that found none and the create) keeps
// its settings. (The in-process backend creates through
// consume.Service.Ensure: TestEnsureNeverOverwrites.)
func TestMCPCreateKeepsConfigured(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	ctx := context.Background()
	c := client.New(st.srv.URL, st.a.agent)
	_, err := c.PutConsumer(ctx, "configured", client.ConsumerConfig{DeliverPolicy: mcpserver.CreatedDeliverPolicy,
		Ordering: "none", AckWait: client.Duration(2 * time.Minute), MaxDeliver: 7})
	require.NoError(t, err)
	ackWait, err := mcpserver.NewClientBackend(c).CreateConsumer(ctx, "configured")
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, ackWait, "the configured consumer's ack_wait")
	info, err := c.GetConsumer(ctx, "configured")
	require.NoError(t, err)
	require.Equal(t, "none", info.Ordering)
	require.Equal(t, 7, info.MaxDeliver)
	require.Equal(t, client.Duration(2*time.Minute), info.AckWait)
}
