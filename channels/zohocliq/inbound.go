package zohocliq

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Request authentication carriers.
const (
	HeaderSignature = "X-Cliq-Signature"
	HeaderToken     = "X-Mio-Token"
	QueryToken      = "token"
)

type inbound struct {
	cfg Config
}

var _ channels.Inbound = (*inbound)(nil)

// Verify authenticates the request according to the account's mode. Cliq
// sends no timestamp, so there is no replay window to check.
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("zoho_cliq: no request")
	}
	switch in.cfg.Mode {
	case ModeRSA:
		return in.verifySignature(req)
	default:
		return in.verifyToken(req)
	}
}

func (in *inbound) verifySignature(req *channels.Request) error {
	sigB64 := strings.TrimSpace(req.Header.Get(HeaderSignature))
	if sigB64 == "" {
		return channels.Unauthorizedf("zoho_cliq: missing %s header", HeaderSignature)
	}
	sig, err := decodeBase64(sigB64)
	if err != nil {
		return channels.Unauthorizedf("zoho_cliq: malformed signature")
	}
	digest := sha256.Sum256(req.Body)
	if err := rsa.VerifyPKCS1v15(in.cfg.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
		return channels.Unauthorizedf("zoho_cliq: invalid signature")
	}
	return nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64")
}

func (in *inbound) verifyToken(req *channels.Request) error {
	got := req.Header.Get(HeaderToken)
	if got == "" {
		got = req.Query.Get(QueryToken)
	}
	if got == "" {
		return channels.Unauthorizedf("zoho_cliq: missing %s header or %s query parameter", HeaderToken, QueryToken)
	}
	// Compare digests so that neither content nor length leaks by timing.
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(in.cfg.Token))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 {
		return channels.Unauthorizedf("zoho_cliq: invalid token")
	}
	return nil
}

