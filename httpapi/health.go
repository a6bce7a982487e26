package httpapi

import (
	"context"
	"net/http"
	"time"
)

// livez answers 200 while the process serves HTTP: the liveness probe. It
// checks nothing else (a database outage must not get replicas restarted);
// /healthz is the same answer under its older name.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the database answers, the schema is current
// and, in a bridge-only process, the NATS bridge can publish.
// The schema check is cached briefly so probes do not hammer the database.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "database unreachable")
		return
	}
	if s.schemaCheck != nil {
		if err := s.schemaCheck(ctx); err != nil {
			writeError(w, http.StatusServiceUnavailable, "schema_out_of_date", err.Error())
			return
		}
	}
	if s.bridgeReady != nil {
		if err := s.bridgeReady(); err != nil {
			writeError(w, http.StatusServiceUnavailable, "nats_unavailable", err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
