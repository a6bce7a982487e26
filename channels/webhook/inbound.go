package webhook

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Standard Webhooks request headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SignatureTolerance is how far webhook-timestamp may be from now, either
// way.
const SignatureTolerance = 5 * time.Minute

// Event types MIO accepts.
const (
	EventMessageCreated = "message.created"
	EventMessageUpdated = "message.updated"
	EventMessageDeleted = "message.deleted"
)

// maxIDLength bounds webhook-id, MIO's dedup key for this channel.
const maxIDLength = 255

// inbound handles one webhook account's requests.
type inbound struct {
	keys [][]byte // current secret first, then previous ones
}

// Verify checks webhook-signature against every configured secret and
// rejects requests whose webhook-timestamp is more than SignatureTolerance
// away from req.Now (time.Now when zero). Signatures of versions other
// than v1 are skipped.
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("webhook: no request")
	}
	id := req.Header.Get(HeaderID)
	tsHeader := req.Header.Get(HeaderTimestamp)
	sigHeader := req.Header.Get(HeaderSignature)
	if id == "" || tsHeader == "" || sigHeader == "" {
		return channels.Unauthorizedf("webhook: missing %s, %s or %s header", HeaderID, HeaderTimestamp, HeaderSignature)
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return channels.Unauthorizedf("webhook: malformed %s header", HeaderTimestamp)
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	if d := now.Sub(time.Unix(ts, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return channels.Unauthorizedf("webhook: timestamp outside the %s tolerance", SignatureTolerance)
	}
	want := make([][]byte, len(in.keys))
	for i, key := range in.keys {
		want[i] = mac(key, id, tsHeader, req.Body)
	}
	sawV1 := false
	for _, sig := range strings.Fields(sigHeader) {
		version, b64, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		sawV1 = true
		got, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil {
			continue
		}
		for _, w := range want {
			if hmac.Equal(got, w) {
				return nil
			}
		}
	}
	if !sawV1 {
		return channels.Unauthorizedf("webhook: no v1 signature")
	}
	return channels.Unauthorizedf("webhook: no matching signature")
}

// payload is the Standard Webhooks body MIO accepts (docs/contract.md §3).
type payload struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	Data      *messageData `json:"data"`
}

type messageData struct {
	MessageID    string        `json:"message_id"`
	Conversation *conversation `json:"conversation"`
	ThreadID     string        `json:"thread_id"`
	Sender       *sender       `json:"sender"`
	Text         string        `json:"text"`
	Attachments  []attachment  `json:"attachments"`
	SentAt       string        `json:"sent_at"`
}

type conversation struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
}

type sender struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	IsBot       bool   `json:"is_bot"`
}

type attachment struct {
	URL      string `json:"url"`
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size"`
	Kind     string `json:"kind"`
}

