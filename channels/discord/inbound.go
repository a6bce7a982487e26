package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Request headers Discord signs interactions with.
const (
	HeaderSignature = "X-Signature-Ed25519"
	HeaderTimestamp = "X-Signature-Timestamp"
)

// Interaction types (Discord "Interaction Type").
const (
	typePing               = 1
	typeApplicationCommand = 2
	typeMessageComponent   = 3
	typeAutocomplete       = 4
	typeModalSubmit        = 5
)

// Application command option types that matter when flattening options.
const (
	optionSubCommand      = 1
	optionSubCommandGroup = 2
	optionAttachment      = 11
)

// Component types that matter when reading modal submissions.
const componentFileUpload = 19

// Channel types that matter for the conversation type.
const channelGroupDM = 3

// discordEpochMS is the first millisecond of 2015, Discord's snowflake epoch.
const discordEpochMS = 1420070400000

// Interaction responses. Stored interactions are deferred: the HTTP layer
// sends the reply after commit and the agent answers with a follow-up.
var (
	replyPong             = []byte(`{"type":1}`)
	replyDeferredMessage  = []byte(`{"type":5}`)
	replyDeferredUpdate   = []byte(`{"type":6}`)
	replyAutocompleteNone = []byte(`{"type":8,"data":{"choices":[]}}`)
)

type inbound struct {
	cfg  Config
	opts Options
}

var _ channels.Inbound = (*inbound)(nil)

// Verify checks the Ed25519 signature over X-Signature-Timestamp + body and
// rejects timestamps outside the tolerance. Discord deliberately sends
// invalid signatures to check that they are refused.
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("discord: no request")
	}
	if in.cfg.PublicKey == nil {
		return channels.Unauthorizedf("discord: the account has no application public key (Gateway only): interactions are refused")
	}
	sigHex := req.Header.Get(HeaderSignature)
	ts := req.Header.Get(HeaderTimestamp)
	if sigHex == "" || ts == "" {
		return channels.Unauthorizedf("discord: missing %s or %s header", HeaderSignature, HeaderTimestamp)
	}
	if len(sigHex) != 2*ed25519.SignatureSize {
		return channels.Unauthorizedf("discord: malformed signature")
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return channels.Unauthorizedf("discord: malformed signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return channels.Unauthorizedf("discord: malformed timestamp")
	}
	signed := make([]byte, 0, len(ts)+len(req.Body))
	signed = append(signed, ts...)
	signed = append(signed, req.Body...)
	if !ed25519.Verify(in.cfg.PublicKey, signed, sig) {
		return channels.Unauthorizedf("discord: invalid signature")
	}
	now := req.Now
	if now.IsZero() {
		now = in.opts.Now()
	}
	if skew := now.Sub(time.Unix(sec, 0)); skew > in.opts.TimestampTolerance || skew < -in.opts.TimestampTolerance {
		return channels.Unauthorizedf("discord: stale timestamp")
	}
	return nil
}

type interaction struct {
	ID        string           `json:"id"`
	Type      *int             `json:"type"`
	Data      *interactionData `json:"data"`
	GuildID   string           `json:"guild_id"`
	ChannelID string           `json:"channel_id"`
	Channel   *channel         `json:"channel"`
	Member    *member          `json:"member"`
	User      *user            `json:"user"`
	Message   *messageRef      `json:"message"`
}

type interactionData struct {
	// Application commands.
	Name     string    `json:"name"`
	Type     int       `json:"type"`
	TargetID string    `json:"target_id"`
	Options  []option  `json:"options"`
	Resolved *resolved `json:"resolved"`
	// Message components and modal submissions.
	CustomID   string      `json:"custom_id"`
	Values     []string    `json:"values"`
	Components []component `json:"components"`
}

type option struct {
	Name    string          `json:"name"`
	Type    int             `json:"type"`
	Value   json.RawMessage `json:"value"`
	Options []option        `json:"options"`
}

type component struct {
	Type       int             `json:"type"`
	CustomID   string          `json:"custom_id"`
	Value      json.RawMessage `json:"value"`
	Values     []string        `json:"values"`
	Components []component     `json:"components"`
	// Component is the single child of a label component.
	Component *component `json:"component"`
}

type resolved struct {
	Attachments map[string]attachment `json:"attachments"`
}

type attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
	ProxyURL    string `json:"proxy_url"`
}

type channel struct {
	ID   string `json:"id"`
	Type int    `json:"type"`
	Name string `json:"name"`
}

