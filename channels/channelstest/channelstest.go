// Package channelstest is the conformance suite every channel adapter runs
// from its own tests (Run), the checks behind each adapter's fuzz targets
// (CheckParse, CheckVerify, ReadFixtures, HostileBodies) and the helpers
// the adapters' outbound tests share (ErrorKind, Answer,
// RequireGoldenJSON). It is imported by tests only.
//
// An adapter runs the suite with a Harness: how to build an account, how to
// sign a request as the platform does and as an impostor would, and
// fixtures of real payload shapes. See "Adding a channel" in
// docs/architecture.md.
package channelstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Harness is what an adapter tells the suite about itself.
type Harness struct {
	// Channel is the adapter under test.
	Channel channels.Channel
	// Account is an installed account whose inbound verifies requests
	// signed by Sign.
	Account channels.Account
	// Sign makes req authentic for Account the way the platform does, at
	// req.Now and over req.Body: signature, token and timestamp headers,
	// and any header the platform sends with every body (the Standard
	// Webhooks webhook-id).
	Sign func(t testing.TB, req *channels.Request)
	// Forge signs req the way an impostor would: like Sign, but with a
	// secret or key that is not Account's.
	Forge func(t testing.TB, req *channels.Request)
	// Misdirect, when set, signs req validly for another audience than
	// Account's (a token the platform minted for another app, project or
	// endpoint), which must be refused.
	Misdirect func(t testing.TB, req *channels.Request)
	// SignsBody says the signature covers the body, so a body changed
	// after signing must be refused. False for static tokens (Telegram's
	// secret token, Zoho Cliq's shared token).
	SignsBody bool
	// Tolerance is how far a signed timestamp may be from the request's
	// Now; zero when the platform signs no timestamp (Telegram, WhatsApp,
	// Zoho Cliq).
	Tolerance time.Duration
	// Redeliver, when set, marks an unsigned request as the platform's
	// retry of an earlier delivery (Slack's X-Slack-Retry-Num), before
	// Sign signs it again.
	Redeliver func(req *channels.Request)
	// Forms says the adapter also reads form-encoded bodies (Slack's
	// interactivity payloads, in *.form fixtures), so that media type is
	// not among those it must refuse.
	Forms bool
	// Fixtures are real payload shapes (ReadFixtures(t, "testdata")).
	// Each must parse; at least one must yield a message.
	Fixtures []Fixture
}

// Fixture is one recorded webhook body.
type Fixture struct {
	Name string
	Body []byte
	// ContentType is the body's media type when it is not JSON (a *.form
	// fixture: Slack's interactivity payloads are form-encoded).
	ContentType string
}

// MediaTypeForm is the media type of *.form fixtures.
const MediaTypeForm = "application/x-www-form-urlencoded"

// suiteNow is the clock of the suite's requests.
var suiteNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// ReadFixtures reads every *.json file of dir (not its subfolders), sorted
// by name, then every *.form file (form-encoded bodies). It fails tb when
// there is none.
func ReadFixtures(tb testing.TB, dir string) []Fixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(tb, err)
	require.NotEmpty(tb, paths, "no fixtures in %s", dir)
	forms, err := filepath.Glob(filepath.Join(dir, "*.form"))
	require.NoError(tb, err)
	out := make([]Fixture, 0, len(paths)+len(forms))
	for _, p := range append(paths, forms...) {
		b, err := os.ReadFile(p)
		require.NoError(tb, err)
		fx := Fixture{Name: filepath.Base(p), Body: b}
		if filepath.Ext(p) == ".form" {
			fx.Body, fx.ContentType = bytes.TrimSpace(b), MediaTypeForm
		}
		out = append(out, fx)
	}
	return out
}

