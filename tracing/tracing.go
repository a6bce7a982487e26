// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables and holds the few helpers the rest of MIO uses to
// make spans cheaply: with no endpoint configured every helper is free (no
// context, no span, no attribute is allocated).
//
// The provider is passed explicitly to whatever starts root spans (the
// HTTP listener, the group-commit flushers, River jobs); code below a span
// starts children from the span in its ctx (Child), so no package needs a
// global tracer.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of MIO's spans.
const Name = "github.com/miohq/mio"

// System is the messaging.system attribute of MIO's messaging spans.
const System = "mio"

// Propagator is the W3C trace context, the one propagation format MIO
// reads and writes (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Setup builds the tracer provider the OTEL_* variables describe (read
// through getenv) and returns it with the function that flushes and stops
// it. Without OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or with OTEL_SDK_DISABLED=true, the
// provider is a no-op one: no exporter, no goroutine, nothing recorded
// (Tracer returns nil for it). An unknown protocol or sampler is an error.
func Setup(ctx context.Context, logger *slog.Logger, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return noop.NewTracerProvider(), off, nil
	}
	endpoint, err := traceEndpoint(getenv)
	if err != nil {
		return nil, nil, err
	}
	sampler, err := parseSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, nil, err
	}
	if endpoint.url == "" {
		return noop.NewTracerProvider(), off, nil
	}
	headers, err := parseList("OTEL_EXPORTER_OTLP_HEADERS", getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	if err != nil {
		return nil, nil, err
	}
	res, err := newResource(getenv)
	if err != nil {
		return nil, nil, err
	}
	var exp sdktrace.SpanExporter
	switch endpoint.protocol {
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint.url), otlptracehttp.WithHeaders(headers))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint.url), otlptracegrpc.WithHeaders(headers))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler), sdktrace.WithResource(res))
	logger.Info("tracing on", "endpoint", endpoint.redacted(), "protocol", endpoint.protocol,
		"sampler", sampler.Description())
	return tp, tp.Shutdown, nil
}

// Tracer returns MIO's tracer of tp, or nil when tp records nothing (nil
// or a no-op provider): callers test for nil and skip the span.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(Name)
}

// Start starts a span of tracer t as a child of ctx's span. A nil t (no
// tracing) returns ctx and a no-op span without allocating.
func Start(ctx context.Context, t trace.Tracer, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if t == nil {
		return ctx, noop.Span{}
	}
	return t.Start(ctx, name, trace.WithSpanKind(kind))
}

// Child starts a span as a child of ctx's span, from the provider that
// made it, when that span is recording; otherwise it returns ctx and a
// no-op span without allocating. It is how code below a traced entry
// point (a request, a job) adds spans without holding a tracer.
func Child(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noop.Span{}
	}
	return parent.TracerProvider().Tracer(Name).Start(ctx, name, trace.WithSpanKind(kind))
}

// endpoint is where spans go and how.
type endpoint struct {
	url      string
	protocol string
}

// redacted is the endpoint without user info or query, for the log.
func (e endpoint) redacted() string {
	u, err := url.Parse(e.url)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// traceEndpoint reads the endpoint variables: the traces endpoint is used
// as is; the general one gets /v1/traces appended over HTTP (the OTLP
// exporter specification).
func traceEndpoint(getenv func(string) string) (endpoint, error) {
	e := endpoint{protocol: strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))}
	if e.protocol == "" {
		e.protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch e.protocol {
	case "":
		e.protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	default:
		return e, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported (http/protobuf or grpc)", e.protocol)
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		e.url = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		e.url = v
		if e.protocol == "http/protobuf" {
			e.url = strings.TrimRight(v, "/") + "/v1/traces"
		}
	}
	if e.url != "" {
		if u, err := url.Parse(e.url); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return e, fmt.Errorf("tracing: OTLP endpoint %q is not an http(s) URL", e.redacted())
		}
	}
	return e, nil
}

// parseSampler reads OTEL_TRACES_SAMPLER and its argument. Default
// parentbased_always_on.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if strings.TrimSpace(arg) == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG %q is not a ratio from 0 to 1", arg)
		}
		return f, nil
	}
	switch strings.TrimSpace(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.TraceIDRatioBased(f), nil
	case "parentbased_traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f)), nil
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not supported (always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", name)
}

// newResource is the process's resource: OTEL_RESOURCE_ATTRIBUTES, then
// OTEL_SERVICE_NAME (default "mio").
func newResource(getenv func(string) string) (*resource.Resource, error) {
	kv, err := parseList("OTEL_RESOURCE_ATTRIBUTES", getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, err
	}
	attrs := make([]attribute.KeyValue, 0, len(kv)+1)
	service := "mio"
	for k, v := range kv {
		if k == "service.name" {
			service = v
			continue
		}
		attrs = append(attrs, attribute.String(k, v))
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		service = v
	}
	attrs = append(attrs, attribute.String("service.name", service))
	return resource.NewSchemaless(attrs...), nil
}

// parseList reads a key=value,key=value list whose values are URL-encoded
// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). Its values are
// never repeated in an error: headers carry credentials.
func parseList(name, s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("tracing: %s: an entry is not key=value", name)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("tracing: %s: the value of %q is not URL-encoded", name, k)
		}
		out[k] = dv
	}
	return out, nil
}
