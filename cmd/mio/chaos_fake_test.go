package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// chaosCall is one send a chaos fake answered with success: the text it
// carried and, for Standard Webhooks, its webhook-id (the channel's
// idempotency key; Slack and the Telegram Bot API honour none).
type chaosCall struct {
	Channel, Key, Text string
}

// chaosPlatforms answers the send APIs of a Standard Webhooks endpoint
// (/webhook), Slack (/slack/{method}) and the Telegram Bot API
// (/telegram/bot{token}/{method}) the way a platform under strain does:
// at random 429 with a retry-after, a 5xx, or a slow success; it records
// every success.
type chaosPlatforms struct {
	srv      *httptest.Server
	mu       sync.Mutex
	ok       []chaosCall
	faults   map[string]int // "429", "5xx", "slow"
	seq      int
	slowest  time.Duration
	faulting bool
}

func newChaosPlatforms(t *testing.T) *chaosPlatforms {
	f := &chaosPlatforms{faults: map[string]int{}, faulting: true, slowest: 2 * time.Second}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// calm stops the faults (the settling phase after the load).
func (f *chaosPlatforms) calm() {
	f.mu.Lock()
	f.faulting = false
	f.mu.Unlock()
}

func (f *chaosPlatforms) successes() []chaosCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chaosCall(nil), f.ok...)
}

func (f *chaosPlatforms) faultCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.faults {
		out[k] = v
	}
	return out
}

func (f *chaosPlatforms) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m := map[string]any{}
	_ = json.Unmarshal(body, &m)
	str := func(v any) string { s, _ := v.(string); return s }
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	call := chaosCall{Channel: parts[0]}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case parts[0] == "webhook":
		call.Key = r.Header.Get("webhook-id")
		if d, ok := m["data"].(map[string]any); ok {
			call.Text = str(d["text"])
		}
	case parts[0] == "slack" && len(parts) == 2 && parts[1] == "chat.postMessage":
		call.Text = str(m["text"])
	case parts[0] == "slack": // users.info and the like: nothing to look up
		_, _ = io.WriteString(w, `{"ok":false,"error":"user_not_found"}`)
		return
	case parts[0] == "telegram" && len(parts) == 3 && parts[2] == "sendMessage":
		call.Text = str(m["text"])
	case parts[0] == "telegram":
		_, _ = io.WriteString(w, `{"ok":true,"result":true}`)
		return
	default:
		http.NotFound(w, r)
		return
	}

	f.mu.Lock()
	fault := ""
	if f.faulting {
		switch n := rand.IntN(100); {
		case n < 10:
			fault = "429"
		case n < 20:
			fault = "5xx"
		case n < 30:
			fault = "slow"
		}
	}
	if fault != "" {
		f.faults[fault]++
	}
	f.seq++
	seq := f.seq
	slowest := f.slowest
	f.mu.Unlock()

	switch fault {
	case "429":
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		if call.Channel == "telegram" {
			_, _ = io.WriteString(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`)
		} else if call.Channel == "slack" {
			_, _ = io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
		}
		return
	case "5xx":
		w.WriteHeader([]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}[rand.IntN(3)])
		if call.Channel == "telegram" {
			_, _ = io.WriteString(w, `{"ok":false,"error_code":502,"description":"Bad Gateway"}`)
		}
		return
	case "slow":
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(slowest)))):
		case <-r.Context().Done():
			return // the caller gave up: no answer, nothing recorded
		}
	}
	f.mu.Lock()
	f.ok = append(f.ok, call)
	f.mu.Unlock()
	switch call.Channel {
	case "webhook":
		fmt.Fprintf(w, `{"id":"ext%d"}`, seq)
	case "slack":
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"%d.000100"}`, str(m["channel"]), seq)
	case "telegram":
		chat, _ := m["chat_id"].(float64)
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":%d,"chat":{"id":%d,"type":"private"}}}`, seq, time.Now().Unix(), int64(chat))
	}
}
