package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"strconv"

	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/miohq/mio/channels"
)

// Gateway defaults.
const (
	// DefaultGatewayURL is the Gateway used when an account sets no
	// gateway_url (the resume_gateway_url of READY is used to resume).
	DefaultGatewayURL = "wss://gateway.discord.gg"
	// DefaultGatewayIntents are GUILD_MESSAGES (1<<9),
	// GUILD_MESSAGE_REACTIONS (1<<10), DIRECT_MESSAGES (1<<12),
	// DIRECT_MESSAGE_REACTIONS (1<<13) and MESSAGE_CONTENT (1<<15,
	// privileged: enable it in the Developer Portal).
	DefaultGatewayIntents = 1<<9 | 1<<10 | 1<<12 | 1<<13 | 1<<15
	// DefaultGatewayMaxPayload bounds one Gateway message; larger ones are
	// read to the end, logged and skipped.
	DefaultGatewayMaxPayload = 4 << 20
	// IdentifyInterval is Discord's identify rate limit for a bot with
	// max_concurrency 1: one IDENTIFY per 5 s.
	IdentifyInterval = 5 * time.Second
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// GatewayConfig is one account's Gateway configuration.
//
// Settings (plain JSON, optional):
//   - "gateway": false turns the Gateway connection off (default on when
//     credentials carry a bot_token).
//   - "gateway_intents": the intents bit set. Default
//     DefaultGatewayIntents.
//   - "gateway_url": the Gateway URL (ws:// or wss://). Default
//     DefaultGatewayURL. Tests and proxies point it elsewhere.
//   - "application_id": the bot's user id for bots (its own messages are
//     left out even before READY names it).
//
// Credentials: "bot_token" (required).
type GatewayConfig struct {
	Token   string
	Intents int
	URL     string
	SelfID  string
}

type gatewaySettingsJSON struct {
	Gateway       *bool  `json:"gateway"`
	Intents       *int   `json:"gateway_intents"`
	URL           string `json:"gateway_url"`
	ApplicationID string `json:"application_id"`
}

// ErrGatewayOff: the account does not use the Gateway (no bot_token, or
// settings gateway: false).
var ErrGatewayOff = errors.New("discord: gateway off for this account")

// ParseGatewayConfig reads an account's Gateway configuration. Errors are
// ErrGatewayOff or wrap channels.ErrInvalidConfig.
func ParseGatewayConfig(acct channels.Account) (GatewayConfig, error) {
	var s gatewaySettingsJSON
	if err := channels.DecodeObject("discord settings", acct.Settings, &s); err != nil {
		return GatewayConfig{}, err
	}
	var cr credentialsJSON
	if err := channels.DecodeObject("discord credentials", acct.Credentials, &cr); err != nil {
		return GatewayConfig{}, err
	}
	if (s.Gateway != nil && !*s.Gateway) || cr.BotToken == "" {
		return GatewayConfig{}, ErrGatewayOff
	}
	if channels.HasSpaceOrControl(cr.BotToken) {
		return GatewayConfig{}, fmt.Errorf("%w: discord: bot_token contains whitespace or control characters", channels.ErrInvalidConfig)
	}
	cfg := GatewayConfig{Token: cr.BotToken, Intents: DefaultGatewayIntents, URL: DefaultGatewayURL, SelfID: s.ApplicationID}
	if s.Intents != nil {
		if *s.Intents <= 0 || *s.Intents >= 1<<26 {
			return GatewayConfig{}, fmt.Errorf("%w: discord settings: gateway_intents %d is not an intents bit set", channels.ErrInvalidConfig, *s.Intents)
		}
		cfg.Intents = *s.Intents
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return GatewayConfig{}, fmt.Errorf("%w: discord settings: gateway_url %q is not a ws:// or wss:// URL", channels.ErrInvalidConfig, s.URL)
		}
		cfg.URL = s.URL
	}
	return cfg, nil
}

// GatewayResume is where a session can be resumed: its id, the URL to
// resume on, and the sequence number of the last event committed.
// SessionID "" means a new session must be identified.
type GatewayResume struct {
	SessionID string
	URL       string
	Seq       int64
}