// Parse turns a message.created, message.updated or message.deleted
// delivery into one envelope whose SourceMessageID is webhook-id.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("webhook: no request")
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	id := req.Header.Get(HeaderID)
	if id == "" {
		return nil, channels.BadRequestf("webhook: missing %s header", HeaderID)
	}
	if len(id) > maxIDLength {
		return nil, channels.BadRequestf("webhook: %s longer than %d bytes", HeaderID, maxIDLength)
	}
	if !utf8.Valid(req.Body) || !utf8.ValidString(id) {
		return nil, channels.BadRequestf("webhook: body or %s is not valid UTF-8", HeaderID)
	}
	var p payload
	if err := channels.UnmarshalJSON(req.Body, &p); err != nil {
		return nil, channels.BadRequestf("webhook: malformed JSON body: %v", err)
	}
	msg := envelope.Message{ChannelType: envelope.ChannelWebhook, SourceMessageID: id, Raw: json.RawMessage(req.Body)}
	switch p.Type {
	case EventMessageCreated:
	case EventMessageUpdated:
		msg.Edited = true
	case EventMessageDeleted:
		msg.Deleted = true
	case "":
		return nil, channels.BadRequestf("webhook: missing type")
	default:
		return nil, channels.BadRequestf("webhook: unknown type %q (want %s, %s or %s)", p.Type, EventMessageCreated, EventMessageUpdated, EventMessageDeleted)
	}
	if p.Timestamp == "" {
		return nil, channels.BadRequestf("webhook: missing timestamp")
	}
	eventTime, err := time.Parse(time.RFC3339Nano, p.Timestamp)
	if err != nil {
		return nil, channels.BadRequestf("webhook: timestamp %q is not RFC 3339", p.Timestamp)
	}
	d := p.Data
	switch {
	case d == nil:
		return nil, channels.BadRequestf("webhook: missing data")
	case d.Conversation == nil || d.Conversation.ID == "":
		return nil, channels.BadRequestf("webhook: missing data.conversation.id")
	case d.Sender == nil || d.Sender.ID == "":
		return nil, channels.BadRequestf("webhook: missing data.sender.id")
	}
	convType, err := conversationType(d.Conversation.Type)
	if err != nil {
		return nil, err
	}
	msg.Conversation = envelope.Conversation{ID: d.Conversation.ID, Type: convType, Title: d.Conversation.Title}
	msg.ThreadID = d.ThreadID
	msg.Sender = envelope.Sender{ID: d.Sender.ID, DisplayName: d.Sender.DisplayName, IsBot: d.Sender.IsBot}
	msg.Text = d.Text
	// data.message_id is the sender's id of the message: an update or
	// delete names the message it changes with it.
	if msg.Edited || msg.Deleted {
		msg.EditOf = envelope.NewEditRef(d.MessageID)
	} else {
		msg.PlatformMessageID = d.MessageID
	}
	msg.SentAt = eventTime.UTC()
	if d.SentAt != "" {
		sentAt, err := time.Parse(time.RFC3339Nano, d.SentAt)
		if err != nil {
			return nil, channels.BadRequestf("webhook: data.sent_at %q is not RFC 3339", d.SentAt)
		}
		msg.SentAt = sentAt.UTC()
	}
	if msg.Attachments, err = attachments(d.Attachments); err != nil {
		return nil, err
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

// conversationType validates data.conversation.type; it defaults to dm.
func conversationType(t string) (string, error) {
	switch t {
	case "":
		return envelope.ConversationDM, nil
	case envelope.ConversationDM, envelope.ConversationGroup, envelope.ConversationChannel:
		return t, nil
	}
	return "", channels.BadRequestf("webhook: data.conversation.type %q (want dm, group or channel)", t)
}

// attachments validates data.attachments and maps them to pending
// attachments. Kind defaults to one derived from mime_type.
func attachments(in []attachment) ([]envelope.Attachment, error) {
	out := make([]envelope.Attachment, 0, len(in))
	for i, a := range in {
		if a.URL == "" {
			return nil, channels.BadRequestf("webhook: data.attachments[%d].url is required", i)
		}
		if !channels.IsHTTPURL(a.URL) {
			return nil, channels.BadRequestf("webhook: data.attachments[%d].url must be an absolute http(s) URL", i)
		}
		if a.Size < 0 {
			return nil, channels.BadRequestf("webhook: data.attachments[%d].size is negative", i)
		}
		kind := a.Kind
		switch kind {
		case "":
			kind = channels.AttachmentKind(a.MimeType)
		case envelope.KindImage, envelope.KindFile, envelope.KindAudio, envelope.KindVideo, envelope.KindSticker:
		default:
			return nil, channels.BadRequestf("webhook: data.attachments[%d].kind %q (want image, file, audio, video or sticker)", i, kind)
		}
		out = append(out, envelope.Attachment{
			Kind:     kind,
			Name:     a.Name,
			MimeType: a.MimeType,
			Size:     a.Size,
			Status:   envelope.AttachmentPending,
			Source:   &envelope.AttachmentSource{URL: a.URL},
		})
	}
	return out, nil
}