// Run runs the conformance suite against h's adapter: signatures (good,
// forged, unsigned, misdirected, tampered, stale), fixtures parsing and round-tripping
// through the envelope's JSON, dedup keys stable across redeliveries, the
// Content-Type rule (channels.CheckContentType) and hostile bodies.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.Channel, "Harness.Channel")
	require.NotNil(t, h.Sign, "Harness.Sign")
	require.NotNil(t, h.Forge, "Harness.Forge")
	require.NotEmpty(t, h.Fixtures, "Harness.Fixtures")
	in, err := h.Channel.NewInbound(h.Account)
	require.NoError(t, err, "Harness.Account must be a valid account")
	s := &suite{h: h, in: in}

	t.Run("NilRequest", s.nilRequest)
	t.Run("SignedAccepted", s.signedAccepted)
	t.Run("UnsignedRefused", s.unsignedRefused)
	t.Run("ForgedRefused", s.forgedRefused)
	t.Run("MisdirectedRefused", s.misdirectedRefused)
	t.Run("TamperedBodyRefused", s.tamperedBodyRefused)
	t.Run("StaleRefused", s.staleRefused)
	t.Run("FixturesRoundTrip", s.fixturesRoundTrip)
	t.Run("DedupKeysStable", s.dedupKeysStable)
	t.Run("ContentTypes", s.contentTypes)
	t.Run("HostileBodies", s.hostileBodies)
}

type suite struct {
	h  Harness
	in channels.Inbound
}

// request is an unsigned JSON POST of body at now.
func request(body []byte, now time.Time) *channels.Request {
	h := http.Header{}
	h.Set("Content-Type", channels.MediaTypeJSON)
	return &channels.Request{Method: http.MethodPost, Header: h, Body: bytes.Clone(body), Now: now}
}

// fixtureRequest is an unsigned POST of fx at now, with its content type.
func fixtureRequest(fx Fixture, now time.Time) *channels.Request {
	req := request(fx.Body, now)
	if fx.ContentType != "" {
		req.Header.Set("Content-Type", fx.ContentType)
	}
	return req
}

// signedFixture is fixtureRequest signed by the harness.
func (s *suite) signedFixture(t testing.TB, fx Fixture, now time.Time) *channels.Request {
	req := fixtureRequest(fx, now)
	s.h.Sign(t, req)
	return req
}

// signed is request signed by the harness.
func (s *suite) signed(t testing.TB, body []byte, now time.Time) *channels.Request {
	req := request(body, now)
	s.h.Sign(t, req)
	return req
}

func (s *suite) verify(req *channels.Request) error {
	return s.in.Verify(context.Background(), req)
}

func (s *suite) nilRequest(t *testing.T) {
	require.ErrorIs(t, s.verify(nil), channels.ErrUnauthorized)
	p, err := s.in.Parse(context.Background(), nil)
	require.Nil(t, p)
	var bad *channels.BadRequestError
	require.ErrorAs(t, err, &bad)
}

func (s *suite) signedAccepted(t *testing.T) {
	for _, fx := range s.h.Fixtures {
		require.NoError(t, s.verify(s.signedFixture(t, fx, suiteNow)), fx.Name)
	}
}

func (s *suite) unsignedRefused(t *testing.T) {
	for _, fx := range s.h.Fixtures {
		require.ErrorIs(t, s.verify(fixtureRequest(fx, suiteNow)), channels.ErrUnauthorized, fx.Name)
	}
}

func (s *suite) forgedRefused(t *testing.T) {
	for _, fx := range s.h.Fixtures {
		req := fixtureRequest(fx, suiteNow)
		s.h.Forge(t, req)
		require.ErrorIs(t, s.verify(req), channels.ErrUnauthorized, fx.Name)
	}
}

func (s *suite) misdirectedRefused(t *testing.T) {
	if s.h.Misdirect == nil {
		t.Skip("the platform's credential names no audience")
	}
	for _, fx := range s.h.Fixtures {
		req := fixtureRequest(fx, suiteNow)
		s.h.Misdirect(t, req)
		require.ErrorIs(t, s.verify(req), channels.ErrUnauthorized, fx.Name)
	}
}

func (s *suite) tamperedBodyRefused(t *testing.T) {
	if !s.h.SignsBody {
		t.Skip("the platform's token does not cover the body")
	}
	for _, fx := range s.h.Fixtures {
		req := s.signedFixture(t, fx, suiteNow)
		req.Body = append(req.Body, ' ')
		require.ErrorIs(t, s.verify(req), channels.ErrUnauthorized, "%s: a trailing space", fx.Name)
		req = s.signedFixture(t, fx, suiteNow)
		req.Body[len(req.Body)/2] ^= 0x01
		require.ErrorIs(t, s.verify(req), channels.ErrUnauthorized, "%s: one bit flipped", fx.Name)
	}
}

