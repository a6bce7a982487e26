package groupcommit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/groupcommit"
)

// TestCommitSpanLinksItsRequests: one span per transaction, a root linked
// to each request's span, and each request's span linked back to it.
func TestCommitSpanLinksItsRequests(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracer := tp.Tracer("test")
	rec := &recorder{}
	c := groupcommit.New(rec.commit, groupcommit.Config{Window: 50 * time.Millisecond, MaxBatch: 100, Flushers: 1,
		Name: "ingest", Tracer: tracer})
	c.Start()
	defer c.Stop()

	const n = 3
	reqSpans := make([]trace.Span, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, span := tracer.Start(context.Background(), "request")
		reqSpans[i] = span
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Do(ctx, i+1); err != nil {
				t.Error(err)
			}
			span.End()
		}()
	}
	wg.Wait()
	var commits []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "ingest commit" {
			commits = append(commits, s)
		}
	}
	if len(commits) != 1 {
		t.Fatalf("%d commit spans, want 1 for one batch", len(commits))
	}
	commit := commits[0]
	if commit.Parent().IsValid() || commit.SpanKind() != trace.SpanKindClient {
		t.Errorf("commit span parent %v kind %v, want a root client span", commit.Parent(), commit.SpanKind())
	}
	linked := map[trace.SpanID]bool{}
	for _, l := range commit.Links() {
		linked[l.SpanContext.SpanID()] = true
	}
	for _, s := range reqSpans {
		if !linked[s.SpanContext().SpanID()] {
			t.Errorf("commit span not linked to request %s", s.SpanContext().SpanID())
		}
	}
	for _, s := range sr.Ended() {
		if s.Name() != "request" {
			continue
		}
		if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != commit.SpanContext().SpanID() {
			t.Errorf("request span links %v, want the commit span", s.Links())
		}
	}
}
