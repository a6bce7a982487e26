package jobs

import (
	"encoding/json"

	"github.com/riverqueue/river"
)

// A job inserted for a traced message carries the message's W3C
// traceparent in its metadata ({"traceparent": "00-…"}, the key River's
// otelriver uses), so the span of its run continues the message's trace
// (workers.NewClient). Untraced messages leave the metadata empty.

// TraceOpts returns the insert options that carry traceparent in a job's
// metadata, or nil (the job's own options) when traceparent is empty.
func TraceOpts(traceparent string) *river.InsertOpts {
	if traceparent == "" {
		return nil
	}
	meta, err := json.Marshal(traceMetadata{Traceparent: traceparent})
	if err != nil {
		return nil
	}
	return &river.InsertOpts{Metadata: meta}
}

// Traceparent returns the traceparent a job's metadata carries, or "".
func Traceparent(metadata []byte) string {
	if len(metadata) == 0 {
		return ""
	}
	var m traceMetadata
	if json.Unmarshal(metadata, &m) != nil {
		return ""
	}
	return m.Traceparent
}

type traceMetadata struct {
	Traceparent string `json:"traceparent"`
}
