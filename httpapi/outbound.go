package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/workers"
)

// Limits of a SendCommand.
const (
	maxIdempotencyKey = 255
	maxConversationID = 512
	maxTextBytes      = 64 << 10
	maxAttachments    = 10
	maxURLLength      = 2048
	maxRichBlocks     = 50
	maxRichButtons    = 25
)

// errBadCommand wraps every validation failure of a SendCommand.
var errBadCommand = errors.New("invalid send command")

func badCommandf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadCommand, fmt.Sprintf(format, args...))
}

// validateSendCommand checks what needs no database and returns the
// strictly decoded rich content (nil when absent).
func validateSendCommand(c *envelope.SendCommand) (*envelope.RichContent, error) {
	switch {
	case strings.TrimSpace(c.IdempotencyKey) == "":
		return nil, badCommandf("idempotency_key is required")
	case len(c.IdempotencyKey) > maxIdempotencyKey:
		return nil, badCommandf("idempotency_key is longer than %d bytes", maxIdempotencyKey)
	case c.AccountID == uuid.Nil:
		return nil, badCommandf("account_id is required")
	case strings.TrimSpace(c.ConversationID) == "":
		return nil, badCommandf("conversation_id is required")
	case len(c.ConversationID) > maxConversationID || len(c.ThreadID) > maxConversationID:
		return nil, badCommandf("conversation_id and thread_id are at most %d bytes", maxConversationID)
	case len(c.Text) > maxTextBytes:
		return nil, badCommandf("text is longer than %d bytes", maxTextBytes)
	case !utf8.ValidString(c.Text):
		return nil, badCommandf("text is not valid UTF-8")
	case len(c.Attachments) > maxAttachments:
		return nil, badCommandf("at most %d attachments", maxAttachments)
	}
	for _, s := range []string{c.IdempotencyKey, c.ConversationID, c.ThreadID} {
		if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, badCommandf("idempotency_key, conversation_id and thread_id may not contain control characters")
		}
	}
	for i, a := range c.Attachments {
		u, err := url.Parse(a.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(a.URL) > maxURLLength {
			return nil, badCommandf("attachments[%d].url must be an absolute http(s) URL of at most %d bytes", i, maxURLLength)
		}
	}
	var rich *envelope.RichContent
	if raw := bytes.TrimSpace(c.RichContent); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		rich = &envelope.RichContent{}
		if err := dec.Decode(rich); err != nil {
			return nil, badCommandf("rich_content: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if err := validateRich(rich); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(c.Text) == "" && rich == nil && len(c.Attachments) == 0 {
		return nil, badCommandf("a message needs text, rich_content or attachments")
	}
	return rich, nil
}

func validateRich(rc *envelope.RichContent) error {
	if len(rc.Blocks) > maxRichBlocks || len(rc.Buttons) > maxRichButtons {
		return badCommandf("rich_content has at most %d blocks and %d buttons", maxRichBlocks, maxRichButtons)
	}
	for i, b := range rc.Blocks {
		switch b.Type {
		case envelope.BlockText, envelope.BlockList, envelope.BlockTable, envelope.BlockLabel:
		case envelope.BlockImage:
			if u, err := url.Parse(b.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return badCommandf("rich_content.blocks[%d]: an image needs an absolute http(s) url", i)
			}
		default:
			return badCommandf("rich_content.blocks[%d].type %q: want text, list, table, label or image", i, b.Type)
		}
	}
	for i, b := range rc.Buttons {
		if strings.TrimSpace(b.Label) == "" {
			return badCommandf("rich_content.buttons[%d].label is required", i)
		}
	}
	return nil
}

// requestHash is the sha-256 of the command's canonical JSON: the same
// idempotency key with a different command is a conflict.
func requestHash(c *envelope.SendCommand, rich *envelope.RichContent) []byte {
	canon := *c
	canon.RichContent = nil
	if rich != nil {
		canon.RichContent, _ = json.Marshal(rich)
	}
	b, _ := json.Marshal(canon)
	sum := sha256.Sum256(b)
	return sum[:]
}

// sendAccepted is the answer to POST /v1/outbound.
type sendAccepted struct {
	ID           uuid.UUID `json:"id"`
	HandoffState string    `json:"handoff_state"`
}

// postOutbound answers POST /v1/outbound: validate the SendCommand, then
// in one transaction insert the outbox row, its first event and its
// dispatch job. 202 when accepted; 200 with the same id when the tenant
// already sent this idempotency key; 409 when that key named a different
// command; 400 for bad input (nothing written); 503 when the enqueue
// cannot commit (nothing written).
func (s *Server) postOutbound(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var cmd envelope.SendCommand
	if err := decodeJSON(w, r, &cmd); err != nil {
		badRequest(w, err)
		return
	}
	rich, err := validateSendCommand(&cmd)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	hash := requestHash(&cmd, rich)
	if s.river == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "outbound dispatch is not configured")
		return
	}

	ctx := r.Context()
	var existing *db.Outbound
	var id uuid.UUID
	err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		prior, err := db.OutboxGetByKey(ctx, tx, p.TenantID, cmd.IdempotencyKey)
		if err == nil {
			existing = prior
			return errDuplicate
		}
		if !errors.Is(err, db.ErrNotFound) {
			return err
		}
		row, err := s.outboxRow(ctx, tx, p.TenantID, &cmd, rich, hash)
		if err != nil {
			return err
		}
		ins, err := workers.EnqueueOutbound(ctx, tx, s.river, p.TenantID, []db.OutboxNew{*row})
		if err != nil {
			return fmt.Errorf("%w: %w", errEnqueue, err)
		}
		if len(ins) == 0 {
			return errDuplicate // a concurrent request with the same key won
		}
		id = ins[0].ID
		return nil
	})
	if errors.Is(err, errDuplicate) && existing == nil {
		err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
			existing, err = db.OutboxGetByKey(ctx, tx, p.TenantID, cmd.IdempotencyKey)
			return err
		})
	}
	switch {
	case existing != nil && (err == nil || errors.Is(err, errDuplicate)):
		if !bytes.Equal(existing.RequestSHA256, hash) {
			writeError(w, http.StatusConflict, "conflict", "idempotency_key was already used for a different command")
			return
		}
		writeJSON(w, http.StatusOK, sendAccepted{ID: existing.ID, HandoffState: existing.HandoffState})
	case errors.Is(err, errBadCommand):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, errEnqueue) || err != nil && db.IsUnavailable(err):
		s.log.Warn("outbound: could not enqueue", "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "could not enqueue the message; nothing was written, retry")
	case err != nil:
		s.dbError(w, "outbound enqueue", err)
	default:
		w.Header().Set("Location", "/v1/outbound/"+id.String())
		writeJSON(w, http.StatusAccepted, sendAccepted{ID: id, HandoffState: db.HandoffQueued})
	}
}