func (s *suite) staleRefused(t *testing.T) {
	tol := s.h.Tolerance
	if tol == 0 {
		t.Skip("the platform signs no timestamp: redeliveries are caught by dedup keys")
	}
	body := s.h.Fixtures[0].Body
	for _, tc := range []struct {
		name   string
		now    time.Time
		wantOK bool
	}{
		{name: "just within the tolerance", now: suiteNow.Add(tol - time.Second), wantOK: true},
		{name: "just within the tolerance, clock behind", now: suiteNow.Add(-tol + time.Second), wantOK: true},
		{name: "stale", now: suiteNow.Add(tol + time.Second)},
		{name: "from the future", now: suiteNow.Add(-tol - time.Second)},
		{name: "a day old", now: suiteNow.Add(24 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := s.signed(t, body, suiteNow)
			req.Now = tc.now
			err := s.verify(req)
			if tc.wantOK {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, channels.ErrUnauthorized)
		})
	}
}

// fixturesRoundTrip parses every fixture and checks that each message
// survives the envelope's JSON unchanged.
func (s *suite) fixturesRoundTrip(t *testing.T) {
	messages := 0
	for _, fx := range s.h.Fixtures {
		req := s.signedFixture(t, fx, suiteNow)
		require.NoError(t, s.verify(req), fx.Name)
		p, err := s.in.Parse(context.Background(), req)
		require.NoError(t, err, fx.Name)
		CheckParsed(t, s.h.Channel.Type(), req, p)
		for _, m := range p.Messages {
			b, err := json.Marshal(m)
			require.NoError(t, err, fx.Name)
			var back envelope.Message
			require.NoError(t, json.Unmarshal(b, &back), fx.Name)
			require.JSONEq(t, string(m.Raw), string(back.Raw), fx.Name)
			m.Raw, back.Raw = nil, nil
			back.PlatformMessageID = m.PlatformMessageID // kept by MIO, not part of the JSON envelope
			require.Equal(t, m, back, "%s: the message changes through its JSON", fx.Name)
		}
		messages += len(p.Messages)
	}
	require.NotZero(t, messages, "no fixture yields a message")
}

// dedupKeysStable parses every fixture twice, the second time as the
// platform's redelivery (marked by Redeliver, signed again a minute
// later), and requires the same messages and statuses, with distinct dedup
// keys within one request.
func (s *suite) dedupKeysStable(t *testing.T) {
	for _, fx := range s.h.Fixtures {
		first := s.parseSigned(t, fx, suiteNow)
		retry := fixtureRequest(fx, suiteNow.Add(time.Minute))
		if s.h.Redeliver != nil {
			s.h.Redeliver(retry)
		}
		s.h.Sign(t, retry)
		require.NoError(t, s.verify(retry), fx.Name)
		again, err := s.in.Parse(context.Background(), retry)
		require.NoError(t, err, fx.Name)
		require.Equal(t, first.Messages, again.Messages, "%s: a redelivery parses differently", fx.Name)
		require.Equal(t, first.Statuses, again.Statuses, "%s: a redelivery parses differently", fx.Name)
		seen := map[string]bool{}
		for _, m := range first.Messages {
			require.False(t, seen[m.SourceMessageID], "%s: source_message_id %q twice in one request", fx.Name, m.SourceMessageID)
			seen[m.SourceMessageID] = true
		}
		seen = map[string]bool{}
		for _, st := range first.Statuses {
			key := st.ProviderMessageID + "\x00" + st.Status
			require.False(t, seen[key], "%s: status (%s, %s) twice in one request", fx.Name, st.ProviderMessageID, st.Status)
			seen[key] = true
		}
	}
}

func (s *suite) parseSigned(t *testing.T, fx Fixture, now time.Time) *channels.Parsed {
	t.Helper()
	req := s.signedFixture(t, fx, now)
	require.NoError(t, s.verify(req), fx.Name)
	p, err := s.in.Parse(context.Background(), req)
	require.NoError(t, err, fx.Name)
	return p
}