// Parse maps one handler event to at most one message through the
// account's field table. Events of handlers that are not message-like
// return no messages.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("zoho_cliq: no request")
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("zoho_cliq: %w", err)
	}
	root, err := decodeBody(req.Body)
	if err != nil {
		return nil, err
	}
	t := table{paths: in.cfg.FieldPaths, root: root}

	event := t.str(FieldEvent)
	if event == "" {
		return nil, channels.BadRequestf("zoho_cliq: payload names no handler (paths %s)", strings.Join(in.cfg.FieldPaths[FieldEvent], ", "))
	}
	if !in.cfg.MessageHandlers[event] {
		return &channels.Parsed{}, nil
	}

	convID := t.str(FieldConversationID)
	if convID == "" {
		return nil, channels.BadRequestf("zoho_cliq: %s event has no chat id", event)
	}
	senderID := t.str(FieldSenderID)
	if senderID == "" {
		return nil, channels.BadRequestf("zoho_cliq: %s event has no user id", event)
	}

	convType := envelope.ConversationGroup
	if ct, ok := in.cfg.ConversationTypes[strings.ToLower(t.str(FieldConversationType))]; ok {
		convType = ct
	}
	text := t.str(FieldText)
	msgID := t.str(FieldMessageID)
	rawTime := t.str(FieldTime)

	msg := envelope.Message{
		ChannelType:     envelope.ChannelZohoCliq,
		SourceMessageID: sourceID(root, in.cfg.DedupField, convID, msgID, rawTime, text),
		Conversation: envelope.Conversation{
			ID:    convID,
			Type:  convType,
			Title: t.str(FieldConversationTitle),
		},
		ThreadID:        t.str(FieldThreadID),
		ReplyToSourceID: t.str(FieldReplyTo),
		Sender: envelope.Sender{
			ID:          senderID,
			DisplayName: t.str(FieldSenderName),
			IsBot:       strings.EqualFold(t.str(FieldSenderIsBot), "true"),
		},
		Text:        text,
		Attachments: t.attachments(),
		SentAt:      parseTime(rawTime),
		Raw:         json.RawMessage(bytes.Clone(req.Body)),
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

// decodeBody decodes one JSON object, keeping numbers as written so that
// large numeric ids survive.
func decodeBody(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, channels.BadRequestf("zoho_cliq: malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, channels.BadRequestf("zoho_cliq: trailing data after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, channels.BadRequestf("zoho_cliq: body is not a JSON object")
	}
	return obj, nil
}

// sourceID is the dedup key: the value at the configured path (the message
// id when none is configured), else the sha256 hex of chat id, message id
// (or time) and text.
func sourceID(root any, dedupField, convID, msgID, rawTime, text string) string {
	if dedupField == "" {
		if msgID != "" {
			return msgID
		}
	} else if id := resolve(root, dedupField); id != "" {
		return id
	}
	idOrTime := msgID
	if idOrTime == "" {
		idOrTime = rawTime
	}
	sum := sha256.Sum256([]byte(convID + "\x00" + idOrTime + "\x00" + text))
	return hex.EncodeToString(sum[:])
}

// table reads mapping fields from one decoded payload.
type table struct {
	paths map[string][]string
	root  any
}

// str returns the first non-empty value among the field's paths.
func (t table) str(field string) string {
	return firstOf(t.root, t.paths[field])
}

func firstOf(root any, paths []string) string {
	for _, p := range paths {
		if v := resolve(root, p); v != "" {
			return v
		}
	}
	return ""
}

// attachments reads the first attachment path that yields file objects.
func (t table) attachments() []envelope.Attachment {
	for _, p := range t.paths[FieldAttachments] {
		var items []any
		switch v := lookup(t.root, p).(type) {
		case []any:
			items = v
		case map[string]any:
			items = []any{v}
		}
		var out []envelope.Attachment
		for _, item := range items {
			if a, ok := t.attachment(item); ok {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func (t table) attachment(item any) (envelope.Attachment, bool) {
	if _, ok := item.(map[string]any); !ok {
		return envelope.Attachment{}, false
	}
	u := firstOf(item, t.paths[FieldAttachmentURL])
	if u == "" {
		return envelope.Attachment{}, false
	}
	a := envelope.Attachment{
		Kind:   envelope.KindFile,
		Name:   firstOf(item, t.paths[FieldAttachmentName]),
		Status: envelope.AttachmentPending,
		Source: &envelope.AttachmentSource{URL: u},
	}
	typ := strings.ToLower(firstOf(item, t.paths[FieldAttachmentType]))
	if strings.Contains(typ, "/") {
		a.MimeType = typ
		a.Kind = channels.AttachmentKind(typ)
	} else {
		switch typ {
		case envelope.KindImage, envelope.KindVideo, envelope.KindAudio, envelope.KindSticker:
			a.Kind = typ
		}
	}
	if n, err := strconv.ParseInt(firstOf(item, t.paths[FieldAttachmentSize]), 10, 64); err == nil && n > 0 {
		a.Size = n
	}
	return a, true
}

// resolve evaluates a mapping path to a scalar string. "a+b" joins the
// non-empty values of a and b with a space.
func resolve(root any, path string) string {
	if !strings.Contains(path, "+") {
		s, _ := scalar(lookup(root, path))
		return s
	}
	var parts []string
	for _, p := range strings.Split(path, "+") {
		if s, ok := scalar(lookup(root, p)); ok && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// lookup walks a dot-separated path through objects and arrays.
func lookup(root any, path string) any {
	cur := root
	for _, seg := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

// scalar renders strings, numbers and booleans; objects, arrays and null
// are not scalars.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	default:
		return "", false
	}
}

// parseTime reads unix milliseconds (seconds when the value is too small
// to be milliseconds) or RFC 3339. Anything else gives the zero time.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f <= 0 || f >= 1e14 {
			return time.Time{}
		}
		if f < 1e11 {
			f *= 1000
		}
		return time.UnixMilli(int64(f)).UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}