// GatewayHandler persists what a Gateway session receives. Its methods
// are called from the session's goroutine, one at a time.
type GatewayHandler interface {
	// Identify returns when the identify rate limit allows the next
	// IDENTIFY (it may wait).
	Identify(ctx context.Context) error
	// Session records a new resume point without messages: after READY,
	// or the zero value when the session became invalid.
	Session(ctx context.Context, r GatewayResume) error
	// Messages commits one dispatch's messages together with the resume
	// point r that includes it (r.Seq is the dispatch's sequence). An
	// error drops the connection; the session resumes from the last point
	// committed, so the dispatch is received again.
	Messages(ctx context.Context, r GatewayResume, parsed *channels.Parsed) error
}

// GatewayClosedError is a close the Gateway means for good: the token was
// refused (4004), intents are invalid or not allowed (4013, 4014), the API
// version or sharding is wrong (4010–4012). Reconnecting cannot help.
type GatewayClosedError struct {
	Code   int
	Reason string
}

func (e *GatewayClosedError) Error() string {
	return fmt.Sprintf("discord gateway closed %d: %s", e.Code, e.Reason)
}

// fatalCloses are the close codes after which Discord says not to
// reconnect.
var fatalCloses = map[websocket.StatusCode]string{
	4004: "authentication failed: the bot token was refused",
	4010: "invalid shard",
	4011: "sharding required",
	4012: "invalid API version",
	4013: "invalid intents",
	4014: "disallowed intents: enable the privileged intents (MESSAGE_CONTENT) in the Developer Portal or remove them from gateway_intents",
}

var (
	errZombie         = errors.New("discord gateway: no heartbeat ACK (zombied connection)")
	errReconnect      = errors.New("discord gateway: reconnect requested")
	errSessionInvalid = errors.New("discord gateway: session invalid")
	errNoHello        = errors.New("discord gateway: no HELLO")
)

// GatewayOptions tune a Gateway client. The zero value is ready to use.
type GatewayOptions struct {
	// HTTPClient dials the websocket. Default http.DefaultClient.
	HTTPClient *http.Client
	// Logger reports skipped payloads and reconnects. Default discards.
	Logger *slog.Logger
	// MaxPayload bounds one message. Default DefaultGatewayMaxPayload.
	MaxPayload int64
	// ReconnectMin and ReconnectMax bound the jittered exponential wait
	// between connections. Defaults 1s and 60s.
	ReconnectMin, ReconnectMax time.Duration
	// OnConnect, when set, is called after each websocket connects (tests).
	OnConnect func()
	// OnReconnect, when set, is called before each reconnect with its
	// reason: zombie (no heartbeat ACK), requested (op 7 RECONNECT),
	// invalid_session, or dropped (network errors, other closes).
	OnReconnect func(reason string)
}

// Gateway is one account's Gateway client.
type Gateway struct {
	cfg  GatewayConfig
	opts GatewayOptions
}

// NewGateway returns a client for cfg.
func NewGateway(cfg GatewayConfig, opts GatewayOptions) *Gateway {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultGatewayMaxPayload
	}
	if opts.ReconnectMin <= 0 {
		opts.ReconnectMin = time.Second
	}
	if opts.ReconnectMax < opts.ReconnectMin {
		opts.ReconnectMax = max(60*time.Second, opts.ReconnectMin)
	}
	return &Gateway{cfg: cfg, opts: opts}
}

// Run holds the session until ctx ends or the Gateway closes for good
// (*GatewayClosedError): it connects, resumes from r (or identifies when
// r has no session), and reconnects after every drop with a jittered
// exponential wait, resuming where the handler last committed.
func (g *Gateway) Run(ctx context.Context, r GatewayResume, h GatewayHandler) error {
	wait := g.opts.ReconnectMin
	for {
		s := &gatewaySession{g: g, h: h, state: r, selfID: g.cfg.SelfID}
		err := s.run(ctx)
		r = s.state
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var closed *GatewayClosedError
		if errors.As(err, &closed) {
			return err
		}
		if errors.Is(err, errSessionInvalid) {
			r = GatewayResume{}
			if err := h.Session(ctx, r); err != nil && ctx.Err() == nil {
				g.opts.Logger.Warn("discord gateway: forgetting the session failed", "err", err)
			}
		}
		if s.established {
			wait = g.opts.ReconnectMin
		}
		if g.opts.OnReconnect != nil {
			g.opts.OnReconnect(reconnectReason(err))
		}
		g.opts.Logger.Info("discord gateway: reconnecting", "err", err, "resume", r.SessionID != "", "wait", wait)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, g.opts.ReconnectMax)
	}
}

