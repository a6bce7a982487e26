package httpapi

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// postReaction answers POST /v1/reactions (outbox.React): a reaction is
// sent like a message, through the outbox — 202 with its outbound id,
// whose GET /v1/outbound/{id} shows its progress; 200 with the same id
// for a replayed idempotency key; 409 when that key named something else;
// 422 when the account's channel cannot react (no reactions capability);
// 400 for bad input; 503 when the enqueue cannot commit.
func (s *Server) postReaction(w http.ResponseWriter, r *http.Request) {
	var cmd envelope.ReactionCommand
	if err := decodeJSON(w, r, &cmd); err != nil {
		badRequest(w, err)
		return
	}
	tenantID := principalFrom(r.Context()).TenantID
	if channel, ok := s.cannotReact(r.Context(), tenantID, cmd.AccountID); ok {
		writeError(w, http.StatusUnprocessableEntity, "capability_missing", noReactions(channel))
		return
	}
	sent, err := s.outbox.React(r.Context(), tenantID, &cmd)
	switch {
	case err != nil:
		s.outboxError(w, r, "reaction enqueue", "could not enqueue the reaction; nothing was written, retry", err)
	case sent.Replayed:
		writeJSON(w, http.StatusOK, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	default:
		w.Header().Set("Location", "/v1/outbound/"+sent.ID.String())
		writeJSON(w, http.StatusAccepted, sendAccepted{ID: sent.ID, HandoffState: sent.HandoffState})
	}
}

// cannotReact returns the channel type of account when it is an account
// whose channel has no reactions capability. An account that cannot be
// resolved is left to the outbox, which says why (no such account, not
// active).
func (s *Server) cannotReact(ctx context.Context, tenantID, account uuid.UUID) (string, bool) {
	if s.accounts == nil || account == uuid.Nil {
		return "", false
	}
	acct, err := s.accounts.Outbound(ctx, tenantID, account)
	if err != nil || acct.Capabilities.Reactions {
		return "", false
	}
	return acct.ChannelType, true
}

// noReactions is the capability_missing message of a channel that cannot
// react.
func noReactions(channel string) string {
	return "the " + channel + " channel has no reactions capability: it cannot react to messages"
}