// Content types every adapter accepts and refuses (channels.CheckContentType).
var (
	acceptedContentTypes = []string{
		"",
		" ",
		"application/json",
		"application/json;",
		"application/json; charset=utf-8",
		"application/json; charset=UTF-8",
		"application/json;charset=UTF-8",
		"Application/JSON",
		"APPLICATION/JSON",
		"Application/JSON;charset=UTF-8",
		`APPLICATION/JSON; charset="UTF-8"`,
		"Application/Json; charset=utf8",
		"application/json; version=1",
	}
	refusedContentTypes = []string{
		"text/plain",
		"text/plain; charset=utf-8",
		"text/xml",
		"application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x",
		"application/jsonx",
		"application/json; charset=latin1",
		"application/json; charset=iso-8859-1",
		"application/json; charset=utf-16",
		"application/json; charset",
		"application/json; =",
		"application/json; charset=utf-8; charset=latin1",
		"/",
		";;",
	}
)

// contentTypes parses the first fixture that yields a message under every
// accepted Content-Type (the same result as without one) and every refused
// one (ErrUnsupportedMediaType and no result).
func (s *suite) contentTypes(t *testing.T) {
	var body []byte
	var want *channels.Parsed
	for _, fx := range s.h.Fixtures {
		if fx.ContentType != "" {
			continue
		}
		if p := s.parseSigned(t, fx, suiteNow); len(p.Messages) > 0 {
			body, want = fx.Body, p
			break
		}
	}
	require.NotNil(t, want, "no fixture yields a message")
	for _, ct := range acceptedContentTypes {
		req := s.signed(t, body, suiteNow)
		req.Header.Set("Content-Type", ct)
		p, err := s.in.Parse(context.Background(), req)
		require.NoError(t, err, "Content-Type %q", ct)
		require.Equal(t, want.Messages, p.Messages, "Content-Type %q", ct)
	}
	for _, ct := range refusedContentTypes {
		if s.h.Forms && ct == MediaTypeForm {
			continue
		}
		req := s.signed(t, body, suiteNow)
		req.Header.Set("Content-Type", ct)
		p, err := s.in.Parse(context.Background(), req)
		require.ErrorIs(t, err, channels.ErrUnsupportedMediaType, "Content-Type %q", ct)
		require.Nil(t, p, "Content-Type %q", ct)
	}
}

// hostileBodies parses HostileBodies, signed, under the fuzz checks.
func (s *suite) hostileBodies(t *testing.T) {
	for _, body := range HostileBodies() {
		req := s.signed(t, body, suiteNow)
		CheckParse(t, s.h.Channel.Type(), s.in, req)
	}
}

// HostileBodies are bodies no adapter may panic on or answer with an
// untyped error: empty, truncated, the wrong JSON type, invalid UTF-8,
// deep nesting and out-of-range numbers. Fuzz targets seed with them too.
func HostileBodies() [][]byte {
	return [][]byte{
		nil,
		[]byte(" "),
		[]byte("null"),
		[]byte("[]"),
		[]byte(`"x"`),
		[]byte("{"),
		[]byte("{}"),
		[]byte(`{"a":1}{"a":2}`),
		[]byte("\xff\xfe{}"),
		[]byte(`{"type":"\xff"}`),
		[]byte(`{"id":1e400,"type":1e400,"update_id":1e400,"timestamp":1e400}`),
		[]byte(`{"id":-1,"type":-1,"update_id":-9223372036854775808}`),
		bytes.Repeat([]byte("["), 10000),
		append(append([]byte(`{"a":`), bytes.Repeat([]byte(`{"a":`), 5000)...), '}'),
	}
}

// CheckParse runs in.Parse on req and fails t unless the answer keeps the
// channels.Inbound contract: an error is a *channels.BadRequestError or
// wraps channels.ErrUnsupportedMediaType and comes without a result; a
// result passes CheckParsed. It returns the result (nil on error).
func CheckParse(t testing.TB, channelType string, in channels.Inbound, req *channels.Request) *channels.Parsed {
	t.Helper()
	p, err := in.Parse(context.Background(), req)
	if err != nil {
		var bad *channels.BadRequestError
		if !errors.As(err, &bad) && !errors.Is(err, channels.ErrUnsupportedMediaType) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if p != nil {
			t.Fatalf("a result together with error %v", err)
		}
		return nil
	}
	CheckParsed(t, channelType, req, p)
	return p
}