// reconnectReason names why a connection ended (a bounded metric label).
func reconnectReason(err error) string {
	switch {
	case errors.Is(err, errZombie):
		return "zombie"
	case errors.Is(err, errReconnect):
		return "requested"
	case errors.Is(err, errSessionInvalid):
		return "invalid_session"
	}
	return "dropped"
}

// payload is a Gateway message.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  string          `json:"t"`
}

// gatewaySession is one websocket connection.
type gatewaySession struct {
	g           *Gateway
	h           GatewayHandler
	state       GatewayResume
	selfID      string
	established bool // READY or RESUMED seen
	conn        *websocket.Conn
	lastSeq     atomic.Int64 // last sequence received (heartbeats)
	acked       atomic.Bool
	beat        chan struct{} // the Gateway asked for a heartbeat now
}

func (s *gatewaySession) run(ctx context.Context) error {
	target := s.g.cfg.URL
	if s.state.SessionID != "" && s.state.URL != "" {
		target = s.state.URL
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	conn, _, err := websocket.Dial(cctx, gatewayURL(target), &websocket.DialOptions{HTTPClient: s.g.opts.HTTPClient})
	if err != nil {
		return fmt.Errorf("discord gateway: dial: %w", err)
	}
	// Closing without a close frame keeps the session resumable (1000
	// and 1001 would end it).
	defer conn.CloseNow() //nolint:errcheck
	conn.SetReadLimit(-1) // bounded by readBounded instead, which skips
	s.conn = conn
	s.lastSeq.Store(s.state.Seq)
	s.beat = make(chan struct{}, 1)
	if s.g.opts.OnConnect != nil {
		s.g.opts.OnConnect()
	}

	interval, err := s.hello(cctx)
	if err != nil {
		return s.cause(cctx, err)
	}
	go s.heartbeat(cctx, cancel, interval)
	if err := s.start(cctx); err != nil {
		return s.cause(cctx, err)
	}
	for {
		p, err := s.read(cctx)
		if err != nil {
			return s.cause(cctx, err)
		}
		if p == nil {
			continue // skipped
		}
		if err := s.handle(cctx, p); err != nil {
			return s.cause(cctx, err)
		}
	}
}

// cause prefers the reason the connection was cancelled (a zombie) and
// turns close frames into their meaning.
func (s *gatewaySession) cause(cctx context.Context, err error) error {
	if c := context.Cause(cctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	code := websocket.CloseStatus(err)
	if reason, ok := fatalCloses[code]; ok {
		return &GatewayClosedError{Code: int(code), Reason: reason}
	}
	switch code {
	case 4007, 4009: // invalid seq, session timed out
		return fmt.Errorf("%w: close %d", errSessionInvalid, code)
	}
	return err
}

// gatewayURL adds the API version and encoding to a Gateway URL.
func gatewayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if q.Get("v") == "" {
		q.Set("v", "10")
	}
	if q.Get("encoding") == "" {
		q.Set("encoding", "json")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *gatewaySession) hello(ctx context.Context) (time.Duration, error) {
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		p, err := s.read(hctx)
		if err != nil {
			return 0, err
		}
		if p == nil {
			continue
		}
		if p.Op != opHello {
			return 0, fmt.Errorf("%w: first op %d", errNoHello, p.Op)
		}
		var d struct {
			HeartbeatInterval int64 `json:"heartbeat_interval"`
		}
		if err := json.Unmarshal(p.D, &d); err != nil || d.HeartbeatInterval <= 0 {
			return 0, fmt.Errorf("%w: bad heartbeat_interval", errNoHello)
		}
		return time.Duration(d.HeartbeatInterval) * time.Millisecond, nil
	}
}

// start resumes the stored session or identifies a new one.
func (s *gatewaySession) start(ctx context.Context) error {
	if s.state.SessionID != "" {
		return s.send(ctx, opResume, map[string]any{
			"token": s.g.cfg.Token, "session_id": s.state.SessionID, "seq": s.state.Seq})
	}
	if err := s.h.Identify(ctx); err != nil {
		return err
	}
	return s.send(ctx, opIdentify, map[string]any{
		"token":   s.g.cfg.Token,
		"intents": s.g.cfg.Intents,
		"properties": map[string]string{
			"os": runtime.GOOS, "browser": "mio", "device": "mio",
		},
	})
}

func (s *gatewaySession) send(ctx context.Context, op int, d any) error {
	b, err := json.Marshal(map[string]any{"op": op, "d": d})
	if err != nil {
		return err
	}
	return s.conn.Write(ctx, websocket.MessageText, b)
}

// heartbeat sends a heartbeat every interval, the first after a random
// fraction of it, and cancels the connection when the previous one was
// not acknowledged (a zombied connection).
func (s *gatewaySession) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, interval time.Duration) {
	s.acked.Store(true)
	t := time.NewTimer(time.Duration(rand.Float64() * float64(interval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.beat:
			// Asked by the Gateway: answer at once; the schedule stays.
			if err := s.sendHeartbeat(ctx); err != nil {
				return
			}
			continue
		case <-t.C:
		}
		if !s.acked.Swap(false) {
			cancel(errZombie)
			return
		}
		if err := s.sendHeartbeat(ctx); err != nil {
			return
		}
		t.Reset(interval)
	}
}

func (s *gatewaySession) sendHeartbeat(ctx context.Context) error {
	var d any
	if n := s.lastSeq.Load(); n > 0 {
		d = n
	}
	return s.send(ctx, opHeartbeat, d)
}

// read returns the next payload, or nil for one that was skipped
// (oversized, not JSON, binary): those are logged and the connection
// stays.
func (s *gatewaySession) read(ctx context.Context) (*payload, error) {
	typ, r, err := s.conn.Reader(ctx)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, s.g.opts.MaxPayload+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > s.g.opts.MaxPayload {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return nil, err
		}
		s.g.opts.Logger.Warn("discord gateway: oversized payload skipped", "bytes", int64(len(b))+n, "max", s.g.opts.MaxPayload)
		return nil, nil
	}
	if typ != websocket.MessageText {
		s.g.opts.Logger.Warn("discord gateway: binary payload skipped (compression is not requested)", "bytes", len(b))
		return nil, nil
	}
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		s.g.opts.Logger.Warn("discord gateway: malformed payload skipped", "bytes", len(b), "err", err)
		return nil, nil
	}
	return &p, nil
}

