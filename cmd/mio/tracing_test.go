package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each
// ExportTraceServiceRequest and keeps its spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var in collectortrace.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &in) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// fakeTelegramFiles is a Bot API serving one file and accepting messages.
type fakeTelegramFiles struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sent []string
}

func newFakeTelegramFiles(t *testing.T) *fakeTelegramFiles {
	f := &fakeTelegramFiles{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/getFile"):
			_, _ = io.WriteString(w, `{"ok":true,"result":{"file_id":"F1","file_path":"photos/p.jpg","file_size":4}}`)
		case strings.HasSuffix(r.URL.Path, "/photos/p.jpg"):
			w.Header().Set("Content-Type", "image/jpeg")
			_, _ = w.Write([]byte{0xff, 0xd8, 0xff, 0xd9})
		case strings.HasSuffix(r.URL.Path, "/sendMessage"):
			var m map[string]any
			_ = json.NewDecoder(r.Body).Decode(&m)
			f.mu.Lock()
			f.sent = append(f.sent, fmt.Sprint(m["text"]))
			f.mu.Unlock()
			_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"message_id":9001,"date":%d,"chat":{"id":4242,"type":"private"}}}`, time.Now().Unix())
		default:
			_, _ = io.WriteString(w, `{"ok":true,"result":true}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTelegramFiles) sentTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// span is a finished span, from MIO (the OTLP receiver) or the agent (the
// test's own provider).
type span struct {
	name, kind   string
	traceID, id  string
	parent       string
	links        []string // span ids
	attrs        map[string]string
	start        time.Time
	fromTheAgent bool
}

