package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/tracing"
)

// maxBatchBody bounds POST /v1/outbound/batch bodies: 500 commands of a
// few kilobytes each.
const maxBatchBody = 16 << 20

// batchItem is one command's answer in POST /v1/outbound/batch. Status is
// the status POST /v1/outbound would have answered for it alone.
type batchItem struct {
	Index        int             `json:"index"`
	Status       int             `json:"status"`
	ID           uuid.UUID       `json:"id,omitzero"`
	HandoffState db.HandoffState `json:"handoff_state,omitempty"`
	Error        *errorDetail    `json:"error,omitempty"`
}

// postOutboundBatch answers POST /v1/outbound/batch {"commands": […]}:
// up to 500 SendCommands of the caller's tenant in ONE transaction, each
// answered on its own in "items" (202 accepted, 200 replay, 400 refused,
// 409 idempotency key used for another command; a refused command writes
// nothing and does not stop the others). The request as a whole is 200,
// or 400 (not a batch, nothing written) or 503 (the transaction failed:
// nothing written, retry all of it — replays are answered 200).
func (s *Server) postOutboundBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Commands []*envelope.SendCommand `json:"commands"`
	}
	if err := decodeJSONLimit(w, r, &req, maxBatchBody); err != nil {
		badRequest(w, err)
		return
	}
	tp := tracing.Traceparent(r.Context())
	for i, c := range req.Commands {
		if c == nil {
			writeError(w, http.StatusBadRequest, "bad_request", "commands["+strconv.Itoa(i)+"]: want a send command, not null")
			return
		}
		c.Traceparent = tp
	}
	items, err := s.outbox.SendBatch(r.Context(), principalFrom(r.Context()).TenantID, req.Commands)
	if err != nil {
		s.outboxError(w, r, "outbound batch", "could not enqueue the batch; nothing was written, retry", err)
		return
	}
	out := struct {
		Items []batchItem `json:"items"`
	}{Items: make([]batchItem, len(items))}
	for i, it := range items {
		bi := batchItem{Index: i}
		var invalid *outbox.ValidationError
		switch {
		case it.Err == nil && it.Sent.Replayed:
			bi.Status, bi.ID, bi.HandoffState = http.StatusOK, it.Sent.ID, it.Sent.HandoffState
		case it.Err == nil:
			bi.Status, bi.ID, bi.HandoffState = http.StatusAccepted, it.Sent.ID, it.Sent.HandoffState
		case errors.As(it.Err, &invalid):
			bi.Status, bi.Error = http.StatusBadRequest, &errorDetail{Code: "bad_request", Message: invalid.Error()}
		case errors.Is(it.Err, outbox.ErrKeyConflict):
			bi.Status, bi.Error = http.StatusConflict, &errorDetail{Code: "conflict", Message: it.Err.Error()}
		default:
			// SendBatch answers items only with the errors above.
			bi.Status, bi.Error = http.StatusInternalServerError, &errorDetail{Code: "internal", Message: "internal error"}
			s.log.Error("outbound batch: unexpected item error", "index", i, "err", it.Err)
		}
		out.Items[i] = bi
	}
	writeJSON(w, http.StatusOK, out)
}
