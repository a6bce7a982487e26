package bench

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPSink is an OTLP/HTTP trace receiver for a bench server with
// tracing on: it decodes every export, counts its spans and drops them,
// so the server pays for recording and exporting spans and the bench for
// nothing more than reading them.
type OTLPSink struct {
	srv     *httptest.Server
	exports atomic.Int64
	spans   atomic.Int64
}

// StartOTLPSink starts a sink on a loopback port; Close stops it.
func StartOTLPSink() *OTLPSink {
	s := &OTLPSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err != nil || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		s.exports.Add(1)
		s.spans.Add(int64(n))
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	return s
}

// URL is the sink's base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (s *OTLPSink) URL() string { return s.srv.URL }

// Close stops the sink.
func (s *OTLPSink) Close() { s.srv.Close() }

// Received reports the exports and spans received so far.
func (s *OTLPSink) Received() (exports, spans int64) { return s.exports.Load(), s.spans.Load() }

// TracingEnv is the server environment for the --otel-sampler value v:
// "off" (tracing disabled, whatever the bench's own environment says),
// "always_on", or "parentbased_traceidratio:<ratio>" (any sampler of
// OTEL_TRACES_SAMPLER, its argument after a colon), exporting to
// endpoint. Empty: the server inherits the bench's OTEL_* variables.
func TracingEnv(v, endpoint string) ([]string, error) {
	switch v {
	case "":
		return nil, nil
	case "off":
		return []string{"OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}, nil
	}
	sampler, arg, _ := strings.Cut(v, ":")
	switch sampler {
	case "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
	default:
		return nil, fmt.Errorf("--otel-sampler %q: want off, always_on or parentbased_traceidratio:<ratio> (an OTEL_TRACES_SAMPLER value)", v)
	}
	return []string{"OTEL_SDK_DISABLED=false", "OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_TRACES_SAMPLER=" + sampler, "OTEL_TRACES_SAMPLER_ARG=" + arg}, nil
}
