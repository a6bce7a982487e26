package workers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// action is what the fake platform does with one call.
type action int

const (
	actOK        action = iota
	actRateLimit        // 429 with Retry-After: 1
	actServerErr        // 5xx
	actTimeout          // answers only after the caller gave up
	actPermanent        // the platform's permanent 4xx
)

// call is one request the fake received.
type call struct {
	Channel      string
	Op           string // send, edit or react
	Conversation string
	Text         string
	Key          string // webhook-id (webhook channel), nonce (discord)
	EditID       string // the provider id an edit names
	At           time.Time
}

// fakeProviders speaks the send and edit endpoints of all six channels
// under one server: /slack, /telegram, /discord, /zoho, /whatsapp (API
// bases) and /webhook (endpoint URLs). script decides each call's fate
// from (channel, conversation, n-th call of that conversation).
type fakeProviders struct {
	srv    *httptest.Server
	script func(channel, conversation string, n int) action

	mu    sync.Mutex
	calls []call
	count map[string]int
	seq   int64
}

func newFakeProviders(t testing.TB, script func(channel, conversation string, n int) action) *fakeProviders {
	t.Helper()
	f := &fakeProviders{script: script, count: map[string]int{}, seq: 1000}
	if f.script == nil {
		f.script = func(string, string, int) action { return actOK }
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProviders) apiBase() map[string]string {
	return map[string]string{
		"slack": f.srv.URL + "/slack", "telegram": f.srv.URL + "/telegram", "discord": f.srv.URL + "/discord",
		"zoho_cliq": f.srv.URL + "/zoho", "whatsapp": f.srv.URL + "/whatsapp",
	}
}

// Calls returns the calls received so far.
func (f *fakeProviders) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeProviders) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber() // chat ids are int64: keep every digit
	_ = dec.Decode(&m)
	str := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		case json.Number:
			return x.String()
		}
		return ""
	}
	c := call{Op: "send", At: time.Now()}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch parts[0] {
	case "slack":
		c.Channel, c.Conversation, c.Text = "slack", str(m["channel"]), str(m["text"])
		if strings.HasSuffix(r.URL.Path, "chat.update") {
			c.Op, c.EditID = "edit", str(m["ts"])
		}
		if strings.HasSuffix(r.URL.Path, "reactions.add") {
			c.Op, c.EditID, c.Text = "react", str(m["timestamp"]), str(m["name"])
		}
	case "telegram":
		c.Channel, c.Conversation, c.Text = "telegram", str(m["chat_id"]), str(m["text"])
		if strings.HasSuffix(r.URL.Path, "editMessageText") {
			c.Op, c.EditID = "edit", str(m["message_id"])
		}
		if strings.HasSuffix(r.URL.Path, "setMessageReaction") {
			c.Op, c.EditID = "react", str(m["message_id"])
			if rs, ok := m["reaction"].([]any); ok && len(rs) == 1 {
				if r0, ok := rs[0].(map[string]any); ok {
					c.Text = str(r0["emoji"])
				}
			}
		}
	case "discord": // /discord/channels/{id}/messages[/{mid}]
		c.Channel, c.Conversation, c.Text, c.Key = "discord", parts[2], str(m["content"]), str(m["nonce"])
		if r.Method == http.MethodPatch {
			c.Op, c.EditID = "edit", parts[4]
		}
		if len(parts) > 6 && parts[5] == "reactions" { // .../{mid}/reactions/{emoji}/@me
			c.Op, c.EditID, c.Text = "react", parts[4], parts[6]
		}
	case "zoho": // /zoho/api/v3/chats/{id}/messages
		c.Channel, c.Conversation, c.Text = "zoho_cliq", parts[4], str(m["text"])
	case "whatsapp":
		c.Channel, c.Conversation = "whatsapp", str(m["to"])
		if t, ok := m["text"].(map[string]any); ok {
			c.Text = str(t["body"])
		}
	case "webhook":
		c.Channel, c.Key = "webhook", r.Header.Get("webhook-id")
		if d, ok := m["data"].(map[string]any); ok {
			c.Text = str(d["text"])
			c.EditID = str(d["edit_of_provider_message_id"])
			if conv, ok := d["conversation"].(map[string]any); ok {
				c.Conversation = str(conv["id"])
			}
		}
		if str(m["type"]) == "message.updated" {
			c.Op = "edit"
		}
	default:
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	k := c.Channel + "/" + c.Conversation
	f.count[k]++
	n := f.count[k]
	f.seq++
	id := f.seq
	f.mu.Unlock()
	act := f.script(c.Channel, c.Conversation, n)
	if act == actTimeout {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	if act == actOK {
		// Recorded before answering: what the platform received.
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
	}
	f.answer(w, c, act, id)
}

func (f *fakeProviders) answer(w http.ResponseWriter, c call, act action, id int64) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(status int, body string) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	if act == actRateLimit {
		w.Header().Set("Retry-After", "1")
	}
	pid := strconv.FormatInt(id, 10)
	if c.Op == "edit" {
		pid = c.EditID
	}
	switch c.Channel {
	case "slack":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"ok":true,"channel":%q,"ts":"%s.000100"}`, c.Conversation, strings.TrimSuffix(pid, ".000100")))
		case actRateLimit:
			reply(429, `{"ok":false,"error":"ratelimited"}`)
		case actServerErr:
			w.Header().Set("Content-Type", "text/html")
			reply(503, `<html>unavailable</html>`)
		case actPermanent:
			reply(200, `{"ok":false,"error":"channel_not_found"}`)
		}
	case "telegram":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"ok":true,"result":{"message_id":%s,"chat":{"id":%s},"date":1,"text":"x"}}`, pid, c.Conversation))
		case actRateLimit:
			reply(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`)
		case actServerErr:
			reply(502, `{"ok":false,"error_code":502,"description":"Bad Gateway"}`)
		case actPermanent:
			reply(400, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
		}
	case "discord":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"id":%q,"channel_id":%q}`, pid, c.Conversation))
		case actRateLimit:
			reply(429, `{"message":"You are being rate limited.","retry_after":1,"global":false}`)
		case actServerErr:
			reply(500, `{"message":"500: Internal Server Error","code":0}`)
		case actPermanent:
			reply(403, `{"message":"Missing Permissions","code":50013}`)
		}
	case "zoho_cliq":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"message_id":%q}`, pid))
		case actRateLimit:
			reply(429, `{"message":"too many requests"}`)
		case actServerErr:
			reply(500, `{"message":"internal error"}`)
		case actPermanent:
			reply(400, `{"message":"invalid chat"}`)
		}
	case "whatsapp":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"messaging_product":"whatsapp","contacts":[{"input":%q,"wa_id":%q}],"messages":[{"id":"wamid.%s"}]}`, c.Conversation, c.Conversation, pid))
		case actRateLimit:
			reply(429, `{"error":{"message":"rate limit hit","type":"OAuthException","code":130429}}`)
		case actServerErr:
			reply(500, `{"error":{"message":"unknown error","type":"OAuthException","code":1}}`)
		case actPermanent:
			reply(400, `{"error":{"message":"Invalid parameter","type":"OAuthException","code":100}}`)
		}
	case "webhook":
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"id":%q}`, pid))
		case actRateLimit:
			reply(429, `{}`)
		case actServerErr:
			reply(500, `{}`)
		case actPermanent:
			reply(400, `{}`)
		}
	}
}
