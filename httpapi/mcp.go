package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/mcpserver"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/tracing"
	"github.com/miohq/mio/typing"
)

// mcpHandler serves MCP's Streamable HTTP transport at /mcp, stateless
// (no sessions: every POST stands alone, so any replica answers it). The
// token is checked as on /v1 (401 for a bad one); roles are checked per
// tool, a missing role being a tool error. A browser Origin not listed in
// MIO_MCP_ALLOWED_ORIGINS is refused with 403 (the MCP transport's DNS
// rebinding rule); requests without Origin (agents, CLIs) pass.
func (s *Server) mcpHandler() http.Handler {
	// The SDK's localhost rule (a loopback listener answers only loopback
	// Host names) is off: it would refuse every request a reverse proxy on
	// the same host forwards with the public name, and it guards servers
	// without credentials, while every request here carries an API token
	// (a rebinding page has none) and browsers are held to the Origin list.
	h := mcpserver.NewHTTPHandler(mcpserver.Options{Backend: s.mcpBackend, Logger: s.log, Version: s.version},
		mcp.StreamableHTTPOptions{Logger: s.log, DisableLocalhostProtection: true})
	// The SDK hands the verified token's info to every handler: it carries
	// the principal authenticate found.
	carry := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p := principalFrom(r.Context())
		if p == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.TokenID.String(), Extra: map[string]any{principalExtra: p}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return s.mcpOrigin(s.authenticate()(carry(h)))
}

const principalExtra = "mio_principal"