var (
	errDuplicate = errors.New("idempotency key already used")
	errEnqueue   = errors.New("enqueue failed")
)

// outboxRow checks the command against the database (its account, the
// message it edits) and builds the row.
func (s *Server) outboxRow(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cmd *envelope.SendCommand, rich *envelope.RichContent, hash []byte) (*db.OutboxNew, error) {
	acct, err := db.AccountGet(ctx, tx, tenantID, cmd.AccountID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, badCommandf("account_id: no such account")
	}
	if err != nil {
		return nil, err
	}
	if acct.Status != db.AccountActive {
		return nil, badCommandf("account_id: the account is %s", acct.Status)
	}
	if cmd.EditOf != nil {
		orig, err := db.OutboxGet(ctx, tx, tenantID, *cmd.EditOf)
		if errors.Is(err, db.ErrNotFound) {
			return nil, badCommandf("edit_of: no such outbound message")
		}
		if err != nil {
			return nil, err
		}
		if orig.AccountID != cmd.AccountID || orig.ConversationID != cmd.ConversationID {
			return nil, badCommandf("edit_of: the edited message was sent on another account or conversation")
		}
	}
	row := &db.OutboxNew{ID: db.NewOutboxID(), AccountID: acct.ID, ChannelType: acct.ChannelType,
		ConversationID: cmd.ConversationID, ThreadID: cmd.ThreadID, IdempotencyKey: cmd.IdempotencyKey,
		RequestSHA256: hash, Text: cmd.Text, EditOf: cmd.EditOf}
	if rich != nil {
		row.RichContent, _ = json.Marshal(rich)
	}
	if len(cmd.Attachments) > 0 {
		row.Attachments, _ = json.Marshal(cmd.Attachments)
	}
	return row, nil
}

