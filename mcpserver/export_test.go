package mcpserver

import (
	"net/http"
	"sync/atomic"
)

// ProtocolVersions are the versions the direct path serves.
var ProtocolVersions = protocolVersions

// SplitHTTPHandler returns, of a handler NewHTTPHandler built, the SDK's
// handler alone and the handler counting in served the requests its
// direct path answered.
func SplitHTTPHandler(h http.Handler, served *atomic.Int64) (sdk, counted http.Handler) {
	d := h.(*direct)
	return d.sdk, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.serve(w, r) {
			served.Add(1)
			return
		}
		d.sdk.ServeHTTP(w, r)
	})
}
