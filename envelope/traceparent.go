package envelope

import "bytes"

// traceparentLen is the length of a version-00 W3C traceparent.
const traceparentLen = 55

// StoredTraceparent returns the trace_id of a stored envelope (as MIO
// writes it or as PostgreSQL's jsonb prints it) when it is a version-00
// W3C traceparent, else nil. It scans for the key without decoding: no
// other object in an envelope has a trace_id key, and a string's quotes
// are escaped, so the key is the top-level one. The result shares env's
// bytes.
func StoredTraceparent(env []byte) []byte {
	i := bytes.Index(env, []byte(`"trace_id":`))
	if i < 0 {
		return nil
	}
	rest := env[i+len(`"trace_id":`):]
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	if len(rest) < traceparentLen+2 || rest[0] != '"' || rest[traceparentLen+1] != '"' {
		return nil
	}
	tp := rest[1 : traceparentLen+1]
	if !validTraceparent(tp) {
		return nil
	}
	return tp
}

// validTraceparent reports whether tp is "00-" 32 hex "-" 16 hex "-" 2
// hex, lower case.
func validTraceparent(tp []byte) bool {
	if len(tp) != traceparentLen || tp[0] != '0' || tp[1] != '0' || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	for i, c := range tp {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
