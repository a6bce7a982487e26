package whatsapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
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

// SignatureHeader carries the HMAC-SHA256 of every POSTed notification.
const SignatureHeader = "X-Hub-Signature-256"

// maxChallengeLen bounds the hub.challenge echoed back (Meta sends a short
// integer).
const maxChallengeLen = 1024

// inbound handles the webhooks of one WhatsApp business phone number.
type inbound struct {
	cfg Config
}

var _ channels.Inbound = (*inbound)(nil)

// Verify authenticates a GET handshake by its hub.verify_token and any other
// request by its X-Hub-Signature-256 over the raw body. Both compare in
// constant time. Meta signs no timestamp, so there is no staleness check;
// redeliveries are caught by wamid deduplication.
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("whatsapp: no request")
	}
	if req.Method == http.MethodGet {
		return in.verifyHandshake(req)
	}
	return in.verifySignature(req)
}

func (in *inbound) verifyHandshake(req *channels.Request) error {
	if mode := req.Query.Get("hub.mode"); mode != "subscribe" {
		return channels.Unauthorizedf("whatsapp: hub.mode %q, want subscribe", mode)
	}
	token := req.Query.Get("hub.verify_token")
	if token == "" {
		return channels.Unauthorizedf("whatsapp: missing hub.verify_token")
	}
	if in.cfg.VerifyToken == "" {
		return channels.Unauthorizedf("whatsapp: no verify_token configured for this account")
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(in.cfg.VerifyToken)) != 1 {
		return channels.Unauthorizedf("whatsapp: hub.verify_token does not match")
	}
	return nil
}

func (in *inbound) verifySignature(req *channels.Request) error {
	sig := req.Header.Get(SignatureHeader)
	if sig == "" {
		return channels.Unauthorizedf("whatsapp: missing %s header", SignatureHeader)
	}
	const prefix = "sha256="
	if len(sig) < len(prefix) || !strings.EqualFold(sig[:len(prefix)], prefix) {
		return channels.Unauthorizedf("whatsapp: %s must start with %s", SignatureHeader, prefix)
	}
	got, err := hex.DecodeString(sig[len(prefix):])
	if err != nil || len(got) != sha256.Size {
		return channels.Unauthorizedf("whatsapp: %s is not a hex SHA-256 digest", SignatureHeader)
	}
	mac := hmac.New(sha256.New, []byte(in.cfg.AppSecret))
	mac.Write(req.Body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return channels.Unauthorizedf("whatsapp: %s does not match", SignatureHeader)
	}
	return nil
}

// Parse answers a GET handshake with its challenge, and turns a POSTed
// notification into every message and status it carries. Changes of fields
// other than "messages" (account, template and quality updates) yield
// nothing.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("whatsapp: no request")
	}
	switch req.Method {
	case http.MethodGet:
		return parseHandshake(req)
	case http.MethodPost, "":
		return parseNotification(req, in.cfg.PhoneNumberID)
	default:
		return nil, channels.BadRequestf("whatsapp: method %s not supported", req.Method)
	}
}

func parseHandshake(req *channels.Request) (*channels.Parsed, error) {
	challenge := req.Query.Get("hub.challenge")
	if challenge == "" {
		return nil, channels.BadRequestf("whatsapp: hub.challenge is missing")
	}
	if len(challenge) > maxChallengeLen {
		return nil, channels.BadRequestf("whatsapp: hub.challenge longer than %d bytes", maxChallengeLen)
	}
	return &channels.Parsed{Reply: &channels.Reply{
		Status:      http.StatusOK,
		ContentType: "text/plain; charset=utf-8",
		Body:        []byte(challenge),
	}}, nil
}

