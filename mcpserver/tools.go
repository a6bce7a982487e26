package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miohq/mio/envelope"
)

// Limits of the tools' arguments.
const (
	DefaultPullMax     = 10
	MaxPullMax         = 100
	DefaultPullWait    = 20 * time.Second
	MaxPullWait        = 60 * time.Second
	MaxSettleIDs       = 1000
	MaxReleaseDelay    = 12 * time.Hour
	DefaultHistorySize = 20
	MaxHistorySize     = 100
)

// Tool inputs and outputs. Ids are strings so that a malformed one is
// reported with its field's name.
type (
	pullIn struct {
		Consumer    string `json:"consumer,omitempty" jsonschema:"the durable consumer to read (default mcp; created on first use, delivering messages that arrive after that)"`
		MaxMessages *int   `json:"max_messages,omitempty" jsonschema:"at most this many deliveries, 1 to 100 (default 10)"`
		Wait        string `json:"wait,omitempty" jsonschema:"how long to wait for a first message, a duration such as 20s (default 20s, at most 60s; 0s returns at once)"`
	}
	pullOut struct {
		Deliveries []deliveryOut `json:"deliveries" jsonschema:"empty when the wait ended without a message"`
	}
	deliveryOut struct {
		DeliveryID     string    `json:"delivery_id" jsonschema:"settle or reply with this id"`
		DeliveryCount  int       `json:"delivery_count" jsonschema:"1 the first time; more when an earlier lease expired or was released"`
		LeaseExpiresAt time.Time `json:"lease_expires_at" jsonschema:"reply or settle before this time, or call extend_lease"`
		Traceparent    string    `json:"traceparent,omitempty" jsonschema:"W3C trace context the message was received under (when MIO traces): continue it and send your span's traceparent in _meta of reply or send_message"`
		Message        Message   `json:"message"`
	}
	settleIn struct {
		Consumer    string   `json:"consumer,omitempty" jsonschema:"the consumer the deliveries came from (default mcp)"`
		DeliveryIDs []string `json:"delivery_ids" jsonschema:"delivery_id values from pull_messages"`
	}
	releaseIn struct {
		Consumer    string   `json:"consumer,omitempty" jsonschema:"the consumer the deliveries came from (default mcp)"`
		DeliveryIDs []string `json:"delivery_ids" jsonschema:"delivery_id values from pull_messages"`
		Delay       string   `json:"delay,omitempty" jsonschema:"deliver again after this duration, such as 30s (default 0s, at most 12h)"`
	}
	settleOut struct {
		Results        []SettleResult `json:"results" jsonschema:"one per delivery id, in order"`
		LeaseExpiresAt *time.Time     `json:"lease_expires_at,omitempty" jsonschema:"extend_lease: the renewed leases run until at least this time"`
	}
	replyIn struct {
		Consumer       string                    `json:"consumer,omitempty" jsonschema:"the consumer the delivery came from (default mcp)"`
		DeliveryID     string                    `json:"delivery_id" jsonschema:"the delivery to answer, from pull_messages"`
		Text           string                    `json:"text,omitempty" jsonschema:"the answer (text, rich_content or attachments required)"`
		RichContent    json.RawMessage           `json:"rich_content,omitempty" jsonschema:"optional card: {title, blocks: [{type: text, text}], buttons: [{label, action_id, value}], selects: [{action_id, placeholder, options: [{label, value}]}]}; a click or choice comes back as an interaction message"`
		Attachments    []envelope.SendAttachment `json:"attachments,omitempty" jsonschema:"files to send by URL (http or https)"`
		IdempotencyKey string                    `json:"idempotency_key,omitempty" jsonschema:"default reply:<delivery_id>, so that calling reply twice sends once"`
	}
	sendIn struct {
		AccountID      string                    `json:"account_id" jsonschema:"the account to send from: a message's account_id"`
		ConversationID string                    `json:"conversation_id" jsonschema:"the platform's conversation id: a message's conversation.id"`
		ThreadID       string                    `json:"thread_id,omitempty" jsonschema:"answer in this thread"`
		Text           string                    `json:"text,omitempty" jsonschema:"the message (text, rich_content or attachments required)"`
		RichContent    json.RawMessage           `json:"rich_content,omitempty" jsonschema:"optional card: {title, blocks: [{type: text, text}], buttons: [{label, action_id, value}], selects: [{action_id, placeholder, options: [{label, value}]}]}; a click or choice comes back as an interaction message"`
		Attachments    []envelope.SendAttachment `json:"attachments,omitempty" jsonschema:"files to send by URL (http or https)"`
		EditOf         string                    `json:"edit_of,omitempty" jsonschema:"an earlier outbound_id to edit instead of sending a new message"`
		IdempotencyKey string                    `json:"idempotency_key,omitempty" jsonschema:"the same key sends once however often it is used (default: a new key per call)"`
	}
	sentOut struct {
		OutboundID   uuid.UUID `json:"outbound_id" jsonschema:"get_send_status takes it; edit_of too"`
		HandoffState string    `json:"handoff_state" jsonschema:"queued when accepted; the platform gets it shortly"`
	}
	streamStartIn struct {
		Consumer       string `json:"consumer,omitempty" jsonschema:"with delivery_id: the consumer the delivery came from (default mcp)"`
		DeliveryID     string `json:"delivery_id,omitempty" jsonschema:"the delivery to answer (acknowledged when the stream starts); or give account_id and conversation_id"`
		AccountID      string `json:"account_id,omitempty" jsonschema:"without delivery_id: the account to send from"`
		ConversationID string `json:"conversation_id,omitempty" jsonschema:"without delivery_id: the platform's conversation id"`
		ThreadID       string `json:"thread_id,omitempty" jsonschema:"without delivery_id: answer in this thread"`
		Text           string `json:"text,omitempty" jsonschema:"the start of the answer, such as a placeholder (may be empty)"`
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"default stream:<delivery_id> with a delivery, else a new key per call"`
	}
	streamAppendIn struct {
		OutboundID string `json:"outbound_id" jsonschema:"from stream_start"`
		Seq        int    `json:"seq" jsonschema:"1 for the first append, then 2, 3…; call again with the same seq after a failure"`
		Text       string `json:"text" jsonschema:"the text to add"`
	}
	streamAppendOut struct {
		OutboundID uuid.UUID `json:"outbound_id"`
		Seq        int       `json:"seq" jsonschema:"the seq taken"`
	}
	streamFinishIn struct {
		OutboundID  string          `json:"outbound_id" jsonschema:"from stream_start"`
		Seq         int             `json:"seq,omitempty" jsonschema:"the seq of your last append (checked; 0 skips the check)"`
		Text        *string         `json:"text,omitempty" jsonschema:"the complete final text, replacing what was appended (default: keep it)"`
		RichContent json.RawMessage `json:"rich_content,omitempty" jsonschema:"optional card sent with the final text"`
	}
	streamFinishOut struct {
		OutboundID uuid.UUID `json:"outbound_id"`
		Finished   bool      `json:"finished"`
	}
	reactIn struct {
		AccountID      string `json:"account_id" jsonschema:"a message's account_id"`
		ConversationID string `json:"conversation_id" jsonschema:"a message's conversation.id"`
		MessageID      string `json:"message_id" jsonschema:"the platform's id of the message to react to: an inbound message's platform message id (a reaction's or interaction's message_id, an edit's edit_of.platform_message_id) or a send's provider_message_id"`
		Emoji          string `json:"emoji" jsonschema:"the emoji: the character itself (Telegram, Discord, WhatsApp) or the platform's name (Slack thumbsup)"`
		Remove         bool   `json:"remove,omitempty" jsonschema:"take the bot's reaction back instead of adding it"`
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the same key reacts once however often it is used (default: a new key per call)"`
	}
	idIn struct {
		ID string `json:"id" jsonschema:"the id (a UUID)"`
	}
	typingIn struct {
		AccountID      string `json:"account_id" jsonschema:"a message's account_id"`
		ConversationID string `json:"conversation_id" jsonschema:"a message's conversation.id"`
		ThreadID       string `json:"thread_id,omitempty" jsonschema:"a message's thread_id"`
	}
	typingOut struct {
		Status string `json:"status" jsonschema:"sent, unsupported (the platform shows none: harmless), throttled (one per conversation every few seconds) or failed"`
		Error  string `json:"error,omitempty"`
	}
	historyIn struct {
		AccountID      string `json:"account_id" jsonschema:"a message's account_id"`
		ConversationID string `json:"conversation_id" jsonschema:"a message's conversation.id"`
		Limit          *int   `json:"limit,omitempty" jsonschema:"at most this many messages, 1 to 100 (default 20)"`
		Before         string `json:"before,omitempty" jsonschema:"next_cursor of the previous call: older messages"`
	}
	historyOut struct {
		Items      []historyItemOut `json:"items" jsonschema:"oldest first"`
		NextCursor string           `json:"next_cursor,omitempty" jsonschema:"pass as before for the older messages; absent when there are none"`
	}
	historyItemOut struct {
		Direction string    `json:"direction" jsonschema:"inbound (from the platform's users) or outbound (sent by agents)"`
		ID        uuid.UUID `json:"id"`
		At        time.Time `json:"at"`
		Message   *Message  `json:"message,omitempty" jsonschema:"inbound: the message"`
		Outbound  *Outbound `json:"outbound,omitempty" jsonschema:"outbound: the message and its delivery state"`
	}
)

