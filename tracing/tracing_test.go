package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/miohq/mio/tracing"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestSetupOffWithoutEndpoint(t *testing.T) {
	for name, kv := range map[string]map[string]string{
		"no endpoint": {"OTEL_TRACES_SAMPLER": "always_on"},
		"disabled":    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			tp, shutdown, err := tracing.Setup(t.Context(), slog.New(slog.DiscardHandler), env(kv))
			require.NoError(t, err)
			require.IsType(t, noop.TracerProvider{}, tp)
			require.Nil(t, tracing.Tracer(tp))
			require.Equal(t, before, runtime.NumGoroutine(), "no exporter goroutine")
			require.NoError(t, shutdown(t.Context()))
		})
	}
}

func TestSetupOn(t *testing.T) {
	tp, shutdown, err := tracing.Setup(t.Context(), slog.New(slog.DiscardHandler), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": "0.01", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20x",
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"}))
	require.NoError(t, err)
	require.IsType(t, &sdktrace.TracerProvider{}, tp)
	require.NotNil(t, tracing.Tracer(tp))
	require.NoError(t, shutdown(t.Context()))
}

func TestSetupRefusesUnknownValues(t *testing.T) {
	for name, tc := range map[string]struct {
		kv   map[string]string
		want string
	}{
		"protocol":    {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		"sampler":     {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"},
		"sampler arg": {map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"},
		"endpoint":    {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "endpoint"},
		"headers":     {map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_HEADERS": "secret"}, "OTEL_EXPORTER_OTLP_HEADERS"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := tracing.Setup(t.Context(), slog.New(slog.DiscardHandler), env(tc.kv))
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret")
		})
	}
}

// TestOffAllocatesNothing holds the promise that a process without
// tracing pays nothing on its hot paths: the helpers they call allocate
// neither a context nor a span.
func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tracing.Start(ctx, nil, "x", trace.SpanKindInternal)
		c, child := tracing.Child(c, "y", trace.SpanKindClient)
		if child.IsRecording() {
			child.SetAttributes()
		}
		child.End()
		span.End()
		_ = tracing.Traceparent(c)
		_ = tracing.WithRemote(c, "")
	})
	require.Zero(t, allocs)
}

func TestTraceparentRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	tpv := tracing.Traceparent(ctx)
	require.Len(t, tpv, 55)
	sc := tracing.Remote(tpv)
	require.True(t, sc.IsValid())
	require.Equal(t, span.SpanContext().TraceID(), sc.TraceID())
	require.Equal(t, span.SpanContext().SpanID(), sc.SpanID())
	require.True(t, sc.IsSampled())
	for _, bad := range []string{"", "00-x", strings.Repeat("0", 55), "01-" + tpv[3:], tpv[:53] + "zz"} {
		require.False(t, tracing.Remote(bad).IsValid(), bad)
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	log.InfoContext(ctx, "traced")
	span.End()
	log.InfoContext(context.Background(), "untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var traced, untraced map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &traced))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &untraced))
	require.Equal(t, span.SpanContext().TraceID().String(), traced["trace_id"])
	require.Equal(t, span.SpanContext().SpanID().String(), traced["span_id"])
	require.Equal(t, "x", traced["component"])
	require.NotContains(t, untraced, "trace_id")
}
