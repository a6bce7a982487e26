// Package openapitest holds MIO's HTTP handlers to their OpenAPI 3.1
// documents in tests: Validator loads a document with libopenapi and
// checks it against the OpenAPI 3.1 meta-schema, Handler wraps a handler
// so that every response it writes is validated against the document
// (status declared, body matching the schema of its status and media
// type), failing the test otherwise.
//
// Only tests import this package.
package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/httpapi/openapi"
)

// Validator loads doc and fails the test unless it is a valid OpenAPI
// 3.1 document.
func Validator(t testing.TB, doc openapi.Document) validator.Validator {
	t.Helper()
	v, _ := load(t, doc)
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi %s is not a valid OpenAPI 3.1 document:\n%s", doc, describe(errs))
	}
	return v
}

// Model loads doc's high-level model (paths, components).
func Model(t testing.TB, doc openapi.Document) *v3.Document {
	t.Helper()
	_, m := load(t, doc)
	return m
}

func load(t testing.TB, doc openapi.Document) (validator.Validator, *v3.Document) {
	t.Helper()
	b, err := doc.JSON(builtin.Registry(builtin.Options{}).Types())
	if err != nil {
		t.Fatal(err)
	}
	d, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatalf("openapi %s: %v", doc, err)
	}
	if v := d.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi %s: version %s, want 3.1", doc, v)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi %s: %v", doc, err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("openapi %s: %v", doc, errs)
	}
	return v, &m.Model
}

// Handler wraps h so that each response is validated against doc once
// h has written it; a mismatch fails t (with the request, the status and
// the body). Requests the router does not know (its own 404 and 405
// answers for paths and methods the document lacks) are not checked:
// the route table test compares routes and document.
func Handler(t testing.TB, doc openapi.Document, h http.Handler) http.Handler {
	t.Helper()
	v := Validator(t, doc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		resp := &http.Response{
			StatusCode: rec.status,
			Header:     w.Header().Clone(),
			Body:       io.NopCloser(bytes.NewReader(rec.body.Bytes())),
			Request:    r,
		}
		ok, errs := v.ValidateHttpResponse(r, resp)
		if ok || unrouted(rec.status, errs) {
			return
		}
		t.Errorf("openapi %s: %s %s → %d does not match the document:\n%s\nbody: %.2000s",
			doc, r.Method, r.URL.RequestURI(), rec.status, describe(errs), rec.body.String())
	})
}

// unrouted reports a router-level 404/405 for a path or method the
// document does not have.
func unrouted(status int, errs []*verrors.ValidationError) bool {
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return false
	}
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation && e.ValidationSubType != helpers.ValidationMissingOperation {
			return false
		}
	}
	return len(errs) > 0
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s", e.Message)
		if e.Reason != "" {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s (%s)", f.Reason, f.FieldPath)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status  int
	written bool
	body    bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if !r.written {
		r.status, r.written = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.written = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Flush keeps streaming answers (the live tail) streaming.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