func ptr[T any](v T) *T { return &v }

// tool builds a tool with schemas inferred from In and Out; tune adjusts
// the input schema's properties (bounds).
func tool[In, Out any](name, title, desc string, ann mcp.ToolAnnotations, tune func(props map[string]*jsonschema.Schema)) *mcp.Tool {
	in := schemaFor[In]()
	if tune != nil {
		tune(in.Properties)
	}
	ann.Title = title
	return &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: &ann, InputSchema: in, OutputSchema: schemaFor[Out]()}
}

func bounds(min, max float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &min, &max }
}

// addTools registers every tool.
func (s *server) addTools(srv toolAdder) {
	idsBound := func(p map[string]*jsonschema.Schema) {
		p["delivery_ids"].MinItems, p["delivery_ids"].MaxItems = ptr(1), ptr(MaxSettleIDs)
	}
	addTool(srv, tool[pullIn, pullOut]("pull_messages", "Pull messages",
		"Lease new chat messages addressed to you, waiting up to wait for the first. Each delivery is yours until lease_expires_at: "+
			"answer it with reply, or settle it with ack_messages / release_messages. Not settled in time, it is delivered again "+
			"with a new delivery_id. Needs the consume role.",
		mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
		func(p map[string]*jsonschema.Schema) { bounds(1, MaxPullMax)(p["max_messages"]) }), s.pull)
	addTool(srv, tool[settleIn, settleOut]("ack_messages", "Acknowledge messages",
		"Mark deliveries done without answering: they are never delivered again. Use reply instead to answer and acknowledge "+
			"in one step. Needs the consume role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}, idsBound), s.settle(ActionAck))
	addTool(srv, tool[releaseIn, settleOut]("release_messages", "Release messages",
		"Give deliveries back without answering: they are delivered again after delay (to you or another agent), under new "+
			"delivery ids. Needs the consume role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}, idsBound), s.release)
	addTool(srv, tool[settleIn, settleOut]("extend_lease", "Extend leases",
		"Keep deliveries you are still working on: their leases are renewed for the consumer's ack_wait from now. "+
			"Needs the consume role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}, idsBound), s.settle(ActionExtend))
	addTool(srv, tool[replyIn, sentOut]("reply", "Reply to a delivery",
		"Answer a delivered message in its conversation (and thread) and acknowledge the delivery, in one transaction: both "+
			"happen or neither. Calling it again for the same delivery sends once. If the lease was lost (expired, settled or "+
			"redelivered) nothing is sent: pull again and answer the new delivery. Needs the consume and produce roles.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}, nil), s.reply)
	addTool(srv, tool[sendIn, sentOut]("send_message", "Send a message",
		"Send a message to a conversation of an account, not as an answer to a delivery (use reply for that), or edit an "+
			"earlier one with edit_of. Queued at once, handed to the platform in order. Needs the produce role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, nil), s.send)
	addTool(srv, tool[streamStartIn, sentOut]("stream_start", "Start a streamed answer",
		"Start an answer whose text grows while you write it: the platform shows one message and edits it to the newest "+
			"text. Answer a delivery (delivery_id; acknowledged now) or send to account_id and conversation_id. Then call "+
			"stream_append with each piece and stream_finish at the end; later messages of the conversation wait for the "+
			"finish. Needs the produce role (and consume with delivery_id).",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}, nil), s.streamStart)
	addTool(srv, tool[streamAppendIn, streamAppendOut]("stream_append", "Append to a streamed answer",
		"Add text to a streamed answer. seq counts your appends from 1; calling again with a seq already taken changes "+
			"nothing, so retry a failed call with the same seq. Needs the produce role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
		func(p map[string]*jsonschema.Schema) { p["seq"].Minimum = ptr(1.0) }), s.streamAppend)
	addTool(srv, tool[streamFinishIn, streamFinishOut]("stream_finish", "Finish a streamed answer",
		"End a streamed answer: the platform shows the complete text (text, when given, replaces what was appended). "+
			"Not finished within the server's stream timeout, it is finished with the text so far. Needs the produce role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}, nil), s.streamFinish)
	addTool(srv, tool[reactIn, sentOut]("react", "React to a message",
		"Add an emoji reaction to a message of a conversation, or take it back with remove. Queued like a message, in "+
			"order after what was sent before it to the conversation; get_send_status takes its outbound_id. A channel that "+
			"cannot react (Google Chat, Zoho Cliq, webhook) answers capability_missing. Needs the produce role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, nil), s.react)
	addTool(srv, tool[idIn, Outbound]("get_send_status", "Get send status",
		"Where a sent message or reply is: handoff_state queued, sending, handed_off (the platform took it) or dead "+
			"(see last_error), and provider_state (delivered, read on channels that report it). Needs the read or produce role.",
		mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}, nil), s.sendStatus)
	addTool(srv, tool[typingIn, typingOut]("show_typing", "Show typing",
		"Show the bot as typing in a conversation while you work on an answer (best effort; a few seconds on the platform; "+
			"unsupported channels answer unsupported). Needs the produce role.",
		mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}, nil), s.typing)
	addTool(srv, tool[idIn, Message]("get_message", "Get a message",
		"One inbound message by its id (message.id, or an edit's edit_of.id). Needs the read or consume role.",
		mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}, nil), s.message)
	addTool(srv, tool[historyIn, historyOut]("conversation_history", "Conversation history",
		"The earlier messages of a conversation, both what users wrote (inbound) and what was sent to them (outbound), "+
			"oldest first, the newest page first; pass next_cursor as before for older ones. Needs the read role.",
		mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		func(p map[string]*jsonschema.Schema) { bounds(1, MaxHistorySize)(p["limit"]) }), s.history)
}

// ToolNames are the tools New registers, in order.
var ToolNames = []string{"pull_messages", "ack_messages", "release_messages", "extend_lease", "reply", "send_message",
	"stream_start", "stream_append", "stream_finish", "react", "get_send_status", "show_typing", "get_message", "conversation_history"}

func (s *server) open(ctx context.Context, req *mcp.CallToolRequest) (Backend, error) {
	return s.backend(ctx, req.Extra)
}

// parseID reads a UUID argument; the error names the field.
func parseID(field, v string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil || id == uuid.Nil {
		return uuid.Nil, Errorf(CodeBadRequest, "%s: want a UUID such as 0193c1a0-7b7e-7cc0-9f50-1c1f2b3a4d5e, got %q", field, v)
	}
	return id, nil
}

// parseDuration reads a duration argument within [0, max]; "" is def.
func parseDuration(field, v string, def, max time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > max {
		return 0, Errorf(CodeBadRequest, "%s: want a duration from 0s to %s such as 20s, got %q", field, max, v)
	}
	return d, nil
}

func consumerName(v string) string {
	if v == "" {
		return DefaultConsumer
	}
	return v
}

// ackWait is the consumer's ack_wait, creating the consumer (create true)
// when it does not exist.
func ackWait(ctx context.Context, b Backend, consumer string, create bool) (time.Duration, error) {
	d, err := b.ConsumerAckWait(ctx, consumer)
	if create && hasCode(err, CodeNotFound) {
		return b.CreateConsumer(ctx, consumer)
	}
	if hasCode(err, CodeNotFound) {
		return 0, Errorf(CodeNotFound, "no consumer %q: pull_messages creates it", consumer)
	}
	return d, err
}

func (s *server) pull(ctx context.Context, req *mcp.CallToolRequest, in pullIn) (*mcp.CallToolResult, pullOut, error) {
	max := DefaultPullMax
	if in.MaxMessages != nil {
		max = *in.MaxMessages
	}
	if max < 1 || max > MaxPullMax {
		return nil, pullOut{}, Errorf(CodeBadRequest, "max_messages: want 1 to %d, got %d", MaxPullMax, max)
	}
	wait, err := parseDuration("wait", in.Wait, DefaultPullWait, MaxPullWait)
	if err != nil {
		return nil, pullOut{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, pullOut{}, s.fail(ctx, "pull_messages", err)
	}
	consumer := consumerName(in.Consumer)
	ackWait, err := ackWait(ctx, b, consumer, true)
	if err != nil {
		return nil, pullOut{}, s.fail(ctx, "pull_messages", err)
	}
	// A lease runs ack_wait from when it was taken, which is after this:
	// lease_expires_at errs on the early side.
	start := time.Now()
	ds, err := b.Pull(ctx, consumer, max, wait)
	if err != nil {
		return nil, pullOut{}, s.fail(ctx, "pull_messages", err)
	}
	out := pullOut{Deliveries: make([]deliveryOut, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = deliveryOut{DeliveryID: d.DeliveryID.String(), DeliveryCount: d.DeliveryCount,
			LeaseExpiresAt: start.Add(ackWait).UTC(), Traceparent: d.Traceparent, Message: messageOf(d.Message)}
	}
	return nil, out, nil
}

func parseIDs(v []string) ([]uuid.UUID, error) {
	if len(v) == 0 || len(v) > MaxSettleIDs {
		return nil, Errorf(CodeBadRequest, "delivery_ids: want 1 to %d ids, got %d", MaxSettleIDs, len(v))
	}
	ids := make([]uuid.UUID, len(v))
	for i, s := range v {
		var err error
		if ids[i], err = parseID(fmt.Sprintf("delivery_ids[%d]", i), s); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (s *server) settle(action Action) mcp.ToolHandlerFor[settleIn, settleOut] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in settleIn) (*mcp.CallToolResult, settleOut, error) {
		return s.settleIDs(ctx, req, action, in.Consumer, in.DeliveryIDs, 0)
	}
}

func (s *server) release(ctx context.Context, req *mcp.CallToolRequest, in releaseIn) (*mcp.CallToolResult, settleOut, error) {
	delay, err := parseDuration("delay", in.Delay, 0, MaxReleaseDelay)
	if err != nil {
		return nil, settleOut{}, err
	}
	return s.settleIDs(ctx, req, ActionNak, in.Consumer, in.DeliveryIDs, delay)
}

func (s *server) settleIDs(ctx context.Context, req *mcp.CallToolRequest, action Action, consumer string, raw []string, delay time.Duration) (*mcp.CallToolResult, settleOut, error) {
	name := map[Action]string{ActionAck: "ack_messages", ActionNak: "release_messages", ActionExtend: "extend_lease"}[action]
	ids, err := parseIDs(raw)
	if err != nil {
		return nil, settleOut{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, settleOut{}, s.fail(ctx, name, err)
	}
	consumer = consumerName(consumer)
	var wait time.Duration
	if action == ActionExtend {
		if wait, err = ackWait(ctx, b, consumer, false); err != nil {
			return nil, settleOut{}, s.fail(ctx, name, err)
		}
	}
	start := time.Now()
	res, err := b.Settle(ctx, consumer, action, ids, delay)
	if err != nil {
		return nil, settleOut{}, s.fail(ctx, name, err)
	}
	out := settleOut{Results: res}
	if action == ActionExtend {
		out.LeaseExpiresAt = ptr(start.Add(wait).UTC())
	}
	return nil, out, nil
}

func (s *server) reply(ctx context.Context, req *mcp.CallToolRequest, in replyIn) (*mcp.CallToolResult, sentOut, error) {
	id, err := parseID("delivery_id", in.DeliveryID)
	if err != nil {
		return nil, sentOut{}, err
	}
	key := in.IdempotencyKey
	if key == "" {
		key = "reply:" + id.String()
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "reply", err)
	}
	ctx = metaTrace(ctx, req)
	sent, err := b.Reply(ctx, consumerName(in.Consumer), id, envelope.SendCommand{IdempotencyKey: key, Text: in.Text,
		RichContent: in.RichContent, Attachments: in.Attachments})
	if hasCode(err, CodeLeaseLost) {
		return nil, sentOut{}, Errorf(CodeLeaseLost, "reply: delivery %s is no longer leased to you (its lease expired, it was "+
			"settled, or it was delivered again under another id); nothing was sent. Call pull_messages and answer the new delivery.", id)
	}
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "reply", err)
	}
	return nil, sentOut{OutboundID: sent.ID, HandoffState: sent.HandoffState}, nil
}

func (s *server) send(ctx context.Context, req *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, sentOut, error) {
	account, err := parseID("account_id", in.AccountID)
	if err != nil {
		return nil, sentOut{}, err
	}
	if in.ConversationID == "" {
		return nil, sentOut{}, Errorf(CodeBadRequest, "conversation_id: required (a message's conversation.id)")
	}
	cmd := envelope.SendCommand{IdempotencyKey: in.IdempotencyKey, AccountID: account, ConversationID: in.ConversationID,
		ThreadID: in.ThreadID, Text: in.Text, RichContent: in.RichContent, Attachments: in.Attachments}
	if in.EditOf != "" {
		editOf, err := parseID("edit_of", in.EditOf)
		if err != nil {
			return nil, sentOut{}, err
		}
		cmd.EditOf = &editOf
	}
	if cmd.IdempotencyKey == "" {
		cmd.IdempotencyKey = "mcp:" + uuid.NewString()
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "send_message", err)
	}
	ctx = metaTrace(ctx, req)
	sent, err := b.Send(ctx, cmd)
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "send_message", err)
	}
	return nil, sentOut{OutboundID: sent.ID, HandoffState: sent.HandoffState}, nil
}

func (s *server) react(ctx context.Context, req *mcp.CallToolRequest, in reactIn) (*mcp.CallToolResult, sentOut, error) {
	account, err := parseID("account_id", in.AccountID)
	if err != nil {
		return nil, sentOut{}, err
	}
	switch {
	case in.ConversationID == "":
		return nil, sentOut{}, Errorf(CodeBadRequest, "conversation_id: required (a message's conversation.id)")
	case in.MessageID == "":
		return nil, sentOut{}, Errorf(CodeBadRequest, "message_id: required (the platform's id of the message)")
	case in.Emoji == "":
		return nil, sentOut{}, Errorf(CodeBadRequest, "emoji: required")
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "react", err)
	}
	key := in.IdempotencyKey
	if key == "" {
		key = "mcp:" + uuid.NewString()
	}
	sent, err := b.React(ctx, envelope.ReactionCommand{IdempotencyKey: key, AccountID: account,
		ConversationID: in.ConversationID, MessageID: in.MessageID, Emoji: in.Emoji, Remove: in.Remove})
	if err != nil {
		return nil, sentOut{}, s.fail(ctx, "react", err)
	}
	return nil, sentOut{OutboundID: sent.ID, HandoffState: sent.HandoffState}, nil
}

func (s *server) sendStatus(ctx context.Context, req *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, Outbound, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, Outbound{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, Outbound{}, s.fail(ctx, "get_send_status", err)
	}
	o, err := b.SendStatus(ctx, id)
	if err != nil {
		return nil, Outbound{}, s.fail(ctx, "get_send_status", err)
	}
	return nil, *o, nil
}

func (s *server) typing(ctx context.Context, req *mcp.CallToolRequest, in typingIn) (*mcp.CallToolResult, typingOut, error) {
	account, err := parseID("account_id", in.AccountID)
	if err != nil {
		return nil, typingOut{}, err
	}
	if in.ConversationID == "" {
		return nil, typingOut{}, Errorf(CodeBadRequest, "conversation_id: required (a message's conversation.id)")
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, typingOut{}, s.fail(ctx, "show_typing", err)
	}
	status, detail, err := b.Typing(ctx, account, in.ConversationID, in.ThreadID)
	if err != nil {
		return nil, typingOut{}, s.fail(ctx, "show_typing", err)
	}
	return nil, typingOut{Status: status, Error: detail}, nil
}

func (s *server) message(ctx context.Context, req *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, Message, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, Message{}, err
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, Message{}, s.fail(ctx, "get_message", err)
	}
	m, err := b.Message(ctx, id)
	if err != nil {
		return nil, Message{}, s.fail(ctx, "get_message", err)
	}
	return nil, messageOf(m), nil
}

func (s *server) history(ctx context.Context, req *mcp.CallToolRequest, in historyIn) (*mcp.CallToolResult, historyOut, error) {
	account, err := parseID("account_id", in.AccountID)
	if err != nil {
		return nil, historyOut{}, err
	}
	if in.ConversationID == "" {
		return nil, historyOut{}, Errorf(CodeBadRequest, "conversation_id: required (a message's conversation.id)")
	}
	limit := DefaultHistorySize
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > MaxHistorySize {
		return nil, historyOut{}, Errorf(CodeBadRequest, "limit: want 1 to %d, got %d", MaxHistorySize, limit)
	}
	b, err := s.open(ctx, req)
	if err != nil {
		return nil, historyOut{}, s.fail(ctx, "conversation_history", err)
	}
	page, err := b.History(ctx, HistoryQuery{AccountID: account, ConversationID: in.ConversationID, Limit: limit, Before: in.Before})
	if err != nil {
		return nil, historyOut{}, s.fail(ctx, "conversation_history", err)
	}
	out := historyOut{Items: make([]historyItemOut, len(page.Items)), NextCursor: page.NextCursor}
	for i, it := range page.Items {
		h := historyItemOut{At: it.At}
		if it.Outbound != nil {
			h.Direction, h.ID, h.Outbound = "outbound", it.Outbound.ID, it.Outbound
		} else {
			m := messageOf(it.Message)
			h.Direction, h.ID, h.Message = "inbound", m.ID, &m
		}
		out.Items[i] = h
	}
	return nil, out, nil
}
