package channelstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeTelegram is a local Bot API server for one bot: it queues updates
// for getUpdates (long polling, with Telegram's offset confirmation and
// its 409 when two getUpdates run at once), and records sendMessage,
// editMessageText and sendMessageDraft calls (a draft needs a private
// chat, a non-zero draft_id and text, and answers true). Point an
// account's api_base_url at URL.
type FakeTelegram struct {
	URL string

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when an update is queued
	updates   []json.RawMessage
	nextID    int64
	calls     []TelegramCall
	polling   int // getUpdates in flight
	maxPolls  int
	conflicts int
	deletes   int
	nextMsgID int64
}

// TelegramCall is one recorded Bot API call other than getUpdates.
type TelegramCall struct {
	Method string
	Token  string
	Body   map[string]any
}

// NewFakeTelegram starts a fake closed at the test's end.
func NewFakeTelegram(t testing.TB) *FakeTelegram {
	f := &FakeTelegram{changed: make(chan struct{}), nextID: 1000, nextMsgID: 5000}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// AddUpdate queues one update built from its body without update_id
// (e.g. `"message": {...}`) and returns the update_id given.
func (f *FakeTelegram) AddUpdate(fields string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextID
	f.nextID++
	f.updates = append(f.updates, json.RawMessage(fmt.Sprintf(`{"update_id":%d,%s}`, id, fields)))
	close(f.changed)
	f.changed = make(chan struct{})
	return id
}

// Calls returns the recorded calls of method ("" for all).
func (f *FakeTelegram) Calls(method string) []TelegramCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TelegramCall
	for _, c := range f.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// PollStats returns the most getUpdates seen in flight at once, how many
// were refused with 409 for running concurrently, and how many
// deleteWebhook calls came.
func (f *FakeTelegram) PollStats() (maxConcurrent, conflicts, deleteWebhooks int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxPolls, f.conflicts, f.deletes
}

func (f *FakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getUpdates":
		f.getUpdates(w, r, body)
	case "deleteWebhook":
		f.mu.Lock()
		f.deletes++
		f.mu.Unlock()
		_, _ = fmt.Fprint(w, `{"ok":true,"result":true}`)
	default:
		f.mu.Lock()
		f.calls = append(f.calls, TelegramCall{Method: method, Token: token, Body: body})
		id := f.nextMsgID
		f.nextMsgID++
		f.mu.Unlock()
		if method == "sendMessageDraft" {
			if num(body["chat_id"]) <= 0 || num(body["draft_id"]) == 0 || body["text"] == nil {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: invalid draft"}`)
				return
			}
			_, _ = fmt.Fprint(w, `{"ok":true,"result":true}`)
			return
		}
		if method == "editMessageText" {
			id = int64(num(body["message_id"]))
		}
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":%d,"chat":{"id":%d,"type":"private"}}}`,
			id, time.Now().Unix(), int64(num(body["chat_id"])))
	}
}

// getUpdates answers the updates at or after offset (confirming, that is
// dropping, those before it), waiting up to timeout seconds for one.
func (f *FakeTelegram) getUpdates(w http.ResponseWriter, r *http.Request, body map[string]any) {
	offset := int64(num(body["offset"]))
	timeout := time.Duration(num(body["timeout"])) * time.Second
	f.mu.Lock()
	f.polling++
	if f.polling > 1 {
		f.polling--
		f.conflicts++
		f.mu.Unlock()
		w.WriteHeader(http.StatusConflict)
		_, _ = fmt.Fprint(w, `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}`)
		return
	}
	f.maxPolls = max(f.maxPolls, f.polling)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.polling--
		f.mu.Unlock()
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		kept := f.updates[:0]
		for _, u := range f.updates {
			var h struct {
				UpdateID int64 `json:"update_id"`
			}
			_ = json.Unmarshal(u, &h)
			if h.UpdateID >= offset {
				kept = append(kept, u)
			}
		}
		f.updates = kept
		pending := append([]json.RawMessage(nil), kept...)
		changed := f.changed
		f.mu.Unlock()
		if len(pending) > 0 || timeout == 0 {
			out, _ := json.Marshal(map[string]any{"ok": true, "result": pending})
			_, _ = w.Write(out)
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			return
		}
	}
}

func num(v any) float64 {
	n, _ := v.(float64)
	return n
}
