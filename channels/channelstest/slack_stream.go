package channelstest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// StaticBotToken is a bot token FakeSlack always takes (no install).
const StaticBotToken = "xoxb-fake-static"

// slackStreamRates are the documented rate tiers of the streaming
// methods and chat.update, in calls a minute per workspace: Tier 2
// (chat.startStream, chat.stopStream), Tier 3 (chat.update), Tier 4
// (chat.appendStream). A call beyond its method's window is answered 429
// with Retry-After.
var slackStreamRates = map[string]int{
	"chat.startStream":  20,
	"chat.stopStream":   20,
	"chat.update":       50,
	"chat.appendStream": 100,
}

// SlackStream is one message of chat.startStream as the fake holds it.
type SlackStream struct {
	Channel, ThreadTS string
	// Text is what the message shows: the streamed markdown_text, or the
	// text of a later chat.update.
	Text string
	// Appends counts chat.appendStream calls; Stopped is set by
	// chat.stopStream, Updated by chat.update.
	Appends          int
	Stopped, Updated bool
}

// Stream returns a copy of the streamed message ts (nil: none).
func (f *FakeSlack) Stream(ts string) *SlackStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[ts]
	if !ok {
		return nil
	}
	c := *s
	return &c
}

// Limited is how many calls were answered 429.
func (f *FakeSlack) Limited() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limited
}

// stream serves one streaming method (or chat.update of a streamed
// message): the token, then the method's rate window, then its required
// arguments, as Slack checks them.
func (f *FakeSlack) stream(w http.ResponseWriter, r *http.Request, method string) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_json"}`))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, valid := f.oauth.check(tok, f.now()); !valid {
		f.refused++
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		return
	}
	if wait := f.window(method); wait > 0 {
		f.limited++
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		return
	}
	arg := func(k string) (string, bool) {
		v, ok := body[k].(string)
		return v, ok && v != ""
	}
	fail := func(code string) { _, _ = fmt.Fprintf(w, `{"ok":false,"error":%q}`, code) }
	channel, ok := arg("channel")
	if !ok {
		fail("channel_not_found")
		return
	}
	if method == "chat.startStream" {
		f.sent++
		ts := fmt.Sprintf("1700000000.%06d", f.sent)
		thread, _ := arg("thread_ts")
		text, _ := arg("markdown_text")
		f.streams[ts] = &SlackStream{Channel: channel, ThreadTS: thread, Text: text}
		_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, channel, ts)
		return
	}
	ts, _ := arg("ts")
	s, ok := f.streams[ts]
	switch {
	case !ok || s.Channel != channel:
		fail("message_not_found")
		return
	case method == "chat.update":
		text, _ := arg("text")
		s.Text, s.Updated = text, true
		_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":%q}`, channel, ts, text)
		return
	case s.Stopped:
		fail("message_not_in_streaming_state")
		return
	}
	text, hasText := arg("markdown_text")
	switch method {
	case "chat.appendStream":
		if !hasText {
			fail("invalid_arguments") // markdown_text is required
			return
		}
		s.Appends++
	case "chat.stopStream":
		s.Stopped = true
	}
	s.Text += text
	_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, channel, ts)
}

// window records a call of method and returns 0, or, when the method's
// calls of the last minute are at its rate already, how long until the
// oldest leaves the window (the call is then not recorded).
func (f *FakeSlack) window(method string) time.Duration {
	now := f.now()
	recent := f.calls[method][:0]
	for _, at := range f.calls[method] {
		if now.Sub(at) < time.Minute {
			recent = append(recent, at)
		}
	}
	f.calls[method] = recent
	if len(recent) >= slackStreamRates[method] {
		return time.Minute - now.Sub(recent[0])
	}
	f.calls[method] = append(recent, now)
	return 0
}