type member struct {
	User *user `json:"user"`
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
	Bot        bool   `json:"bot"`
}

type messageRef struct {
	ID string `json:"id"`
}

// Parse turns a verified interaction into at most one message and the
// interaction response the HTTP layer answers with.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("discord: no request")
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	var it interaction
	if err := json.Unmarshal(req.Body, &it); err != nil {
		return nil, channels.BadRequestf("discord: malformed interaction JSON: %v", err)
	}
	if it.Type == nil {
		return nil, channels.BadRequestf("discord: interaction has no type")
	}
	switch *it.Type {
	case typePing:
		return &channels.Parsed{Reply: jsonReply(replyPong)}, nil
	case typeAutocomplete:
		return &channels.Parsed{Reply: jsonReply(replyAutocompleteNone)}, nil
	case typeApplicationCommand, typeModalSubmit:
		return in.parseStored(&it, req.Body, replyDeferredMessage)
	case typeMessageComponent:
		return in.parseStored(&it, req.Body, replyDeferredUpdate)
	default:
		return nil, channels.BadRequestf("discord: unknown interaction type %d", *it.Type)
	}
}

func (in *inbound) parseStored(it *interaction, body []byte, reply []byte) (*channels.Parsed, error) {
	if it.ID == "" {
		return nil, channels.BadRequestf("discord: interaction has no id")
	}
	sentAt, ok := snowflakeTime(it.ID)
	if !ok {
		return nil, channels.BadRequestf("discord: interaction id %q is not a snowflake", it.ID)
	}
	if it.Data == nil {
		return nil, channels.BadRequestf("discord: interaction has no data")
	}
	conv, err := conversation(it)
	if err != nil {
		return nil, err
	}
	u := it.User
	if it.Member != nil && it.Member.User != nil {
		u = it.Member.User
	}
	if u == nil || u.ID == "" {
		return nil, channels.BadRequestf("discord: interaction has no member.user or user")
	}
	display := u.GlobalName
	if display == "" {
		display = u.Username
	}

	msg := envelope.Message{
		ChannelType:     envelope.ChannelDiscord,
		SourceMessageID: it.ID,
		Conversation:    conv,
		Sender:          envelope.Sender{ID: u.ID, DisplayName: display, IsBot: u.Bot},
		SentAt:          sentAt,
		Raw:             json.RawMessage(bytes.Clone(body)),
	}
	if it.Message != nil {
		// A component or modal answers the message it was attached to.
		msg.ReplyToSourceID = it.Message.ID
	}

	var attIDs []string
	switch *it.Type {
	case typeApplicationCommand:
		if it.Data.Name == "" {
			return nil, channels.BadRequestf("discord: application command has no name")
		}
		msg.Text, attIDs = commandText(it.Data)
		if it.Data.TargetID != "" && it.Data.Type == 3 {
			// A message context-menu command targets a message.
			msg.ReplyToSourceID = it.Data.TargetID
		}
	case typeMessageComponent:
		if it.Data.CustomID == "" {
			return nil, channels.BadRequestf("discord: component interaction has no custom_id")
		}
		msg.Text = it.Data.CustomID
		if it.Data.Values != nil {
			msg.Text += "=" + strings.Join(it.Data.Values, ",")
		}
		// A click on a button (or a choice in a select) MIO rendered: its
		// custom_id is the action id and value (RichButton.CallbackData).
		action, value := envelope.SplitCallbackData(it.Data.CustomID)
		if value == "" && len(it.Data.Values) == 1 {
			// A select's custom_id is its action id; the choice is the value.
			value = it.Data.Values[0]
		}
		msg.Kind = envelope.KindInteraction
		msg.Interaction = &envelope.Interaction{ActionID: action, Value: value, Values: it.Data.Values, MessageID: msg.ReplyToSourceID}
	case typeModalSubmit:
		if it.Data.CustomID == "" {
			return nil, channels.BadRequestf("discord: modal submission has no custom_id")
		}
		parts := []string{it.Data.CustomID}
		parts, attIDs = appendComponents(parts, attIDs, it.Data.Components)
		msg.Text = strings.Join(parts, " ")
	}
	msg.Attachments = resolveAttachments(it.Data.Resolved, attIDs)
	return &channels.Parsed{Messages: []envelope.Message{msg}, Reply: jsonReply(reply)}, nil
}