func (s *gatewaySession) handle(ctx context.Context, p *payload) error {
	switch p.Op {
	case opHeartbeatACK:
		s.acked.Store(true)
	case opHeartbeat:
		select {
		case s.beat <- struct{}{}:
		default:
		}
	case opReconnect:
		return errReconnect
	case opInvalidSession:
		var resumable bool
		_ = json.Unmarshal(p.D, &resumable)
		if resumable && s.state.SessionID != "" {
			return errReconnect
		}
		return errSessionInvalid
	case opDispatch:
		return s.dispatch(ctx, p)
	}
	return nil
}

func (s *gatewaySession) dispatch(ctx context.Context, p *payload) error {
	next := s.state
	if p.S != nil {
		s.lastSeq.Store(*p.S)
		next.Seq = *p.S
	}
	switch p.T {
	case "READY":
		var d struct {
			SessionID        string `json:"session_id"`
			ResumeGatewayURL string `json:"resume_gateway_url"`
			User             struct {
				ID string `json:"id"`
			} `json:"user"`
		}
		if err := json.Unmarshal(p.D, &d); err != nil || d.SessionID == "" {
			return fmt.Errorf("discord gateway: READY without session_id")
		}
		if d.User.ID != "" {
			s.selfID = d.User.ID
		}
		next.SessionID, next.URL = d.SessionID, d.ResumeGatewayURL
		if err := s.h.Session(ctx, next); err != nil {
			return err
		}
		s.established = true
	case "RESUMED":
		s.established = true
	case EventMessageCreate, EventMessageUpdate, EventMessageDelete, EventReactionAdd, EventReactionRemove:
		var parsed *channels.Parsed
		var err error
		if p.T == EventReactionAdd || p.T == EventReactionRemove {
			parsed, err = ParseReactionEvent(p.T, p.D, s.selfID, next.SessionID+":"+strconv.FormatInt(next.Seq, 10))
		} else {
			parsed, err = ParseMessageEvent(p.T, p.D, s.selfID)
		}
		if err != nil {
			s.g.opts.Logger.Warn("discord gateway: message event skipped", "type", p.T, "seq", next.Seq, "err", err)
			break
		}
		for _, why := range parsed.Ignored {
			s.g.opts.Logger.Debug("discord gateway: content left out", "reason", why)
		}
		if len(parsed.Messages) > 0 {
			if err := s.h.Messages(ctx, next, parsed); err != nil {
				return fmt.Errorf("discord gateway: commit seq %d: %w", next.Seq, err)
			}
		}
	}
	s.state = next
	return nil
}
