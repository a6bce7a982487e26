package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
)

// adminOutboundSearch answers GET /admin/v1/tenants/{tenant_id}/outbound:
// the tenant's outbound messages, newest first, filtered like GET
// /v1/outbound (state, provider_state, account_id, conversation_id, limit,
// cursor) and by time: until (RFC 3339, exclusive) and since (inclusive).
// Keyset-paged on the time-ordered id; no count.
func (s *Server) adminOutboundSearch(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	q := url.Values{}
	var since, until time.Time
	for k, v := range r.URL.Query() {
		switch k {
		case "since", "until":
			t, err := time.Parse(time.RFC3339Nano, v[0])
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", k+": want an RFC 3339 time")
				return
			}
			if k == "since" {
				since = t
			} else {
				until = t
			}
		default:
			q[k] = v
		}
	}
	lp, err := outboundListParams(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	page, err := s.admin.OutboundSearch(r.Context(), tid, admin.OutboundSearch{Filter: lp, Since: since, Until: until})
	if err != nil {
		s.adminError(w, r, "search outbound", err)
		return
	}
	out := outboundPage{Items: make([]*outboundView, len(page.Items))}
	for i, o := range page.Items {
		out.Items[i] = outboundViewOf(o, nil)
	}
	if page.Next != uuid.Nil {
		out.NextCursor = encodeCursor(page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

// tailPoll is how often the live tail looks for messages when no wake-up
// arrives (other processes' commits reach it through the hub too).
const tailPoll = time.Second

// adminTail answers GET /admin/v1/tenants/{tenant_id}/tail: a Server-Sent
// Events stream of the tenant's inbound messages from now on, one
// "message" event each (the envelope and routing fields), until the
// client goes away.
func (s *Server) adminTail(w http.ResponseWriter, r *http.Request) {
	tid, ok := uuidParam(w, r, "tenant_id")
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	opts := admin.TailOptions{Poll: tailPoll, Live: func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": mio live tail\n\n")
		flusher.Flush()
	}}
	if s.hub != nil {
		sub := s.hub.Subscribe(tid)
		defer sub.Close()
		opts.Wake = sub.C
	}
	// An error ends the stream; the client sees it end and reconnects.
	_ = s.admin.Tail(r.Context(), tid, opts, func(m *db.TailMessage) error {
		b, _ := json.Marshal(m)
		if _, err := fmt.Fprintf(w, "event: message\nid: %s\ndata: %s\n\n", m.ID, b); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	})
}