// isFormPayload reports whether raw is the "payload" field of a
// form-encoded request (where Raw is the JSON the form carries).
func isFormPayload(req *channels.Request, raw []byte) bool {
	if !strings.HasPrefix(req.Header.Get("Content-Type"), MediaTypeForm) {
		return false
	}
	form, err := url.ParseQuery(string(req.Body))
	return err == nil && form.Get("payload") == string(raw)
}

// CheckParsed fails t unless p is what channels.Inbound.Parse promises for
// req: every message of channelType with a dedup key, a conversation (id
// and a known type), a sender (unless it is a delete), no ids the caller
// assigns, pending attachments with a source, the request body as Raw, and
// JSON that marshals; every status with an id and a status.
func CheckParsed(t testing.TB, channelType string, req *channels.Request, p *channels.Parsed) {
	t.Helper()
	if p == nil {
		t.Fatalf("nil result without an error")
	}
	for _, m := range p.Messages {
		switch {
		case m.ChannelType != channelType:
			t.Fatalf("channel type %q, want %q", m.ChannelType, channelType)
		case m.SourceMessageID == "":
			t.Fatalf("message without source_message_id: %+v", m)
		case m.Conversation.ID == "" || !conversationTypes[m.Conversation.Type]:
			t.Fatalf("incomplete conversation %+v", m.Conversation)
		case m.Sender.ID == "" && !m.Deleted:
			t.Fatalf("message without sender: %+v", m)
		case m.ID != uuid.Nil || m.TenantID != uuid.Nil || m.AccountID != uuid.Nil || !m.ReceivedAt.IsZero():
			t.Fatalf("adapter set ids or times the caller assigns: %+v", m)
		case !bytes.Equal(m.Raw, req.Body) && !isFormPayload(req, m.Raw):
			t.Fatalf("raw is not the request body")
		case m.Kind == envelope.KindInteraction && (m.Interaction == nil || m.Interaction.ActionID == ""):
			t.Fatalf("interaction without an action id: %+v", m)
		case m.Kind == envelope.KindReaction && (m.Reaction == nil || m.Reaction.Added && m.Reaction.Emoji == "" || m.Reaction.MessageID == ""):
			t.Fatalf("reaction without a message id, or added without an emoji: %+v", m)
		case m.Kind != "" && m.Kind != envelope.KindMessage && m.Kind != envelope.KindInteraction && m.Kind != envelope.KindReaction:
			t.Fatalf("unknown kind %q", m.Kind)
		}
		for _, a := range m.Attachments {
			if !attachmentKinds[a.Kind] || a.Status != envelope.AttachmentPending || a.ID != "" ||
				a.Source == nil || (a.Source.URL == "" && a.Source.Ref == "") || a.Size < 0 {
				t.Fatalf("bad attachment %+v", a)
			}
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("message does not marshal: %v", err)
		}
	}
	for _, s := range p.Statuses {
		if s.ProviderMessageID == "" || s.Status == "" {
			t.Fatalf("status missing fields: %+v", s)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("status does not marshal: %v", err)
		}
	}
}

var (
	conversationTypes = map[string]bool{envelope.ConversationDM: true, envelope.ConversationGroup: true, envelope.ConversationChannel: true}
	attachmentKinds   = map[string]bool{envelope.KindImage: true, envelope.KindFile: true, envelope.KindAudio: true, envelope.KindVideo: true, envelope.KindSticker: true}
)

// CheckVerify runs in.Verify on req, fails t unless the answer is nil or
// wraps channels.ErrUnauthorized, and reports whether req was accepted.
// The caller's fuzz target compares that with its own oracle.
func CheckVerify(t testing.TB, in channels.Inbound, req *channels.Request) (accepted bool) {
	t.Helper()
	err := in.Verify(context.Background(), req)
	if err != nil && !errors.Is(err, channels.ErrUnauthorized) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	return err == nil
}

// ReadFixture reads testdata/name of the package under test.
func ReadFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	return b
}

// SeedBodies calls add with the body of every testdata fixture and of
// every HostileBodies entry: the seed corpus of a FuzzParse target, which
// adds its own regression cases after it.
func SeedBodies(f *testing.F, add func(body []byte)) {
	f.Helper()
	for _, fx := range ReadFixtures(f, "testdata") {
		add(fx.Body)
	}
	for _, b := range HostileBodies() {
		add(b)
	}
}