// TestOneTraceForAConversationTurn runs mio serve with tracing pointed at
// an OTLP receiver, then one turn: a Telegram webhook with a photo (its
// own caller's traceparent), the attachment fetched, a pull, the agent's
// handler and reply, the hand-off to the platform. One trace holds the
// turn, River's job runs (otelriver) included, with the group commits and
// the pull linked to it; no span carries the tenant id, the bot token,
// the webhook secret or a message's text.
// go test -v -run TestOneTraceForAConversationTurn prints the trace.
func TestOneTraceForAConversationTurn(t *testing.T) {
	ctx := context.Background()
	env := dbtest.New(t)
	key := bytes.Repeat([]byte{7}, 32)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "traced")
	require.NoError(t, err)
	tg := newFakeTelegramFiles(t)
	const botToken, secret = "123456:TRACE-bot-token", "tg-webhook-secret-trace"
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "telegram",
		Settings: json.RawMessage(`{"api_base_url":"` + tg.srv.URL + `"}`), Credentials: json.RawMessage(`{"bot_token":"` + botToken + `"}`),
		WebhookSecret: secret})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	recv := newOTLPReceiver(t)
	public, stop := serveTraced(t, env.OwnerURL, key, recv)

	// The agent traces too: its spans go to a recorder of its own.
	agentSpans := tracetest.NewSpanRecorder()
	agentTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(agentSpans))
	api := client.New(public, token)
	_, err = api.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)

	// The webhook, sent under a caller's trace (a tracing proxy's).
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 7},
		TraceFlags: trace.FlagsSampled})
	const inboundText, replyText = "hello tracing, a photo", "nice photo, thanks"
	body := `{"update_id":700,"message":{"message_id":77,"date":1717171717,"chat":{"id":4242,"type":"private"},` +
		`"from":{"id":4242,"is_bot":false,"first_name":"Ada"},"caption":"` + inboundText + `",` +
		`"photo":[{"file_id":"F1","file_unique_id":"U1","width":1,"height":1,"file_size":4}]}}`
	req, err := http.NewRequest(http.MethodPost, public+"/webhooks/telegram/"+acct.ID.String(), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	req.Header.Set("traceparent", "00-"+caller.TraceID().String()+"-"+caller.SpanID().String()+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Pulled once its photo is stored; handled and replied under the
	// delivery's trace.
	ds, err := api.Pull(ctx, "agent", 1, 20*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	d := ds[0]
	require.NotEmpty(t, d.Traceparent)
	require.Len(t, d.Message.Attachments, 1)
	require.Equal(t, envelope.AttachmentStored, d.Message.Attachments[0].Status)
	hctx, handler := agentTP.Tracer("agent").Start(d.Context(ctx), "handle message", trace.WithSpanKind(trace.SpanKindConsumer))
	_, err = api.Reply(hctx, "agent", d.DeliveryID, envelope.SendCommand{IdempotencyKey: "trace-reply-1", Text: replyText})
	require.NoError(t, err)
	handler.End()
	require.Eventually(t, func() bool { return len(tg.sentTexts()) == 1 }, 20*time.Second, 20*time.Millisecond)

	// Shutdown flushes the spans.
	stop()
	spans := collectSpans(recv, agentSpans)

	// No span tells a tenant, a secret or a message's words.
	requireNoneTells(t, spans, tenant.ID.String(), botToken, secret, token, inboundText, replyText)

	turn := caller.TraceID().String()
	find := func(name, parentName string) *span {
		t.Helper()
		var found []*span
		for _, s := range spans {
			if s.name == name && s.traceID == turn && (parentName == "" || spans[s.parent] != nil && spans[s.parent].name == parentName) {
				found = append(found, s)
			}
		}
		require.Len(t, found, 1, "span %q under %q in the turn's trace", name, parentName)
		return found[0]
	}
	webhook := find("POST /webhooks/{channel_type}/{account_id}", "")
	require.Equal(t, caller.SpanID().String(), webhook.parent, "the caller's traceparent is continued")
	require.Equal(t, "SERVER", webhook.kind)
	require.Equal(t, "INTERNAL", find("verify webhook", webhook.name).kind)
	enrich := find("river.work/mio.enrich", webhook.name)
	require.Equal(t, "CONSUMER", enrich.kind)
	require.Equal(t, "CLIENT", find("fetch attachment", "river.work/mio.enrich").kind)
	handle := find("handle message", webhook.name)
	require.Equal(t, "CONSUMER", handle.kind)
	replySpan := find("POST /v1/consumers/{name}/reply", "handle message")
	require.Equal(t, "SERVER", replySpan.kind)
	dispatch := find("river.work/mio.dispatch", replySpan.name)
	require.Equal(t, "CONSUMER", dispatch.kind)
	require.Equal(t, "INTERNAL", find("send", "river.work/mio.dispatch").kind)
	// Job runs are River's spans (otelriver), children of the message's
	// trace through the job's metadata.
	for _, job := range []struct {
		span        *span
		kind, queue string
	}{{enrich, "mio.enrich", "enrich"}, {dispatch, "mio.dispatch", "dispatch"}} {
		require.Equal(t, job.kind, job.span.attrs["kind"])
		require.Equal(t, job.queue, job.span.attrs["queue"])
		require.Equal(t, "1", job.span.attrs["attempt"])
		require.Equal(t, "ok", job.span.attrs["status"])
		require.Equal(t, "mio", job.span.attrs["messaging.system"])
	}
	platform := find("POST", "send")
	require.Equal(t, "CLIENT", platform.kind)
	require.Equal(t, "200", platform.attrs["http.response.status_code"])
	require.Equal(t, "telegram: sendMessage", platform.attrs["mio.operation"])

	// Batches live in traces of their own, linked to the turn's spans.
	linked(t, spans, "ingest commit", webhook.id)
	linked(t, spans, "reply commit", replySpan.id)
	var receive *span
	for _, s := range spans {
		if s.name == "receive" && s.traceID != turn {
			receive = s
		}
	}
	require.NotNil(t, receive, "the pull's receive span")
	require.Equal(t, "CLIENT", receive.kind)
	require.Contains(t, receive.links, webhook.id, "the pull links the message's trace")

	t.Log("one conversation turn, trace " + turn + ":\n" + traceTree(spans, turn))
}

// serveTraced runs mio serve in-process on the database at ownerURL with
// tracing pointed at recv, and returns its public URL and the function
// that shuts it down (flushing the spans) and checks it exited cleanly.
func serveTraced(t *testing.T, ownerURL string, key []byte, recv *otlpReceiver) (string, func()) {
	t.Helper()
	addr := freeAddr(t)
	vars := map[string]string{
		"MIO_DATABASE_URL": ownerURL, "MIO_HTTP_ADDR": addr, "MIO_ADMIN_ADDR": "127.0.0.1:0",
		"MIO_MASTER_KEY": base64.StdEncoding.EncodeToString(key), "MIO_ENV": "dev",
		"MIO_BLOB_URL": "file://" + t.TempDir(), "MIO_LOG_LEVEL": "error", "MIO_FETCH_INTERNAL_HOSTS": "127.0.0.1",
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_TRACES_SAMPLER": "always_on",
	}
	sctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(sctx, []string{"serve"}, func(k string) string { return vars[k] }, io.Discard, stderr)
	}()
	public := "http://" + addr
	waitReady(t, public, stderr)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.Equal(t, 0, <-done, stderr.String())
		})
	}
	t.Cleanup(func() {
		cancel()
		once.Do(func() { <-done })
	})
	return public, stop
}