func conversation(it *interaction) (envelope.Conversation, error) {
	id := it.ChannelID
	if id == "" && it.Channel != nil {
		id = it.Channel.ID
	}
	if id == "" {
		return envelope.Conversation{}, channels.BadRequestf("discord: interaction has no channel_id")
	}
	conv := envelope.Conversation{ID: id, Type: envelope.ConversationDM}
	switch {
	case it.GuildID != "":
		conv.Type = envelope.ConversationChannel
	case it.Channel != nil && it.Channel.Type == channelGroupDM:
		conv.Type = envelope.ConversationGroup
	}
	if it.Channel != nil {
		conv.Title = it.Channel.Name
	}
	return conv, nil
}

// commandText renders an application command as "/name sub opt=value ..."
// and returns the ids of attachment options in order.
func commandText(d *interactionData) (string, []string) {
	parts := []string{"/" + d.Name}
	var attIDs []string
	parts, attIDs = appendOptions(parts, attIDs, d.Options, d.Resolved)
	if d.TargetID != "" {
		parts = append(parts, "target="+d.TargetID)
	}
	return strings.Join(parts, " "), attIDs
}

func appendOptions(parts, attIDs []string, opts []option, res *resolved) ([]string, []string) {
	for _, o := range opts {
		if o.Type == optionSubCommand || o.Type == optionSubCommandGroup || len(o.Options) > 0 {
			parts = append(parts, o.Name)
			parts, attIDs = appendOptions(parts, attIDs, o.Options, res)
			continue
		}
		v := scalarText(o.Value)
		if o.Type == optionAttachment && v != "" {
			attIDs = append(attIDs, v)
			if res != nil {
				if a, ok := res.Attachments[v]; ok && a.Filename != "" {
					v = a.Filename
				}
			}
		}
		parts = append(parts, o.Name+"="+v)
	}
	return parts, attIDs
}

// appendComponents renders submitted modal fields as "custom_id=value" and
// returns the attachment ids of file-upload fields.
func appendComponents(parts, attIDs []string, comps []component) ([]string, []string) {
	for _, c := range comps {
		switch {
		case c.CustomID != "" && c.Value != nil:
			parts = append(parts, c.CustomID+"="+scalarText(c.Value))
		case c.CustomID != "" && c.Values != nil:
			parts = append(parts, c.CustomID+"="+strings.Join(c.Values, ","))
			if c.Type == componentFileUpload {
				attIDs = append(attIDs, c.Values...)
			}
		}
		parts, attIDs = appendComponents(parts, attIDs, c.Components)
		if c.Component != nil {
			parts, attIDs = appendComponents(parts, attIDs, []component{*c.Component})
		}
	}
	return parts, attIDs
}

// scalarText renders a JSON option value: strings unquoted, numbers and
// booleans as written.
func scalarText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s
		}
	}
	return string(raw)
}

func resolveAttachments(res *resolved, ids []string) []envelope.Attachment {
	if res == nil || len(ids) == 0 {
		return nil
	}
	var out []envelope.Attachment
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		a, ok := res.Attachments[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if att, ok := a.envelope(); ok {
			out = append(out, att)
		}
	}
	return out
}

// envelope is the attachment as MIO stores it, pending its fetch; false
// when it has no URL.
func (a attachment) envelope() (envelope.Attachment, bool) {
	url := a.URL
	if url == "" {
		url = a.ProxyURL
	}
	if url == "" {
		return envelope.Attachment{}, false
	}
	return envelope.Attachment{
		Kind:     channels.AttachmentKind(a.ContentType),
		Name:     a.Filename,
		MimeType: a.ContentType,
		Size:     max(a.Size, 0),
		Status:   envelope.AttachmentPending,
		Source:   &envelope.AttachmentSource{URL: url},
	}, true
}

// parseSnowflake parses a Discord snowflake id.
func parseSnowflake(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// snowflakeTime returns the creation time encoded in a snowflake id.
func snowflakeTime(id string) (time.Time, bool) {
	n, ok := parseSnowflake(id)
	if !ok {
		return time.Time{}, false
	}
	ms := int64(n>>22) + discordEpochMS
	return time.UnixMilli(ms).UTC(), true
}

// SnowflakeAt returns the smallest snowflake id Discord gives at time t:
// every message created at t or later has an id that is not smaller (ids
// compare by length, then text).
func SnowflakeAt(t time.Time) string {
	ms := max(t.UnixMilli()-discordEpochMS, 0)
	return strconv.FormatUint(uint64(ms)<<22, 10)
}

func jsonReply(body []byte) *channels.Reply {
	return &channels.Reply{Status: http.StatusOK, ContentType: "application/json", Body: bytes.Clone(body)}
}
