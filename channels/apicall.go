package channels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/tracing"
)

// Defaults of CallAPI.
const (
	// SendTimeout bounds a platform API call whose ctx has no deadline, so
	// an HTTP client without a timeout cannot hang a send.
	SendTimeout = 30 * time.Second
	// MaxAnswerBody bounds how much of a platform's answer is read when
	// APIRequest.MaxAnswer is zero.
	MaxAnswerBody = 1 << 20
)

// APIRequest is one call an adapter makes to its platform's API.
type APIRequest struct {
	// Op prefixes every error ("slack: chat.postMessage"). It never holds
	// the URL, which may carry a token (Telegram) or credentials.
	Op string
	// Method is the HTTP method. Default POST.
	Method string
	// URL is the endpoint. It never reaches an error.
	URL string
	// Header is sent as is (Authorization, signatures, ...); Content-Type
	// defaults to application/json.
	Header http.Header
	// Body is the request body, usually JSON.
	Body []byte
	// MaxAnswer bounds how much of the answer is read. Default
	// MaxAnswerBody.
	MaxAnswer int64
}

// APIAnswer is a platform's answer: the status and headers, and the body
// cut at APIRequest.MaxAnswer bytes.
type APIAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// CallAPI sends req through client, within BoundContext, and reads the
// answer. It does not judge the status: each adapter classifies its
// platform's answers. A request that cannot be built is a *PermanentError;
// a failed round trip or answer read is a *TransientError (see
// TransportError).
func CallAPI(ctx context.Context, client *http.Client, req APIRequest) (*APIAnswer, error) {
	ctx, cancel := BoundContext(ctx)
	defer cancel()
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	httpReq, err := http.NewRequestWithContext(ctx, method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		// err repeats the URL.
		return nil, Permanent(req.Op, errors.New("cannot build request"))
	}
	for k, v := range req.Header {
		httpReq.Header[k] = v
	}
	if httpReq.Header.Get("Content-Type") == "" {
		httpReq.Header.Set("Content-Type", MediaTypeJSON)
	}
	ctx, span := tracing.Child(ctx, method, trace.SpanKindClient)
	defer span.End()
	if span.IsRecording() {
		// Never the URL: it may carry a token (Telegram).
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.ServerAddress(httpReq.URL.Hostname()),
			attribute.String("mio.operation", req.Op))
		httpReq = httpReq.WithContext(ctx)
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		if span.IsRecording() {
			span.SetStatus(codes.Error, "transport")
		}
		return nil, TransportError(ctx, req.Op, err)
	}
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
		if resp.StatusCode >= 400 {
			span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
		}
	}
	defer resp.Body.Close()
	limit := req.MaxAnswer
	if limit <= 0 {
		limit = MaxAnswerBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, TransportError(ctx, req.Op, err)
	}
	return &APIAnswer{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// BoundContext returns ctx as is when it has a deadline, else ctx bounded
// by SendTimeout. The caller calls cancel.
func BoundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, SendTimeout)
}

// Permanent wraps err as a *PermanentError prefixed with op ("telegram:
// sendMessage").
func Permanent(op string, err error) error {
	return &PermanentError{Err: fmt.Errorf("%s: %w", op, err)}
}
