package workers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	Op           string // send, edit, react, draft, stream_start, stream_append or stream_stop
	Conversation string
	// Text is the text sent; for a native stream's calls, the text the
	// stream shows after the call.
	Text   string
	Key    string // webhook-id (webhook channel), nonce (discord)
	EditID string // the provider id an edit names
	At     time.Time
}

// fakeProviders speaks the send and edit endpoints of every channel
// under one server: /slack, /telegram, /discord, /zoho, /whatsapp,
// /teams, /google (API bases; /token answers the token requests of Teams
// and Google Chat) and /webhook (endpoint URLs), and the native
// streaming of Slack (chat.startStream, chat.appendStream,
// chat.stopStream), Telegram (sendMessageDraft) and Teams (typing
// activities with a streaminfo entity, then the final message). script
// decides each call's fate from (channel, conversation, n-th call of
// that conversation).
type fakeProviders struct {
	srv    *httptest.Server
	script func(channel, conversation string, n int) action

	mu    sync.Mutex
	calls []call
	count map[string]int
	seq   int64
	// streams is the text of each open Slack stream (by ts); stopped
	// marks the ones ended.
	streams map[string]string
	stopped map[string]bool
	invalid int
	// teamsFinal marks the Teams streams whose final message was taken:
	// another activity of one is answered 403, as Teams does.
	teamsFinal map[string]bool
	// lose is an op whose next call takes effect and is then answered
	// only after the caller gave up (an answer lost to a timeout).
	lose string
}

func newFakeProviders(t testing.TB, script func(channel, conversation string, n int) action) *fakeProviders {
	t.Helper()
	f := &fakeProviders{script: script, count: map[string]int{}, seq: 1000, streams: map[string]string{}, stopped: map[string]bool{},
		teamsFinal: map[string]bool{}}
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
		"teams": f.srv.URL + "/teams", "google_chat": f.srv.URL + "/google",
	}
}

// LoseNext makes the next call of op take effect and then answer only
// after the caller gave up, as a call whose answer was lost.
func (f *fakeProviders) LoseNext(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose = op
}

// Invalid is how many native stream calls lacked a required field or
// named no open stream.
func (f *fakeProviders) Invalid() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.invalid
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
	case "token":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"fake-token","token_type":"Bearer","expires_in":3600}`)
		return
	case "slack":
		c.Channel, c.Conversation, c.Text = "slack", str(m["channel"]), str(m["text"])
		switch parts[len(parts)-1] {
		case "chat.startStream":
			c.Op, c.Text = "stream_start", str(m["markdown_text"])
		case "chat.appendStream":
			c.Op, c.EditID, c.Text = "stream_append", str(m["ts"]), str(m["markdown_text"])
		case "chat.stopStream":
			c.Op, c.EditID, c.Text = "stream_stop", str(m["ts"]), str(m["markdown_text"])
		}
		if strings.HasSuffix(r.URL.Path, "chat.update") {
			c.Op, c.EditID = "edit", str(m["ts"])
		}
		if strings.HasSuffix(r.URL.Path, "reactions.add") {
			c.Op, c.EditID, c.Text = "react", str(m["timestamp"]), str(m["name"])
		}
	case "telegram":
		c.Channel, c.Conversation, c.Text = "telegram", str(m["chat_id"]), str(m["text"])
		if strings.HasSuffix(r.URL.Path, "sendMessageDraft") {
			c.Op, c.EditID = "draft", str(m["draft_id"])
		}
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
	case "teams": // /teams/v3/conversations/{id}/activities[/{aid}]
		c.Channel, c.Text = "teams", str(m["text"])
		c.Conversation, _ = url.PathUnescape(parts[3])
		if r.Method == http.MethodPut {
			c.Op, c.EditID = "edit", parts[5]
		}
		if es, ok := m["entities"].([]any); ok && len(es) == 1 {
			e, _ := es[0].(map[string]any)
			c.EditID = str(e["streamId"])
			switch {
			case str(e["type"]) != "streaminfo":
			case str(e["streamType"]) == "final" && str(m["type"]) == "message":
				c.Op = "stream_stop"
			case str(e["streamType"]) == "streaming" && str(m["type"]) == "typing" && c.EditID == "":
				c.Op = "stream_start"
			case str(e["streamType"]) == "streaming" && str(m["type"]) == "typing":
				c.Op = "stream_append"
			}
		}
	case "google": // /google/v1/spaces/{id}/messages[/{mid}]
		c.Channel, c.Conversation, c.Text = "google_chat", "spaces/"+parts[3], str(m["text"])
		if r.Method == http.MethodPatch {
			c.Op, c.EditID = "edit", strings.Join(parts[2:], "/")
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
	if act == actOK && c.Channel == "slack" && strings.HasPrefix(c.Op, "stream_") {
		if !f.slackStream(&c, m, id) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_arguments"}`)
			return
		}
	}
	if act == actOK && c.Channel == "teams" && c.Op == "stream_stop" && !f.teamsStop(c.EditID) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":{"code":"ContentStreamNotAllowed","message":"Content stream is not allowed on an already completed streamed message"}}`)
		return
	}
	if act == actOK {
		// Recorded before answering: what the platform received.
		f.mu.Lock()
		f.calls = append(f.calls, c)
		lost := f.lose == c.Op
		if lost {
			f.lose = ""
		}
		f.mu.Unlock()
		if lost {
			<-r.Context().Done()
			return
		}
	}
	f.answer(w, c, act, id)
}

