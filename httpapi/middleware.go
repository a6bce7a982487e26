package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/tracing"
)

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument records every request in the HTTP histogram, labelled by the
// chi route pattern (bounded), never the raw path.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
			if errors.Is(r.Context().Err(), context.Canceled) {
				// Nothing written: the client hung up (nginx's 499,
				// client closed request), counted with the 4xx.
				rec.status = 499
			}
		}
		s.metrics.HTTPRequestDuration.WithLabelValues(route, r.Method, strconv.Itoa(rec.status/100)+"xx").Observe(time.Since(start).Seconds())
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			// The server span (traced) is named after the route, known
			// only now that chi has matched it.
			span.SetName(r.Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
	})
}

// adminSpan names the admin listener's server span (traced) after the chi
// route, as instrument does the public one's, and replaces its url.path
// with the route: an admin path holds tenant, account and token ids,
// which no span carries.
func (s *Server) adminSpan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		span := trace.SpanFromContext(r.Context())
		if !span.IsRecording() {
			return
		}
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		span.SetName(r.Method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route), semconv.URLPath(route))
	})
}

// traced wraps a listener's routes (the public and the admin one) in a
// server span per request (otelhttp), continuing the caller's
// traceparent, when tracing is on; requests filter (when not nil) says
// false of are not traced.
func (s *Server) traced(h http.Handler, filter otelhttp.Filter) http.Handler {
	if s.tracerProvider == nil {
		return h
	}
	opts := []otelhttp.Option{otelhttp.WithTracerProvider(s.tracerProvider),
		otelhttp.WithPropagators(tracing.Propagator), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider())}
	if filter != nil {
		opts = append(opts, otelhttp.WithFilter(filter))
	}
	return otelhttp.NewHandler(h, "mio", opts...)
}

// scrapeOrProbe is false for a metrics scrape or a probe, which the
// admin listener leaves untraced (a trace every few seconds per scraper,
// saying nothing).
func scrapeOrProbe(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/livez", "/healthz", "/readyz":
		return false
	}
	return true
}

// recoverer turns a panic into a 500 and a log line; the process survives.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", slog.Any("panic", v), slog.String("path", r.URL.Path))
				writeError(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