// outboundView is an outbound message as the API shows it.
type outboundView struct {
	ID                uuid.UUID                 `json:"id"`
	IdempotencyKey    string                    `json:"idempotency_key"`
	AccountID         uuid.UUID                 `json:"account_id"`
	ChannelType       string                    `json:"channel_type"`
	ConversationID    string                    `json:"conversation_id"`
	ThreadID          string                    `json:"thread_id,omitempty"`
	Text              string                    `json:"text"`
	RichContent       rawJSON                   `json:"rich_content,omitempty"`
	Attachments       []envelope.SendAttachment `json:"attachments,omitempty"`
	EditOf            *uuid.UUID                `json:"edit_of,omitempty"`
	HandoffState      string                    `json:"handoff_state"`
	ProviderState     string                    `json:"provider_state"`
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
	Events            []outboundEventView       `json:"events,omitempty"`
}

// outboundEventView is one entry of the timeline.
type outboundEventView struct {
	Event   string    `json:"event"`
	Machine string    `json:"machine"`
	State   string    `json:"state"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Detail  rawJSON   `json:"detail,omitempty"`
}

func outboundViewOf(o *db.Outbound, events []db.OutboxEvent) *outboundView {
	v := &outboundView{ID: o.ID, IdempotencyKey: o.IdempotencyKey, AccountID: o.AccountID, ChannelType: o.ChannelType,
		ConversationID: o.ConversationID, ThreadID: o.ThreadID, Text: o.Text, RichContent: rawJSON(o.RichContent),
		EditOf: o.EditOf, HandoffState: o.HandoffState, ProviderState: o.ProviderState, Attempt: o.AttemptNo,
		Attempts: o.Attempts, Series: o.Series, LastError: o.LastError, ProviderMessageID: o.ProviderMessageID,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, HandedOffAt: o.HandedOffAt, DeadAt: o.DeadAt,
		DiscardedAt: o.DiscardedAt}
	if len(o.Attachments) > 0 {
		_ = json.Unmarshal(o.Attachments, &v.Attachments)
	}
	if o.HandoffState == db.HandoffQueued {
		t := o.NextAttemptAt
		v.NextAttemptAt = &t
	}
	for _, e := range events {
		v.Events = append(v.Events, outboundEventView{Event: e.Event, Machine: e.Machine, State: e.State,
			Attempt: e.AttemptNo, At: e.At, Detail: rawJSON(e.Detail)})
	}
	return v
}

// getOutbound answers GET /v1/outbound/{id}: the message, both states,
// attempts, last error, provider id and its event timeline.
func (s *Server) getOutbound(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "outbound id must be a UUID")
		return
	}
	ctx := r.Context()
	var o *db.Outbound
	var ev []db.OutboxEvent
	err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		var err error
		if o, err = db.OutboxGet(ctx, tx, p.TenantID, id); err != nil {
			return err
		}
		ev, err = db.OutboxEventList(ctx, tx, p.TenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no such outbound message")
		return
	}
	if err != nil {
		s.dbError(w, "get outbound", err)
		return
	}
	writeJSON(w, http.StatusOK, outboundViewOf(o, ev))
}

// outboundPage is the answer to GET /v1/outbound.
type outboundPage struct {
	Items      []*outboundView `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// listOutbound answers GET /v1/outbound?state=&provider_state=&account_id=
// &conversation_id=&limit=&cursor=: the tenant's messages, newest first,
// keyset-paged (next_cursor, when present, fetches the next page).
func (s *Server) listOutbound(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "state", "provider_state", "account_id", "conversation_id", "limit", "cursor":
		default:
			writeError(w, http.StatusBadRequest, "bad_request", "unknown query parameter "+strconv.Quote(k))
			return
		}
	}
	lp := db.OutboxListParams{HandoffState: q.Get("state"), ProviderState: q.Get("provider_state"),
		ConversationID: q.Get("conversation_id"), Limit: 50}
	if lp.HandoffState != "" && db.HandoffRank(lp.HandoffState) < 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "state: want queued, sending, handed_off or dead")
		return
	}
	if lp.ProviderState != "" && db.ProviderRank(lp.ProviderState) < 0 {
		writeError(w, http.StatusBadRequest, "bad_request",
			"provider_state: want unknown, accepted, delivered, read, timed_out, bounced, dropped, complaint or failed")
		return
	}
	if v := q.Get("account_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "account_id must be a UUID")
			return
		}
		lp.AccountID = id
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit: want 1 to 500")
			return
		}
		lp.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		id, err := decodeCursor(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "cursor: not a cursor from a previous page")
			return
		}
		lp.BeforeID = id
	}
	ctx := r.Context()
	var rows []*db.Outbound
	err := db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		var err error
		rows, err = db.OutboxList(ctx, tx, p.TenantID, lp)
		return err
	})
	if err != nil {
		s.dbError(w, "list outbound", err)
		return
	}
	page := outboundPage{Items: make([]*outboundView, len(rows))}
	for i, o := range rows {
		page.Items[i] = outboundViewOf(o, nil)
	}
	if len(rows) == lp.Limit {
		page.NextCursor = encodeCursor(rows[len(rows)-1].ID)
	}
	writeJSON(w, http.StatusOK, page)
}