// mcpOrigin refuses requests whose Origin is not allowed.
func (s *Server) mcpOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !s.mcpOrigins[strings.ToLower(strings.TrimRight(o, "/"))] {
			writeError(w, http.StatusForbidden, "forbidden_origin", "origin "+o+" is not allowed (MIO_MCP_ALLOWED_ORIGINS)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpBackend is the in-process backend of one MCP request, under its
// token's tenant and roles.
func (s *Server) mcpBackend(_ context.Context, extra *mcp.RequestExtra) (mcpserver.Backend, error) {
	if extra == nil || extra.TokenInfo == nil {
		return nil, mcpserver.Errorf(mcpserver.CodeForbidden, "no API token")
	}
	p, ok := extra.TokenInfo.Extra[principalExtra].(*Principal)
	if !ok {
		return nil, mcpserver.Errorf(mcpserver.CodeForbidden, "no API token")
	}
	return &mcpServices{s: s, p: p}, nil
}

// mcpServices runs the tools on the services, as the /v1 handlers do.
type mcpServices struct {
	s *Server
	p *Principal
}

var _ mcpserver.Backend = (*mcpServices)(nil)

// need returns a forbidden *mcpserver.Error unless the token holds one
// of roles.
func (b *mcpServices) need(roles ...db.Role) error {
	for _, r := range roles {
		if b.p.Has(r) {
			return nil
		}
	}
	return mcpserver.Errorf(mcpserver.CodeForbidden, "this API token lacks the role %s", orRoles(roles))
}

func (b *mcpServices) consumerError(err error) error {
	var ve *consume.ValidationError
	switch {
	case errors.As(err, &ve):
		return mcpserver.Errorf(mcpserver.CodeBadRequest, "%s", ve.Reason)
	case errors.Is(err, consume.ErrNotFound):
		return mcpserver.Errorf(mcpserver.CodeNotFound, "no such consumer")
	}
	return err
}

func (b *mcpServices) ConsumerAckWait(ctx context.Context, consumer string) (time.Duration, error) {
	if err := b.need(db.RoleConsume); err != nil {
		return 0, err
	}
	if !consume.ValidName(consumer) {
		return 0, mcpserver.Errorf(mcpserver.CodeBadRequest, "consumer: 1 to 64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit")
	}
	var c *db.Consumer
	err := db.InTenantTx(ctx, b.s.pool, b.p.TenantID, func(tx pgx.Tx) error {
		var err error
		c, err = db.ConsumerGet(ctx, tx, b.p.TenantID, consumer)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return 0, mcpserver.Errorf(mcpserver.CodeNotFound, "no such consumer")
	}
	if err != nil {
		return 0, err
	}
	return c.AckWait, nil
}

func (b *mcpServices) CreateConsumer(ctx context.Context, consumer string) (time.Duration, error) {
	if err := b.need(db.RoleConsume); err != nil {
		return 0, err
	}
	info, _, err := b.s.consumers.Ensure(ctx, b.p.TenantID, consumer, consume.Config{
		DeliverPolicy: mcpserver.CreatedDeliverPolicy, Ordering: mcpserver.CreatedOrdering})
	if err != nil {
		return 0, b.consumerError(err)
	}
	return info.Consumer.AckWait, nil
}

func (b *mcpServices) Pull(ctx context.Context, consumer string, max int, wait time.Duration) ([]mcpserver.Leased, error) {
	if err := b.need(db.RoleConsume); err != nil {
		return nil, err
	}
	ds, err := b.s.consumers.Pull(ctx, b.p.TenantID, consumer, max, wait)
	if err != nil {
		return nil, b.consumerError(err)
	}
	// The stored envelopes are decoded with encoding/json/v2's engine set
	// to encoding/json's behaviour, as the archive's lines are
	// (workers.archiveLine): the same values, in one pass where
	// encoding/json validates the input first and then decodes it.
	v1 := jsonv1.DefaultOptionsV1()
	out := make([]mcpserver.Leased, len(ds))
	msgs := make([]envelope.Message, len(ds))
	for i, d := range ds {
		if err := jsonv2.Unmarshal(d.Message, &msgs[i], v1); err != nil {
			return nil, fmt.Errorf("decode delivered message: %w", err)
		}
		out[i] = mcpserver.Leased{DeliveryID: d.DeliveryID, DeliveryCount: d.DeliveryCount, Message: &msgs[i],
			Traceparent: string(d.Traceparent)}
	}
	return out, nil
}

func (b *mcpServices) Settle(ctx context.Context, consumer string, action mcpserver.Action, ids []uuid.UUID, delay time.Duration) ([]mcpserver.SettleResult, error) {
	if err := b.need(db.RoleConsume); err != nil {
		return nil, err
	}
	res, err := b.s.consumers.Settle(ctx, b.p.TenantID, consumer, string(action), ids, consume.SettleOptions{Delay: delay})
	if err != nil {
		return nil, b.consumerError(err)
	}
	out := make([]mcpserver.SettleResult, len(res))
	for i, r := range res {
		out[i] = mcpserver.SettleResult{DeliveryID: r.DeliveryID.String(), OK: r.OK, Error: r.Error}
	}
	return out, nil
}

// outboxError translates the send path's refusals as POST /v1/outbound
// answers them.
func (b *mcpServices) outboxError(err error) error {
	var invalid *outbox.ValidationError
	var seq *outbox.StreamSeqError
	var tooLarge *outbox.TooLargeError
	switch {
	case errors.As(err, &invalid):
		return mcpserver.Errorf(mcpserver.CodeBadRequest, "%s", invalid.Error())
	case errors.As(err, &tooLarge):
		return mcpserver.Errorf(mcpserver.CodeBadRequest, "%s", tooLarge.Error())
	case errors.Is(err, outbox.ErrStreamEmpty):
		return mcpserver.Errorf(mcpserver.CodeBadRequest, "%s", err.Error())
	case errors.As(err, &seq):
		return mcpserver.Errorf(mcpserver.CodeConflict, "%s", seq.Error())
	case errors.Is(err, outbox.ErrStreamFinished), errors.Is(err, outbox.ErrNotStream):
		return mcpserver.Errorf(mcpserver.CodeConflict, "%s", err.Error())
	case errors.Is(err, outbox.ErrKeyConflict):
		return mcpserver.Errorf(mcpserver.CodeConflict, "idempotency_key was already used for a different message")
	case errors.Is(err, outbox.ErrNotFound):
		return mcpserver.Errorf(mcpserver.CodeNotFound, "no such outbound message")
	case errors.Is(err, outbox.ErrNotConfigured):
		return mcpserver.Errorf(mcpserver.CodeUnavailable, "outbound dispatch is not configured on this MIO")
	case errors.Is(err, outbox.ErrEnqueue) || db.IsUnavailable(err):
		return mcpserver.Errorf(mcpserver.CodeUnavailable, "MIO could not queue it; nothing was written: call again")
	}
	return err
}

func (b *mcpServices) Reply(ctx context.Context, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand) (*mcpserver.Sent, error) {
	if !b.p.Has(db.RoleConsume) || !b.p.Has(db.RoleProduce) {
		return nil, mcpserver.Errorf(mcpserver.CodeForbidden, "a reply needs an API token with the roles consume and produce")
	}
	if !consume.ValidName(consumer) {
		return nil, mcpserver.Errorf(mcpserver.CodeBadRequest, "consumer: 1 to 64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit")
	}
	if b.s.replies == nil {
		return nil, mcpserver.Errorf(mcpserver.CodeUnavailable, "replies are not configured on this MIO")
	}
	cmd.Traceparent = tracing.Traceparent(ctx)
	sent, err := b.s.replies.Reply(ctx, b.p.TenantID, consumer, deliveryID, cmd)
	switch {
	case errors.Is(err, consume.ErrLeaseLost):
		return nil, mcpserver.Errorf(mcpserver.CodeLeaseLost, "lease lost")
	case errors.Is(err, consume.ErrNotFound):
		return nil, mcpserver.Errorf(mcpserver.CodeNotFound, "no such consumer")
	case err != nil:
		return nil, b.outboxError(err)
	}
	return &mcpserver.Sent{ID: sent.ID, HandoffState: string(sent.HandoffState)}, nil
}

func (b *mcpServices) Send(ctx context.Context, cmd envelope.SendCommand) (*mcpserver.Sent, error) {
	if err := b.need(db.RoleProduce); err != nil {
		return nil, err
	}
	cmd.Traceparent = tracing.Traceparent(ctx)
	sent, err := b.s.outbox.Send(ctx, b.p.TenantID, &cmd)
	if err != nil {
		return nil, b.outboxError(err)
	}
	return &mcpserver.Sent{ID: sent.ID, HandoffState: string(sent.HandoffState)}, nil
}

func (b *mcpServices) React(ctx context.Context, cmd envelope.ReactionCommand) (*mcpserver.Sent, error) {
	if err := b.need(db.RoleProduce); err != nil {
		return nil, err
	}
	if channel, ok := b.s.cannotReact(ctx, b.p.TenantID, cmd.AccountID); ok {
		return nil, mcpserver.Errorf(mcpserver.CodeCapabilityMissing, "%s", noReactions(channel))
	}
	sent, err := b.s.outbox.React(ctx, b.p.TenantID, &cmd)
	if err != nil {
		return nil, b.outboxError(err)
	}
	return &mcpserver.Sent{ID: sent.ID, HandoffState: string(sent.HandoffState)}, nil
}

func (b *mcpServices) StreamAppend(ctx context.Context, id uuid.UUID, seq int, delta string) error {
	if err := b.need(db.RoleProduce); err != nil {
		return err
	}
	if err := b.s.outbox.Append(ctx, b.p.TenantID, id, seq, delta); err != nil {
		return b.outboxError(err)
	}
	return nil
}

func (b *mcpServices) StreamFinish(ctx context.Context, id uuid.UUID, seq int, text *string, rich json.RawMessage) error {
	if err := b.need(db.RoleProduce); err != nil {
		return err
	}
	f := outbox.Finish{Seq: seq, Text: text, RichContent: rich}
	if err := b.s.outbox.FinishStream(ctx, b.p.TenantID, id, f); err != nil {
		return b.outboxError(err)
	}
	return nil
}

func (b *mcpServices) SendStatus(ctx context.Context, id uuid.UUID) (*mcpserver.Outbound, error) {
	if err := b.need(db.RoleRead, db.RoleProduce); err != nil {
		return nil, err
	}
	o, _, err := b.s.outbox.Get(ctx, b.p.TenantID, id)
	if err != nil {
		return nil, b.outboxError(err)
	}
	return outboundForMCP(outbox.ViewOf(o, nil)), nil
}

func outboundForMCP(v *outbox.View) *mcpserver.Outbound {
	return &mcpserver.Outbound{ID: v.ID, IdempotencyKey: v.IdempotencyKey, AccountID: v.AccountID, ChannelType: v.ChannelType,
		ConversationID: v.ConversationID, ThreadID: v.ThreadID, Text: v.Text, RichContent: v.RichContent,
		Attachments: v.Attachments, EditOf: v.EditOf, HandoffState: string(v.HandoffState), ProviderState: string(v.ProviderState),
		Attempt: v.Attempt, LastError: v.LastError, ProviderMessageID: v.ProviderMessageID, NextAttemptAt: v.NextAttemptAt,
		CreatedAt: v.CreatedAt, HandedOffAt: v.HandedOffAt, DeadAt: v.DeadAt}
}

func (b *mcpServices) Typing(ctx context.Context, accountID uuid.UUID, conversationID, threadID string) (string, string, error) {
	if err := b.need(db.RoleProduce); err != nil {
		return "", "", err
	}
	if len(conversationID) > 512 || len(threadID) > 512 {
		return "", "", mcpserver.Errorf(mcpserver.CodeBadRequest, "conversation_id and thread_id are at most 512 bytes")
	}
	if b.s.typing == nil {
		return "", "", mcpserver.Errorf(mcpserver.CodeUnavailable, "typing signals are not configured on this MIO")
	}
	res, err := b.s.typing.Signal(ctx, b.p.TenantID, accountID, conversationID, threadID)
	switch {
	case errors.Is(err, typing.ErrAccountNotFound):
		return "", "", mcpserver.Errorf(mcpserver.CodeNotFound, "account_id: no such account")
	case errors.Is(err, typing.ErrAccountDisabled):
		return "", "", mcpserver.Errorf(mcpserver.CodeConflict, "account_id: the account is not active")
	case err != nil:
		return "", "", err
	}
	return string(res.Outcome), res.Error, nil
}

func (b *mcpServices) Message(ctx context.Context, id uuid.UUID) (*envelope.Message, error) {
	if err := b.need(db.RoleRead, db.RoleConsume); err != nil {
		return nil, err
	}
	var m *db.InboxMessage
	err := db.InTenantTx(ctx, b.s.pool, b.p.TenantID, func(tx pgx.Tx) error {
		var err error
		m, err = db.InboxGet(ctx, tx, b.p.TenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, mcpserver.Errorf(mcpserver.CodeNotFound, "no such message")
	}
	if err != nil {
		return nil, err
	}
	var msg envelope.Message
	if err := json.Unmarshal(m.Envelope, &msg); err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	return &msg, nil
}

func (b *mcpServices) History(ctx context.Context, q mcpserver.HistoryQuery) (*mcpserver.HistoryPage, error) {
	if err := b.need(db.RoleRead); err != nil {
		return nil, err
	}
	page, err := b.s.conversationHistory(ctx, b.p.TenantID, historyQuery{AccountID: q.AccountID,
		ConversationID: q.ConversationID, Limit: q.Limit, Before: q.Before})
	if errors.Is(err, db.ErrBadCursor) {
		return nil, mcpserver.Errorf(mcpserver.CodeBadRequest, "before: not a next_cursor of a previous call")
	}
	if err != nil {
		return nil, err
	}
	out := &mcpserver.HistoryPage{Items: make([]mcpserver.HistoryItem, len(page.Items)), NextCursor: page.NextCursor}
	for i, it := range page.Items {
		out.Items[i] = mcpserver.HistoryItem{At: it.At, Message: it.Message}
		if it.Outbound != nil {
			out.Items[i].Outbound = outboundForMCP(it.Outbound)
		}
	}
	return out, nil
}

func (b *mcpServices) Attachment(ctx context.Context, id uuid.UUID) (*mcpserver.AttachmentData, error) {
	if err := b.need(db.RoleRead, db.RoleConsume); err != nil {
		return nil, err
	}
	var a *db.Attachment
	err := db.InTenantTx(ctx, b.s.pool, b.p.TenantID, func(tx pgx.Tx) error {
		var err error
		a, err = db.AttachmentGet(ctx, tx, b.p.TenantID, id)
		return err
	})
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, mcpserver.Errorf(mcpserver.CodeNotFound, "no such attachment, or it is not stored yet")
	case err != nil:
		return nil, err
	case a.Status != db.AttachmentStored:
		return nil, mcpserver.Errorf(mcpserver.CodeNotFound, "the attachment could not be fetched from the platform: %s", a.Error)
	case b.s.blob == nil:
		return nil, mcpserver.Errorf(mcpserver.CodeUnavailable, "no blob store configured")
	case a.Size > mcpserver.MaxAttachmentBytes:
		return nil, mcpserver.Errorf(mcpserver.CodeBadRequest, "the attachment is over %d MiB: fetch it with GET /v1/attachments/%s instead",
			mcpserver.MaxAttachmentBytes>>20, id)
	}
	rc, info, err := b.s.blob.Get(ctx, a.StorageKey)
	if err != nil {
		return nil, fmt.Errorf("open attachment: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, mcpserver.MaxAttachmentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read attachment: %w", err)
	}
	mt := a.MimeType
	if mt == "" {
		mt = info.ContentType
	}
	return &mcpserver.AttachmentData{MimeType: mt, Data: data}, nil
}
