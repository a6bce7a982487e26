package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/miohq/mio/db"
)

// errorBody is the JSON error shape of every endpoint:
// {"error":{"code","message"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// maxRequestBody bounds /v1 request bodies.
const maxRequestBody = 1 << 20

// decodeJSON reads one JSON object into v, rejecting unknown fields,
// trailing data and oversized bodies. The returned error's text is a
// reason safe to show the caller.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONLimit(w, r, v, maxRequestBody)
}

// decodeJSONLimit is decodeJSON with a body limit of its own.
func decodeJSONLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return errUnsupportedMedia
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return errBodyTooLarge
		case errors.Is(err, io.EOF):
			return errors.New("empty body: want a JSON object")
		}
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("invalid JSON: trailing data after the object")
	}
	return nil
}

var (
	errUnsupportedMedia = errors.New("content type must be application/json")
	errBodyTooLarge     = errors.New("body too large")
)

// badRequest answers a decode or validation error.
func badRequest(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errUnsupportedMedia):
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", err.Error())
		return
	case errors.Is(err, errBodyTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, "bad_request", err.Error())
}

// dbError answers a data-layer error that is not the caller's fault: 503
// when the database is unavailable, else 500. A request its client
// cancelled (hung up mid-request) is not a database failure: it is logged
// at debug and answered nothing.
func (s *Server) dbError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if s.clientGone(r, what, err) {
		return
	}
	if db.IsUnavailable(err) {
		s.log.Warn("database unavailable", "step", what, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "temporarily unavailable, retry")
		return
	}
	s.log.Error("database error", "step", what, "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error")
}

// clientGone reports whether err is the request's context cancelled: the
// client hung up (or the server is closing its connection). It logs that
// at debug; there is no one to answer, so nothing is written.
func (s *Server) clientGone(r *http.Request, what string, err error) bool {
	if !errors.Is(err, context.Canceled) || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	s.log.Debug("client disconnected", "method", r.Method, "path", r.URL.Path, "step", what)
	return true
}