// notification is a webhook POST body. Change values are decoded only for
// the "messages" field: other fields have other shapes.
type notification struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string          `json:"field"`
			Value json.RawMessage `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// messagesValue is the value of a "messages" change.
type messagesValue struct {
	Metadata struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []message         `json:"messages"`
	Statuses []json.RawMessage `json:"statuses"`
}

type message struct {
	From      string      `json:"from"`
	ID        string      `json:"id"`
	Timestamp unixSeconds `json:"timestamp"`
	Type      string      `json:"type"`
	Context   *struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context"`
	Text *struct {
		Body string `json:"body"`
	} `json:"text"`
	Image    *media `json:"image"`
	Document *media `json:"document"`
	Audio    *media `json:"audio"`
	Video    *media `json:"video"`
	Sticker  *media `json:"sticker"`
	Location *struct {
		Latitude  json.Number `json:"latitude"`
		Longitude json.Number `json:"longitude"`
		Name      string      `json:"name"`
		Address   string      `json:"address"`
	} `json:"location"`
	Button *struct {
		Text    string `json:"text"`
		Payload string `json:"payload"`
	} `json:"button"`
	Interactive *struct {
		Type        string  `json:"type"`
		ButtonReply *choice `json:"button_reply"`
		ListReply   *choice `json:"list_reply"`
	} `json:"interactive"`
	Reaction *struct {
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
	} `json:"reaction"`
	// Edit and Revoke are sent for WhatsApp Business app numbers
	// ("coexistence"): a user edited (type edit, the new content in
	// edit.message) or deleted (type revoke) an earlier message.
	Edit *struct {
		OriginalMessageID string   `json:"original_message_id"`
		Message           *message `json:"message"`
	} `json:"edit"`
	Revoke *struct {
		OriginalMessageID string `json:"original_message_id"`
	} `json:"revoke"`
}

type media struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type"`
	Filename string `json:"filename"`
	Caption  string `json:"caption"`
}

type choice struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type status struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"`
	Timestamp   unixSeconds `json:"timestamp"`
	RecipientID string      `json:"recipient_id"`
	Errors      []struct {
		Code    int64  `json:"code"`
		Title   string `json:"title"`
		Message string `json:"message"`
	} `json:"errors"`
}

// unixSeconds is a timestamp sent as a string of unix seconds (a bare
// number is accepted too). Absent, empty or out-of-range values decode to
// the zero time; anything else that is not an integer is an error.
type unixSeconds time.Time

// maxUnix is 9999-12-31T23:59:59Z, the last instant time.Time marshals to
// JSON.
const maxUnix = 253402300799

func (u *unixSeconds) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	if s == "" {
		return nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %s is not unix seconds", b)
	}
	if sec > 0 && sec <= maxUnix {
		*u = unixSeconds(time.Unix(sec, 0).UTC())
	}
	return nil
}