// A list cursor is the last id of the page, opaque to clients.
func encodeCursor(id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte("o:"), id[:]...))
}

func decodeCursor(c string) (uuid.UUID, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return uuid.Nil, err
	}
	raw, ok := bytes.CutPrefix(b, []byte("o:"))
	if !ok || len(raw) != 16 {
		return uuid.Nil, errors.New("bad cursor")
	}
	return uuid.UUID(raw), nil
}

// resendAccepted is the answer to a resend.
type resendAccepted struct {
	ID           uuid.UUID `json:"id"`
	HandoffState string    `json:"handoff_state"`
	Attempt      int       `json:"attempt"`
}

// resendOutbound answers POST /v1/outbound/{id}/resend: a message whose
// handoff is over (handed_off or dead) starts a new attempt series — same
// message id, new attempt numbers and hence new provider idempotency keys
// — at the back of its conversation's queue. 409 while a handoff is in
// progress.
func (s *Server) resendOutbound(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "outbound id must be a UUID")
		return
	}
	if s.river == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "outbound dispatch is not configured")
		return
	}
	ctx := r.Context()
	var state string
	var attempt int
	err = db.InTenantTx(ctx, s.pool, p.TenantID, func(tx pgx.Tx) error {
		o, err := db.OutboxGet(ctx, tx, p.TenantID, id)
		if err != nil {
			return err
		}
		if o.HandoffState != db.HandoffHandedOff && o.HandoffState != db.HandoffDead {
			state = o.HandoffState
			return errInProgress
		}
		job, err := s.river.InsertTx(ctx, tx, workers.DispatchArgs{TenantID: p.TenantID, OutboxID: id, AccountID: o.AccountID}, nil)
		if err != nil {
			return fmt.Errorf("%w: %w", errEnqueue, err)
		}
		attempt, err = db.OutboxResend(ctx, tx, p.TenantID, id, job.Job.ID)
		if errors.Is(err, db.ErrNotFound) {
			return errInProgress // it changed meanwhile
		}
		return err
	})
	switch {
	case errors.Is(err, db.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such outbound message")
	case errors.Is(err, errInProgress):
		writeError(w, http.StatusConflict, "conflict", "the message is still being handed off ("+state+"); resend it once it is handed_off or dead")
	case errors.Is(err, errEnqueue) || err != nil && db.IsUnavailable(err):
		s.log.Warn("outbound: could not enqueue a resend", "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "could not enqueue the resend; nothing changed, retry")
	case err != nil:
		s.dbError(w, "resend outbound", err)
	default:
		writeJSON(w, http.StatusAccepted, resendAccepted{ID: id, HandoffState: db.HandoffQueued, Attempt: attempt})
	}
}

var errInProgress = errors.New("handoff in progress")
