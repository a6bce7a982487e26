package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/envelope"
)

// TestConsumeContinuesTheDeliveryTrace: Consume starts the handler's span
// as a child of the delivery's traceparent, and a reply sent under the
// handler's ctx carries the handler span's traceparent.
func TestConsumeContinuesTheDeliveryTrace(t *testing.T) {
	const delivered = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	deliveryID := uuid.New()
	var (
		mu        sync.Mutex
		replyTP   string
		pulled    bool
		replied   = make(chan struct{})
		closeOnce sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/consumers/c/pull":
			if pulled {
				_, _ = w.Write([]byte(`{"deliveries":[]}`))
				return
			}
			pulled = true
			_ = json.NewEncoder(w).Encode(map[string]any{"deliveries": []map[string]any{{
				"delivery_id": deliveryID, "seq": 1, "delivery_count": 1, "traceparent": delivered,
				"message": map[string]any{"id": uuid.New(), "text": "hi"}}}})
		case "/v1/consumers/c/reply":
			replyTP = r.Header.Get("traceparent")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"` + uuid.NewString() + `","handoff_state":"queued"}`))
			closeOnce.Do(func() { close(replied) })
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()

	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	c := client.New(srv.URL, "t", client.WithTracerProvider(tp))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-replied
		cancel()
	}()
	_ = c.Consume(ctx, "c", func(ctx context.Context, d client.Delivery) error {
		if d.Traceparent != delivered {
			t.Errorf("delivery traceparent %q, want %q", d.Traceparent, delivered)
		}
		_, err := c.Reply(ctx, "c", d.DeliveryID, envelope.SendCommand{IdempotencyKey: "k", Text: "hello"})
		return err
	}, client.ConsumeOptions{Wait: 10 * time.Millisecond, ExtendEvery: time.Hour})

	var handler sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "process c" {
			handler = s
		}
	}
	if handler == nil {
		t.Fatal("no handler span")
	}
	if handler.SpanKind() != trace.SpanKindConsumer || handler.Parent().TraceID().String() != delivered[3:35] ||
		handler.Parent().SpanID().String() != delivered[36:52] {
		t.Errorf("handler span kind %v parent %v, want a consumer span under %s", handler.SpanKind(), handler.Parent(), delivered)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "00-" + handler.SpanContext().TraceID().String() + "-" + handler.SpanContext().SpanID().String() + "-01"
	if replyTP != want {
		t.Errorf("reply traceparent %q, want the handler span's %q", replyTP, want)
	}
}

func TestDeliveryContextWithoutTraceparent(t *testing.T) {
	ctx := context.Background()
	if got := (client.Delivery{}).Context(ctx); got != ctx {
		t.Error("a delivery without traceparent changed the context")
	}
}