// parseNotification parses a POSTed notification. When phone is set,
// changes addressed to another phone number (metadata.phone_number_id)
// are left out and reported in Parsed.Ignored.
func parseNotification(req *channels.Request, phone string) (*channels.Parsed, error) {
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("whatsapp: %w", err)
	}
	if len(bytes.TrimSpace(req.Body)) == 0 {
		return nil, channels.BadRequestf("whatsapp: empty body")
	}
	var n notification
	if err := json.Unmarshal(req.Body, &n); err != nil {
		return nil, channels.BadRequestf("whatsapp: malformed notification: %v", err)
	}
	if n.Object != "whatsapp_business_account" {
		return nil, channels.BadRequestf("whatsapp: object %q, want whatsapp_business_account", n.Object)
	}
	raw := append(json.RawMessage(nil), req.Body...)
	out := &channels.Parsed{}
	for i, e := range n.Entry {
		for j, c := range e.Changes {
			if c.Field != "messages" {
				continue
			}
			where := fmt.Sprintf("entry[%d].changes[%d].value", i, j)
			if err := parseMessagesValue(out, c.Value, raw, where, phone); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// parseMessagesValue appends the messages and statuses of one "messages"
// change to out.
func parseMessagesValue(out *channels.Parsed, rawValue json.RawMessage, raw json.RawMessage, where, phone string) error {
	if len(rawValue) == 0 {
		return nil
	}
	var v messagesValue
	if err := json.Unmarshal(rawValue, &v); err != nil {
		return channels.BadRequestf("whatsapp: malformed %s: %v", where, err)
	}
	if got := v.Metadata.PhoneNumberID; phone != "" && got != "" && got != phone {
		out.Ignored = append(out.Ignored, fmt.Sprintf("whatsapp: %s is for phone number id %.32q, not this account's %q (%d messages, %d statuses left out)",
			where, got, phone, len(v.Messages), len(v.Statuses)))
		return nil
	}
	names := make(map[string]string, len(v.Contacts))
	for _, c := range v.Contacts {
		if c.WaID != "" {
			names[c.WaID] = c.Profile.Name
		}
	}
	for k := range v.Messages {
		m, err := fromMessage(&v.Messages[k], names, fmt.Sprintf("%s.messages[%d]", where, k))
		if err != nil {
			return err
		}
		m.Raw = raw
		out.Messages = append(out.Messages, m)
	}
	for k, rs := range v.Statuses {
		s, err := fromStatus(rs, fmt.Sprintf("%s.statuses[%d]", where, k))
		if err != nil {
			return err
		}
		out.Statuses = append(out.Statuses, s)
	}
	return nil
}

// fromMessage maps one inbound message. Types MIO does not render
// (contacts, order, system, unsupported, ...) still become a message, with
// empty text, so nothing the customer sent is dropped.
func fromMessage(m *message, names map[string]string, where string) (envelope.Message, error) {
	if m.ID == "" {
		return envelope.Message{}, channels.BadRequestf("whatsapp: %s.id is missing", where)
	}
	if m.From == "" {
		return envelope.Message{}, channels.BadRequestf("whatsapp: %s.from is missing", where)
	}
	out := envelope.Message{
		ChannelType:     envelope.ChannelWhatsApp,
		SourceMessageID: m.ID,
		Conversation:    envelope.Conversation{ID: m.From, Type: envelope.ConversationDM},
		Sender:          envelope.Sender{ID: m.From, DisplayName: names[m.From]},
		SentAt:          time.Time(m.Timestamp),
	}
	if m.Context != nil {
		out.ReplyToSourceID = m.Context.ID
	}
	switch {
	case m.Type == "edit" && m.Edit != nil:
		out.Edited, out.EditOf = true, envelope.NewEditRef(m.Edit.OriginalMessageID)
		if m.Edit.Message != nil {
			// The new content is an ordinary message body without its own
			// id or sender: map it with the outer ones.
			inner := *m.Edit.Message
			inner.ID, inner.From, inner.Edit, inner.Revoke = m.ID, m.From, nil, nil
			content, err := fromMessage(&inner, names, where+".edit.message")
			if err != nil {
				return envelope.Message{}, err
			}
			out.Text, out.Attachments = content.Text, content.Attachments
			if out.ReplyToSourceID == "" {
				out.ReplyToSourceID = content.ReplyToSourceID
			}
		}
		return out, nil
	case m.Type == "revoke" && m.Revoke != nil:
		out.Deleted, out.EditOf = true, envelope.NewEditRef(m.Revoke.OriginalMessageID)
		return out, nil
	}
	// The wamid is the message's id: what a later edit or revoke names.
	out.PlatformMessageID = m.ID
	addMedia := func(kind string, md *media) {
		if md == nil {
			return
		}
		out.Text = md.Caption
		if md.ID == "" {
			return
		}
		out.Attachments = append(out.Attachments, envelope.Attachment{
			Kind:     kind,
			Name:     md.Filename,
			MimeType: md.MimeType,
			Status:   envelope.AttachmentPending,
			Source:   &envelope.AttachmentSource{Ref: md.ID},
		})
	}
	switch m.Type {
	case "text":
		if m.Text != nil {
			out.Text = m.Text.Body
		}
	case "image":
		addMedia(envelope.KindImage, m.Image)
	case "document":
		addMedia(envelope.KindFile, m.Document)
	case "audio":
		addMedia(envelope.KindAudio, m.Audio)
	case "video":
		addMedia(envelope.KindVideo, m.Video)
	case "sticker":
		addMedia(envelope.KindSticker, m.Sticker)
	case "location":
		if l := m.Location; l != nil {
			out.Text = locationText(string(l.Latitude), string(l.Longitude), l.Name, l.Address)
		}
	case "button":
		// A template's quick-reply button: its payload names the action.
		if m.Button != nil {
			out.Text = m.Button.Text
			if m.Button.Payload != "" {
				interaction(&out, m.Button.Payload)
			}
		}
	case "interactive":
		// A reply button or list row of a message MIO sent: its id is the
		// action id and value (RichButton.CallbackData).
		if it := m.Interactive; it != nil {
			var c *choice
			switch {
			case it.ButtonReply != nil:
				c = it.ButtonReply
			case it.ListReply != nil:
				c = it.ListReply
			}
			if c != nil {
				out.Text = c.Title
				if c.ID != "" {
					interaction(&out, c.ID)
				}
			}
		}
	case "reaction":
		// An empty emoji is the user taking their reaction back (which
		// one, WhatsApp does not say).
		if r := m.Reaction; r != nil && r.MessageID != "" {
			out.Text = r.Emoji
			out.ReplyToSourceID = r.MessageID
			out.Kind = envelope.KindReaction
			out.Reaction = &envelope.Reaction{Emoji: r.Emoji, Added: r.Emoji != "", MessageID: r.MessageID}
		}
	}
	return out, nil
}

// interaction makes out an interaction on the message it replies to
// (context.id), with data's action id and value.
func interaction(out *envelope.Message, data string) {
	action, value := envelope.SplitCallbackData(data)
	out.Kind = envelope.KindInteraction
	out.Interaction = &envelope.Interaction{ActionID: action, Value: value, MessageID: out.ReplyToSourceID}
}

// locationText renders a shared location as
// "location: <lat>,<lng> <name> <address>", leaving out what is missing.
// Coordinates keep the digits Meta sent.
func locationText(lat, lng, name, address string) string {
	parts := []string{"location:"}
	if lat != "" || lng != "" {
		parts = append(parts, lat+","+lng)
	}
	for _, p := range []string{name, address} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// fromStatus maps one delivery status. The status value is passed through
// as Meta sends it (sent, delivered, read, failed, ...); the caller maps it
// onto provider states.
func fromStatus(raw json.RawMessage, where string) (channels.ProviderStatus, error) {
	var s status
	if err := json.Unmarshal(raw, &s); err != nil {
		return channels.ProviderStatus{}, channels.BadRequestf("whatsapp: malformed %s: %v", where, err)
	}
	if s.ID == "" {
		return channels.ProviderStatus{}, channels.BadRequestf("whatsapp: %s.id is missing", where)
	}
	if s.Status == "" {
		return channels.ProviderStatus{}, channels.BadRequestf("whatsapp: %s.status is missing", where)
	}
	out := channels.ProviderStatus{
		ProviderMessageID: s.ID,
		Status:            s.Status,
		Timestamp:         time.Time(s.Timestamp),
		RecipientID:       s.RecipientID,
		Raw:               raw,
	}
	if len(s.Errors) > 0 {
		e := s.Errors[0]
		text := e.Title
		switch {
		case text == "":
			text = e.Message
		case e.Message != "" && e.Message != e.Title:
			text += ": " + e.Message
		}
		if e.Code != 0 {
			text = strings.TrimSpace(fmt.Sprintf("%s (code %d)", text, e.Code))
		}
		out.Error = text
	}
	return out, nil
}
