package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// fakeGateway speaks Discord's Gateway protocol: HELLO, IDENTIFY → READY,
// RESUME → replay of the session's events after the given sequence +
// RESUMED, heartbeats → ACK (unless told not to), and the closes and
// opcodes a test asks for.
type fakeGateway struct {
	t     *testing.T
	srv   *httptest.Server
	token string // the token IDENTIFY and RESUME must carry

	mu          sync.Mutex
	heartbeatMS int
	session     string
	seq         int64
	log         []fakeEvent
	cur         *websocket.Conn
	conns       int
	live        int
	maxLive     int
	identifies  int
	readies     int // READY dispatches sent
	resumes     []int64
	noACKConns  map[int]bool // connection numbers (1-based) that get no ACK
	changed     chan struct{}
}

type fakeEvent struct {
	seq  int64
	typ  string
	data json.RawMessage
}

func newFakeGateway(t *testing.T, token string) *fakeGateway {
	f := &fakeGateway{t: t, token: token, heartbeatMS: 45000, noACKConns: map[int]bool{}, changed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// url is the Gateway URL accounts point gateway_url at.
func (f *fakeGateway) url() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") }

// notify wakes waiters after any state change (under f.mu).
func (f *fakeGateway) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// wait blocks until cond holds (checked after every change).
func (f *fakeGateway) wait(ctx context.Context, cond func(f *fakeGateway) bool) bool {
	for {
		f.mu.Lock()
		ok := cond(f)
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	defer conn.CloseNow() //nolint:errcheck
	ctx := r.Context()
	f.mu.Lock()
	f.conns++
	n := f.conns
	f.live++
	f.maxLive = max(f.maxLive, f.live)
	f.cur = conn
	hb := f.heartbeatMS
	f.notify()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.live--
		if f.cur == conn {
			f.cur = nil
		}
		f.notify()
		f.mu.Unlock()
	}()
	f.write(ctx, conn, map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": hb}})
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(b, &p) != nil {
			continue
		}
		switch p.Op {
		case 1:
			f.mu.Lock()
			ack := !f.noACKConns[n]
			f.mu.Unlock()
			if ack {
				f.write(ctx, conn, map[string]any{"op": 11})
			}
		case 2:
			var d struct {
				Token string `json:"token"`
			}
			_ = json.Unmarshal(p.D, &d)
			if d.Token != f.token {
				_ = conn.Close(4004, "Authentication failed.")
				return
			}
			f.mu.Lock()
			f.identifies++
			f.session = "s" + strconv.Itoa(f.identifies)
			f.seq, f.log = 0, nil
			f.mu.Unlock()
			f.dispatch("READY", map[string]any{"session_id": f.session, "resume_gateway_url": f.url(),
				"user": map[string]string{"id": "999"}})
		case 6:
			var d struct {
				Token     string `json:"token"`
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			_ = json.Unmarshal(p.D, &d)
			f.mu.Lock()
			f.resumes = append(f.resumes, d.Seq)
			ok := d.SessionID == f.session && d.Token == f.token
			var replay []fakeEvent
			for _, e := range f.log {
				if e.seq > d.Seq {
					replay = append(replay, e)
				}
			}
			f.notify()
			f.mu.Unlock()
			if !ok {
				f.write(ctx, conn, map[string]any{"op": 9, "d": false})
				continue
			}
			for _, e := range replay {
				f.write(ctx, conn, map[string]any{"op": 0, "s": e.seq, "t": e.typ, "d": e.data})
			}
			f.dispatch("RESUMED", map[string]any{})
		}
	}
}

func (f *fakeGateway) write(ctx context.Context, conn *websocket.Conn, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Error(err)
		return
	}
	_ = conn.Write(ctx, websocket.MessageText, b)
}

// dispatch logs an event in the session and sends it on the current
// connection, if any (a resume replays it otherwise).
func (f *fakeGateway) dispatch(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		f.t.Error(err)
		return
	}
	f.mu.Lock()
	f.seq++
	e := fakeEvent{seq: f.seq, typ: typ, data: b}
	f.log = append(f.log, e)
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		f.write(context.Background(), conn, map[string]any{"op": 0, "s": e.seq, "t": e.typ, "d": e.data})
	}
	f.mu.Lock()
	if typ == "READY" {
		f.readies++
	}
	f.notify()
	f.mu.Unlock()
}

// raw sends bytes as they are on the current connection.
func (f *fakeGateway) raw(b []byte) {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		_ = conn.Write(context.Background(), websocket.MessageText, b)
	}
}

// op sends an opcode on the current connection.
func (f *fakeGateway) op(op int, d any) {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		f.write(context.Background(), conn, map[string]any{"op": op, "d": d})
	}
}

// drop cuts the current connection without a close frame.
func (f *fakeGateway) drop() {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		_ = conn.CloseNow()
	}
}

// message is a MESSAGE_CREATE payload.
func message(id, channelID, guildID, author, content string) map[string]any {
	m := map[string]any{"id": id, "channel_id": channelID, "content": content, "type": 0,
		"timestamp": "2026-11-23T10:00:00.000000+00:00", "edited_timestamp": nil,
		"author": map[string]any{"id": author, "username": "user" + author}, "attachments": []any{}}
	if guildID != "" {
		m["guild_id"] = guildID
	}
	return m
}