// teamsStop takes the final message of Teams stream id; false when the
// stream already ended.
func (f *fakeProviders) teamsStop(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.teamsFinal[id] {
		return false
	}
	f.teamsFinal[id] = true
	return true
}

// slackStream checks a Slack stream call's required fields (channel;
// ts and markdown_text to append; ts to stop) against the stream it names
// and keeps the stream's text: c.Text becomes the text the message shows
// after the call. False: Slack would refuse the call.
func (f *fakeProviders) slackStream(c *call, m map[string]any, id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := c.Conversation != ""
	switch c.Op {
	case "stream_start":
		c.EditID = strconv.FormatInt(id, 10) + ".000100" // the ts answered
		f.streams[c.EditID] = c.Text
	case "stream_append":
		_, open := f.streams[c.EditID]
		ok = ok && open && !f.stopped[c.EditID] && m["markdown_text"] != nil
		f.streams[c.EditID] += c.Text
	case "stream_stop":
		_, open := f.streams[c.EditID]
		ok = ok && open && !f.stopped[c.EditID]
		f.streams[c.EditID] += c.Text
		f.stopped[c.EditID] = true
	}
	if !ok {
		f.invalid++
		return false
	}
	c.Text = f.streams[c.EditID]
	return true
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
	if c.EditID != "" && c.Op != "react" && c.Op != "draft" {
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
			if c.Op == "draft" {
				reply(200, `{"ok":true,"result":true}`)
				return
			}
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
	case "teams":
		switch act {
		case actOK:
			reply(201, fmt.Sprintf(`{"id":%q}`, pid))
		case actRateLimit:
			reply(429, `{"error":{"code":"TooManyRequests","message":"throttled"}}`)
		case actServerErr:
			reply(502, `{"error":{"code":"ServiceError","message":"bad gateway"}}`)
		case actPermanent:
			reply(403, `{"error":{"code":"BotNotInConversationRoster","message":"not in the conversation"}}`)
		}
	case "google_chat":
		name := c.Conversation + "/messages/" + pid
		if c.Op == "edit" {
			name = c.EditID
		}
		switch act {
		case actOK:
			reply(200, fmt.Sprintf(`{"name":%q,"text":%q}`, name, c.Text))
		case actRateLimit:
			reply(429, `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`)
		case actServerErr:
			reply(503, `{"error":{"code":503,"message":"unavailable","status":"UNAVAILABLE"}}`)
		case actPermanent:
			reply(403, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`)
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