// collectSpans returns the spans recv got and the agent's recorder
// ended, by span id.
func collectSpans(recv *otlpReceiver, agentSpans *tracetest.SpanRecorder) map[string]*span {
	spans := map[string]*span{}
	recv.mu.Lock()
	for _, s := range recv.spans {
		sp := &span{name: s.Name, kind: strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_"), traceID: hex.EncodeToString(s.TraceId),
			id: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{},
			start: time.Unix(0, int64(s.StartTimeUnixNano))}
		for _, l := range s.Links {
			sp.links = append(sp.links, hex.EncodeToString(l.SpanId))
		}
		for _, a := range s.Attributes {
			sp.attrs[a.Key] = anyValue(a.Value)
		}
		spans[sp.id] = sp
	}
	recv.mu.Unlock()
	if agentSpans == nil {
		return spans
	}
	for _, s := range agentSpans.Ended() {
		sp := &span{name: s.Name(), kind: strings.ToUpper(s.SpanKind().String()), traceID: s.SpanContext().TraceID().String(),
			id: s.SpanContext().SpanID().String(), attrs: map[string]string{}, start: s.StartTime(), fromTheAgent: true}
		if s.Parent().IsValid() {
			sp.parent = s.Parent().SpanID().String()
		}
		spans[sp.id] = sp
	}
	return spans
}

// requireNoneTells fails when a span attribute holds one of secrets.
func requireNoneTells(t *testing.T, spans map[string]*span, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		for k, v := range s.attrs {
			for _, bad := range secrets {
				require.NotContains(t, v, bad, "span %q attribute %s", s.name, k)
			}
		}
	}
}

// linked requires a root client span name, outside to's trace, linked to
// span to.
func linked(t *testing.T, spans map[string]*span, name, to string) {
	t.Helper()
	for _, s := range spans {
		if s.name == name && s.parent == "" && s.traceID != spans[to].traceID {
			for _, l := range s.links {
				if l == to {
					require.Equal(t, "CLIENT", s.kind, name)
					return
				}
			}
		}
	}
	t.Fatalf("no root span %q linked to %s", name, to)
}

// traceTree draws trace traceID's spans as an indented tree, children in
// start order; a span's parent outside the trace (the caller) is a root.
func traceTree(spans map[string]*span, traceID string) string {
	children := map[string][]*span{}
	for _, s := range spans {
		if s.traceID != traceID {
			continue
		}
		p := s.parent
		if spans[p] == nil {
			p = ""
		}
		children[p] = append(children[p], s)
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		cs := children[parent]
		sort.Slice(cs, func(i, j int) bool { return cs[i].start.Before(cs[j].start) })
		for _, s := range cs {
			who := "mio"
			if s.fromTheAgent {
				who = "agent"
			}
			fmt.Fprintf(&b, "%s%s [%s, %s]", strings.Repeat("  ", depth), s.name, strings.ToLower(s.kind), who)
			if c := s.attrs["http.response.status_code"]; c != "" {
				b.WriteString(" status " + c)
			}
			b.WriteString("\n")
			walk(s.id, depth+1)
		}
	}
	walk("", 1)
	return b.String()
}

// anyValue renders an attribute's value.
func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	}
	return v.String()
}
