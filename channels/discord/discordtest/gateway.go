// Package discordtest is a fake of Discord's Gateway for tests: an
// in-process websocket server that speaks HELLO, IDENTIFY → READY, RESUME
// → replay of the session's events after the given sequence + RESUMED,
// heartbeats → ACK, and the opcodes, closes and drops a test asks for.
package discordtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// Gateway speaks Discord's Gateway protocol: HELLO, IDENTIFY → READY,
// RESUME → replay of the session's events after the given sequence +
// RESUMED, heartbeats → ACK (unless told not to), and the closes and
// opcodes a test asks for.
type Gateway struct {
	t     testing.TB
	srv   *httptest.Server
	token string // the token IDENTIFY and RESUME must carry

	mu          sync.Mutex
	heartbeatMS int
	session     string
	seq         int64
	log         []event
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

type event struct {
	seq  int64
	typ  string
	data json.RawMessage
}

// NewGateway starts a fake Gateway that accepts token; closed at cleanup.
func NewGateway(t testing.TB, token string) *Gateway {
	f := &Gateway{t: t, token: token, heartbeatMS: 45000, noACKConns: map[int]bool{}, changed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the Gateway URL to set as an account's gateway_url.
func (f *Gateway) URL() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") }

// Stats is a snapshot of what the fake has seen.
type Stats struct {
	Conns      int     // connections accepted
	Live       int     // connections open now
	MaxLive    int     // most connections open at once
	Identifies int     // IDENTIFYs accepted
	Readies    int     // READY dispatches sent
	Resumes    []int64 // the sequence of every RESUME
	Seq        int64   // the session's last sequence
	Connected  bool    // a connection is current
}

func (f *Gateway) stats() Stats {
	return Stats{Conns: f.conns, Live: f.live, MaxLive: f.maxLive, Identifies: f.identifies, Readies: f.readies,
		Resumes: slices.Clone(f.resumes), Seq: f.seq, Connected: f.cur != nil}
}

// Stats returns a snapshot.
func (f *Gateway) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats()
}

// Wait blocks until cond holds (checked after every change) or ctx ends.
func (f *Gateway) Wait(ctx context.Context, cond func(Stats) bool) bool {
	for {
		f.mu.Lock()
		ok := cond(f.stats())
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

// SetHeartbeatInterval sets the heartbeat_interval of the next HELLOs.
// Default 45000 ms.
func (f *Gateway) SetHeartbeatInterval(ms int) {
	f.mu.Lock()
	f.heartbeatMS = ms
	f.mu.Unlock()
}

// WithholdACK makes connection n (1-based) get no heartbeat ACK.
func (f *Gateway) WithholdACK(n int) {
	f.mu.Lock()
	f.noACKConns[n] = true
	f.mu.Unlock()
}

// notify wakes waiters after any state change (under f.mu).
func (f *Gateway) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Gateway) serve(w http.ResponseWriter, r *http.Request) {
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
			f.Dispatch("READY", map[string]any{"session_id": f.session, "resume_gateway_url": f.URL(),
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
			var replay []event
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
			f.Dispatch("RESUMED", map[string]any{})
		}
	}
}

func (f *Gateway) write(ctx context.Context, conn *websocket.Conn, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Error(err)
		return
	}
	_ = conn.Write(ctx, websocket.MessageText, b)
}

// Dispatch logs an event in the session and sends it on the current
// connection, if any (a resume replays it otherwise).
func (f *Gateway) Dispatch(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		f.t.Error(err)
		return
	}
	f.mu.Lock()
	f.seq++
	e := event{seq: f.seq, typ: typ, data: b}
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

// Raw sends bytes as they are on the current connection.
func (f *Gateway) Raw(b []byte) {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		_ = conn.Write(context.Background(), websocket.MessageText, b)
	}
}

// Op sends an opcode on the current connection.
func (f *Gateway) Op(op int, d any) {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		f.write(context.Background(), conn, map[string]any{"op": op, "d": d})
	}
}

// Drop cuts the current connection without a close frame.
func (f *Gateway) Drop() {
	f.mu.Lock()
	conn := f.cur
	f.mu.Unlock()
	if conn != nil {
		_ = conn.CloseNow()
	}
}

// Message is a MESSAGE_CREATE payload (guildID "": a DM).
func Message(id, channelID, guildID, author, content string) map[string]any {
	m := map[string]any{"id": id, "channel_id": channelID, "content": content, "type": 0,
		"timestamp": "2026-11-23T10:00:00.000000+00:00", "edited_timestamp": nil,
		"author": map[string]any{"id": author, "username": "user" + author}, "attachments": []any{}}
	if guildID != "" {
		m["guild_id"] = guildID
	}
	return m
}
