package outbox

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// View is an outbound message as MIO shows it outside: the answer of GET
// /v1/outbound/{id} and the payload of the NATS bridge's outbound events.
type View struct {
	ID             uuid.UUID `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	AccountID      uuid.UUID `json:"account_id"`
	ChannelType    string    `json:"channel_type"`
	ConversationID string    `json:"conversation_id"`
	ThreadID       string    `json:"thread_id,omitempty"`
	// Kind is "message", or "reaction" for a POST /v1/reactions, whose
	// Reaction is set (and RichContent not).
	Kind              string                    `json:"kind"`
	Reaction          *envelope.ReactionSend    `json:"reaction,omitempty"`
	Text              string                    `json:"text"`
	RichContent       json.RawMessage           `json:"rich_content,omitempty"`
	Attachments       []envelope.SendAttachment `json:"attachments,omitempty"`
	EditOf            *uuid.UUID                `json:"edit_of,omitempty"`
	HandoffState      db.HandoffState           `json:"handoff_state"`
	ProviderState     db.ProviderState          `json:"provider_state"`
	Attempt           int                       `json:"attempt"`
	Attempts          int                       `json:"attempts"`
	Series            int                       `json:"series"`
	LastError         string                    `json:"last_error,omitempty"`
	ProviderMessageID string                    `json:"provider_message_id,omitempty"`
	NextAttemptAt     *time.Time                `json:"next_attempt_at,omitempty"`
	CreatedAt         time.Time                 `json:"created_at"`
	UpdatedAt         time.Time                 `json:"updated_at"`
	HandedOffAt       *time.Time                `json:"handed_off_at,omitempty"`
	DeadAt            *time.Time                `json:"dead_at,omitempty"`
	DiscardedAt       *time.Time                `json:"discarded_at,omitempty"`
	// Stream is set for a streamed reply.
	Stream *StreamView `json:"stream,omitempty"`
	Events []EventView `json:"events,omitempty"`
}

// StreamView is a streamed reply's state: the seq of its last append
// taken (0: none yet) and whether it was finished (no more appends).
type StreamView struct {
	Seq      int  `json:"seq"`
	Finished bool `json:"finished"`
}

// EventView is one entry of an outbound message's timeline.
type EventView struct {
	Event   string          `json:"event"`
	Machine string          `json:"machine"`
	State   string          `json:"state"`
	Attempt int             `json:"attempt"`
	At      time.Time       `json:"at"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// ViewOf is the view of o with its timeline (events may be nil: no
// timeline, as in lists).
func ViewOf(o *db.Outbound, events []db.OutboxEvent) *View {
	v := &View{ID: o.ID, IdempotencyKey: o.IdempotencyKey, AccountID: o.AccountID, ChannelType: o.ChannelType,
		ConversationID: o.ConversationID, ThreadID: o.ThreadID, Text: o.Text, RichContent: json.RawMessage(o.RichContent),
		EditOf: o.EditOf, HandoffState: o.HandoffState, ProviderState: o.ProviderState, Attempt: o.AttemptNo,
		Attempts: o.Attempts, Series: o.Series, LastError: o.LastError, ProviderMessageID: o.ProviderMessageID,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, HandedOffAt: o.HandedOffAt, DeadAt: o.DeadAt,
		DiscardedAt: o.DiscardedAt, Kind: envelope.KindMessage}
	if r := ReactionOf(o.RichContent); r != nil {
		v.Kind, v.Reaction, v.RichContent = envelope.KindReaction, r, nil
	}
	if o.StreamSeq != nil {
		// A stream names itself in edit_of (db.OutboxNew): not an edit.
		v.EditOf = nil
		v.Stream = &StreamView{Seq: *o.StreamSeq, Finished: o.StreamFinishedAt != nil}
	}
	if len(o.Attachments) > 0 {
		_ = json.Unmarshal(o.Attachments, &v.Attachments)
	}
	if o.HandoffState == db.HandoffQueued {
		t := o.NextAttemptAt
		v.NextAttemptAt = &t
	}
	for _, e := range events {
		v.Events = append(v.Events, EventViewOf(e))
	}
	return v
}

// EventViewOf is the view of one timeline entry.
func EventViewOf(e db.OutboxEvent) EventView {
	return EventView{Event: e.Event, Machine: e.Machine, State: e.State, Attempt: e.AttemptNo, At: e.At,
		Detail: json.RawMessage(e.Detail)}
}
